//! Tenancy: row-level security as a second wall behind the application's tenant filters.
#![allow(clippy::unwrap_used)]

use crate::common::{spawn, TestApp};
use serde_json::json;

/// Tables of the schema with a tenant_id column, from the catalog, and those without one.
async fn tables(app: &TestApp) -> (Vec<String>, Vec<String>) {
    let rows: Vec<(String, bool)> = sqlx::query_as(
        "SELECT t.table_name::text, EXISTS (SELECT 1 FROM information_schema.columns c \
             WHERE c.table_schema = t.table_schema AND c.table_name = t.table_name AND c.column_name = 'tenant_id') \
         FROM information_schema.tables t WHERE t.table_schema = current_schema() AND t.table_type = 'BASE TABLE' \
         ORDER BY 1",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let tenant = rows.iter().filter(|r| r.1).map(|r| r.0.clone()).collect();
    let other = rows.iter().filter(|r| !r.1).map(|r| r.0.clone()).collect();
    (tenant, other)
}

async fn populate(app: &TestApp, tenant: &str) {
    for text in ["My name is Kari and I live in Bergen.", "I work at Globex."] {
        app.post_as(tenant, "/v1/episodes", &crate::common::episode("user:1", text)).await;
    }
    app.post_as(tenant, "/v1/memories/compile", &json!({"subject_id": "user:1"})).await;
    app.post_as(tenant, "/v1/memories/compile", &json!({"subject_id": "user:1", "async": true})).await;
    let ctx = json!({"subject_id": "user:1", "task": "Where does the user live?", "emit_receipt": true});
    let (s, b) = app.post_as(tenant, "/v1/context", &ctx).await;
    assert_eq!(s, 200, "{b}");
    app.post_as(tenant, "/v1/resolutions", &json!({"subject_id": "user:1", "session_id": "s1"})).await;
    app.get_as(tenant, "/v1/subjects/user:1/health").await;
    app.post_as(tenant, "/v1/episodes", &crate::common::episode("user:2", "I live in Oslo.")).await;
    let r = app.client.delete(app.url("/v1/subjects/user:2")).header("X-Tenant-ID", tenant).send().await.unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn the_app_role_without_a_tenant_sees_no_row_of_any_table() {
    // Webhooks on (towards a closed port, retried rarely), so the outbox holds rows too.
    let webhooks = mnemo::services::webhooks::WebhookConfig {
        url: Some("http://127.0.0.1:9/closed".into()),
        backoff_base: std::time::Duration::from_secs(600),
        ..Default::default()
    };
    let app = crate::common::spawn_with(mnemo::RuntimeConfig { webhooks, ..Default::default() }).await;
    populate(&app, "alpha").await;
    populate(&app, "beta").await;
    let (tenant_tables, other) = tables(&app).await;
    // Only the bookkeeping of migrations and function files may lack a tenant_id; any new table
    // must carry one. The application role reads neither.
    assert_eq!(other, ["_sqlx_migrations", "mnemo_sql_functions"], "tables without tenant_id");
    assert!(tenant_tables.len() >= 14, "{tenant_tables:?}");

    let mut conn = app.app_pool.acquire().await.unwrap();
    // mnemo_app itself, or (through a pooler, MNEMO_TEST_APP_DATABASE_URL) a login that is an
    // unprivileged member of it.
    let (role, member, privileged): (String, bool, bool) = sqlx::query_as(
        "SELECT current_user::text, pg_has_role(current_user, 'mnemo_app', 'USAGE'), rolsuper OR rolbypassrls \
         FROM pg_roles WHERE rolname = current_user",
    )
    .fetch_one(&mut *conn)
    .await
    .unwrap();
    assert!(member && !privileged, "the server runs as {role}");
    if std::env::var("MNEMO_TEST_APP_DATABASE_URL").is_err() {
        assert_eq!(role, "mnemo_app");
    }
    let mut populated = 0;
    for t in &tenant_tables {
        let rls: bool = sqlx::query_scalar("SELECT relrowsecurity FROM pg_class WHERE oid = $1::regclass")
            .bind(t)
            .fetch_one(&app.pool)
            .await
            .unwrap();
        assert!(rls, "row-level security is off on {t}");
        let as_owner: i64 =
            sqlx::query_scalar(&format!("SELECT count(*) FROM \"{t}\"")).fetch_one(&app.pool).await.unwrap();
        populated += usize::from(as_owner > 0);
        let as_app: i64 =
            sqlx::query_scalar(&format!("SELECT count(*) FROM \"{t}\"")).fetch_one(&mut *conn).await.unwrap();
        assert_eq!(as_app, 0, "{t}: the app role saw rows without naming a tenant");
    }
    // The check means something only if the tables really hold rows.
    assert!(populated >= 10, "only {populated} tables were populated");
    assert!(app.count("webhook_events").await > 0, "the outbox was populated too");
}

#[tokio::test]
async fn a_tenant_transaction_sees_and_writes_only_its_tenant() {
    let app = spawn().await;
    populate(&app, "alpha").await;
    populate(&app, "beta").await;
    let (tenant_tables, _) = tables(&app).await;
    let mut tx = mnemo::db::scope::begin(&app.app_pool, "alpha").await.unwrap();
    for t in &tenant_tables {
        let foreign: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM \"{t}\" WHERE tenant_id <> 'alpha'"))
            .fetch_one(&mut *tx)
            .await
            .unwrap();
        assert_eq!(foreign, 0, "{t}");
    }
    let own: i64 = sqlx::query_scalar("SELECT count(*) FROM episodes").fetch_one(&mut *tx).await.unwrap();
    assert_eq!(own, 2);
    // Writing a row of another tenant is refused by the policy's WITH CHECK.
    let err = sqlx::query("INSERT INTO tenants (tenant_id) VALUES ('gamma')").execute(&mut *tx).await.unwrap_err();
    assert!(err.to_string().contains("row-level security"), "{err}");
    drop(tx);
    // An update that forgets its tenant filter cannot touch the other tenant's rows.
    let mut tx = mnemo::db::scope::begin(&app.app_pool, "alpha").await.unwrap();
    let n = sqlx::query("UPDATE memories SET confidence = 0.5").execute(&mut *tx).await.unwrap().rows_affected();
    tx.commit().await.unwrap();
    assert!(n > 0);
    let untouched: i64 =
        sqlx::query_scalar("SELECT count(*) FROM memories WHERE tenant_id = 'beta' AND confidence = 0.5")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(untouched, 0);
}

/// (status, error code, error message): what a client can observe of a refusal.
fn observable(r: &(u16, serde_json::Value)) -> (u16, serde_json::Value, serde_json::Value) {
    (r.0, r.1["error"]["code"].clone(), r.1["error"]["message"].clone())
}

/// Every endpoint, called as tenant "mallory" with tenant "victim"'s ids and subjects, answers
/// exactly as it does for ids that never existed: no data, no hint of existence.
#[tokio::test]
async fn one_tenant_cannot_read_change_or_detect_another() {
    let app = spawn().await;
    let key = json!("shared-idem-key");
    let mut ep = crate::common::episode("user:v", "My name is Vera and I live in Trondheim.");
    ep["idempotency_key"] = key.clone();
    app.post_as("victim", "/v1/episodes", &ep).await;
    app.post_as("victim", "/v1/memories/compile", &json!({"subject_id": "user:v"})).await;
    let (_, job) = app.post_as("victim", "/v1/memories/compile", &json!({"subject_id": "user:v", "async": true})).await;
    let ctx = json!({"subject_id": "user:v", "task": "Where does Vera live?", "emit_receipt": true});
    let (_, bundle) = app.post_as("victim", "/v1/context", &ctx).await;
    let session = json!({"subject_id": "user:v", "session_id": "s1", "status": "resolved"});
    app.post_as("victim", "/v1/resolutions", &session).await;
    let receipt = bundle["receipt_id"].as_str().unwrap().to_string();
    let memory = app.memories_as("victim", "user:v").await[0]["id"].as_str().unwrap().to_string();
    app.post_as("victim", "/v1/episodes", &crate::common::episode("user:gone", "I use Rust.")).await;
    let r = app.client.delete(app.url("/v1/subjects/user:gone")).header("X-Tenant-ID", "victim").send().await.unwrap();
    let erasure = crate::common::split(r).await.1["erasure_id"].as_str().unwrap().to_string();
    let job = job["job_id"].as_str().unwrap().to_string();

    let m = "mallory";
    let never_receipt = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
    let never_uuid = "0190d7a2-0000-7000-8000-000000000000";
    let pairs = [
        (format!("/v1/receipts/{receipt}"), format!("/v1/receipts/{never_receipt}")),
        (format!("/v1/receipts/{receipt}/verify"), format!("/v1/receipts/{never_receipt}/verify")),
        (format!("/v1/memories/compile/{job}"), "/v1/memories/compile/ffffffffffffffff".to_string()),
        (format!("/v1/erasures/{erasure}"), format!("/v1/erasures/{never_receipt}")),
    ];
    for (theirs, never) in &pairs {
        let a = app.get_as(m, theirs).await;
        let b = app.get_as(m, never).await;
        assert_eq!(a.0, 404, "{theirs}: {}", a.1);
        assert_eq!(observable(&a), observable(&b), "{theirs}");
    }
    let replay = |id: String| {
        let app = &app;
        async move {
            let r = app.client.post(app.url(&format!("/v1/receipts/{id}/replay"))).header("X-Tenant-ID", m);
            crate::common::split(r.send().await.unwrap()).await
        }
    };
    assert_eq!(observable(&replay(receipt.clone()).await), observable(&replay(never_receipt.to_string()).await));
    let labels = json!({"sensitivity_labels": ["pii"]});
    let a = app.patch_as(m, &format!("/v1/memories/{memory}/labels"), &labels).await;
    let b = app.patch_as(m, &format!("/v1/memories/{never_uuid}/labels"), &labels).await;
    assert_eq!((a.0, observable(&a)), (404, observable(&b)));
    let promote = json!({"labels": ["pii.location"]});
    let a = app.post_as(m, &format!("/admin/memories/{memory}/promote-labels"), &promote).await;
    let b = app.post_as(m, &format!("/admin/memories/{never_uuid}/promote-labels"), &promote).await;
    assert_eq!((a.0, observable(&a)), (404, observable(&b)));

    // Reads by subject are empty; the tenant's listing does not name the subject.
    let (_, t) = app.get_as(m, "/v1/timeline?subject_id=user:v").await;
    assert_eq!((t["episodes"].clone(), t["memories"].clone()), (json!([]), json!([])));
    let (_, s) = app.get_as(m, "/v1/memories/search?subject_id=user:v&q=Trondheim").await;
    assert_eq!(s["memories"], json!([]));
    let (_, s) = app.get_as(m, "/v1/memories/search?subject_id=user:v&q=Trondheim&semantic=true").await;
    assert_eq!(s["memories"], json!([]));
    let (_, l) = app.get_as(m, "/v1/subjects").await;
    assert_eq!(l["total"], 0);
    let (_, l) = app.get_as(m, "/v1/receipts?subject_id=user:v").await;
    assert_eq!(l["receipts"], json!([]));
    let (_, c) = app.post_as(m, "/v1/context", &ctx).await;
    assert!(!c["assembled_context"].as_str().unwrap().contains("Trondheim"), "{c}");
    let (_, q) = app.get_as(m, "/admin/memories/with-suggested-labels?subject_id=user:v").await;
    assert_eq!(q["total"], 0);
    let (_, r) = app.get_as(m, "/v1/resolutions?subject_id=user:v").await;
    assert_eq!(r, json!([]));
    let (_, h) = app.get_as(m, "/v1/subjects/user:v/health").await;
    assert_eq!(h["factors"], json!([]), "{h}");
    let (_, sla) = app.get_as(m, "/v1/subjects/user:v/sla").await;
    assert_eq!(sla["total_sessions"], 0);
    let (_, brief) = app.post_as(m, "/v1/handoff", &json!({"subject_id": "user:v", "session_id": "s1"})).await;
    assert!(!brief.to_string().contains("Trondheim") && brief["key_facts"] == json!([]), "{brief}");
    let (_, chain) = app.get_as(m, "/v1/receipts/chain/verify").await;
    assert_eq!(chain["checked"], 1, "mallory's chain holds only its own receipt: {chain}");

    // Writes with the victim's subject or idempotency key touch only mallory's rows.
    let (s, own) = app.post_as(m, "/v1/episodes", &ep).await;
    assert_eq!(s, 201, "the key is new for mallory: {own}");
    let (_, compiled) = app.post_as(m, "/v1/memories/compile", &json!({"subject_id": "user:v"})).await;
    assert!(compiled["memories_created"].as_u64().unwrap() >= 1);
    let r = app.client.delete(app.url("/v1/subjects/user:v")).header("X-Tenant-ID", m).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(app.memories_as("victim", "user:v").await.len(), 3, "the victim's memories survive");
    let (_, t) = app.get_as("victim", "/v1/timeline?subject_id=user:v").await;
    assert_eq!(t["episodes"].as_array().unwrap().len(), 1);
}

/// The full-text lane functions run as their owner (so the GIN indexes apply) and must still
/// return only the current tenant's rows, and nothing without a tenant.
#[tokio::test]
async fn lexical_lane_functions_stay_inside_the_tenant() {
    let app = spawn().await;
    populate(&app, "alpha").await;
    populate(&app, "beta").await;
    let count = |tenant: Option<&'static str>, f: &'static str| {
        let app = &app;
        async move {
            let mut tx = match tenant {
                Some(t) => mnemo::db::scope::begin(&app.app_pool, t).await.unwrap(),
                None => app.app_pool.begin().await.unwrap(),
            };
            let sql = format!("SELECT count(*) FROM {f}('user:1', now(), ARRAY['globex', 'bergen'])");
            let n: i64 = sqlx::query_scalar(&sql).fetch_one(&mut *tx).await.unwrap();
            let ids: Vec<uuid::Uuid> =
                sqlx::query_scalar(&format!("SELECT id FROM {f}('user:1', now(), ARRAY['globex'])"))
                    .fetch_all(&mut *tx)
                    .await
                    .unwrap();
            (n, ids)
        }
    };
    for (f, table) in [("mnemo_memory_hits", "memories"), ("mnemo_episode_hits", "episodes")] {
        let (alpha, ids) = count(Some("alpha"), f).await;
        assert!(alpha > 0, "{f} found nothing for alpha");
        let tenants: Vec<String> =
            sqlx::query_scalar(&format!("SELECT DISTINCT tenant_id FROM {table} WHERE id = ANY($1)"))
                .bind(&ids)
                .fetch_all(&app.pool)
                .await
                .unwrap();
        assert_eq!(tenants, ["alpha"], "{f} leaked rows of another tenant");
        assert_eq!(count(None, f).await.0, 0, "{f} returned rows without a tenant");
    }

    // The citing memories' lookup, given every episode id of both tenants, answers only for the caller's.
    let all: Vec<uuid::Uuid> = sqlx::query_scalar("SELECT id FROM episodes").fetch_all(&app.pool).await.unwrap();
    let backing = |tenant: Option<&'static str>| {
        let (app, all) = (&app, &all);
        async move {
            let mut tx = match tenant {
                Some(t) => mnemo::db::scope::begin(&app.app_pool, t).await.unwrap(),
                None => app.app_pool.begin().await.unwrap(),
            };
            let ids: Vec<uuid::Uuid> = sqlx::query_scalar(
                "SELECT DISTINCT s FROM mnemo_episode_citers('user:1', now(), $1) c, unnest(c.source_episode_ids) s",
            )
            .bind(all)
            .fetch_all(&mut *tx)
            .await
            .unwrap();
            ids
        }
    };
    let ids = backing(Some("alpha")).await;
    assert!(!ids.is_empty(), "alpha's episodes back its memories");
    let tenants: Vec<String> = sqlx::query_scalar("SELECT DISTINCT tenant_id FROM episodes WHERE id = ANY($1)")
        .bind(&ids)
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert_eq!(tenants, ["alpha"], "mnemo_episode_citers leaked another tenant's episodes");
    assert!(backing(None).await.is_empty(), "mnemo_episode_citers answered without a tenant");
}

#[tokio::test]
async fn mcp_tools_act_only_within_the_keys_tenant() {
    use crate::common::mcp;
    use mnemo::mcp::{McpConfig, Toolset};
    let config = |toolset| mnemo::RuntimeConfig {
        mcp: McpConfig { toolset, allow_forget: true, ..McpConfig::default() },
        ..Default::default()
    };
    let app = crate::common::spawn_with(config(Toolset::Mnemo)).await;
    let statewave = crate::common::spawn_replica(&app, config(Toolset::Statewave)).await;
    let alpha = mnemo::services::keys::create(&app.pool, "alpha", mnemo::services::keys::Scope::Tenant, None)
        .await
        .unwrap()
        .secret;
    let beta = mnemo::services::keys::create(&app.pool, "beta", mnemo::services::keys::Scope::Tenant, None)
        .await
        .unwrap()
        .secret;
    let (a, b) = (Some(alpha.as_str()), Some(beta.as_str()));
    let said = json!({"subject_id": "user:1", "text": "My name is Kari and I live in Bergen.", "compile": true});
    mcp::ok(&app, a, "remember", said).await;
    let found = mcp::ok(&app, a, "search_memories", json!({"subject_id": "user:1", "query": "Bergen"})).await;
    let id = found["memories"][0]["id"].as_str().unwrap().to_string();

    // Another tenant's key finds, recalls and forgets nothing of it, through either tool set.
    let search = mcp::ok(&app, b, "search_memories", json!({"subject_id": "user:1", "query": "Bergen"})).await;
    assert_eq!(search["memories"], json!([]));
    let tl = mcp::ok(&app, b, "timeline", json!({"subject_id": "user:1"})).await;
    assert_eq!((tl["episodes"].clone(), tl["memories"].clone()), (json!([]), json!([])));
    let recall = mcp::ok(&app, b, "recall", json!({"subject_id": "user:1", "task": "Where does Kari live?"})).await;
    assert!(!recall["assembled_context"].as_str().unwrap().contains("Bergen"), "{recall}");
    let msg = mcp::refused(&app, b, "forget", json!({"subject_id": "user:1", "memory_id": id})).await;
    assert_eq!(msg, "memory not found");
    let ctx = mcp::ok(&statewave, b, "statewave_get_context", json!({"subject_id": "user:1", "task": "Where?"})).await;
    assert!(!ctx["assembled_context"].as_str().unwrap().contains("Bergen"), "{ctx}");
    let tl = mcp::ok(&statewave, b, "statewave_get_timeline", json!({"subject_id": "user:1"})).await;
    assert_eq!((tl["episodes"].clone(), tl["memories"].clone()), (json!([]), json!([])));
    let (s, _, body) =
        mcp::post_with(&app, b, &mcp::request(1, "tools/list", json!({})), &[("X-Tenant-ID", "alpha")]).await;
    assert_eq!((s, body["error"]["code"].clone()), (403, json!("tenant_mismatch")));

    // Every row stayed in alpha; its memory is still active.
    let rows: Vec<(String, i64)> =
        sqlx::query_as("SELECT tenant_id, count(*) FROM episodes GROUP BY tenant_id ORDER BY 1")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(rows, vec![("alpha".to_string(), 1)]);
    let still =
        mcp::ok(&statewave, a, "statewave_search_memories", json!({"subject_id": "user:1", "q": "Bergen"})).await;
    assert!(still["memories"].as_array().unwrap().iter().any(|m| m["id"] == id.as_str() && m["status"] == "active"));
}
