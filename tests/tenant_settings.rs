//! The tenant's config and active policy are cached per server and checked against the
//! tenant's settings version in every context call: a change made through another server on
//! the same database, or by SQL, is seen by the very next call.
#![allow(clippy::unwrap_used)]

mod common;

use common::{spawn, spawn_replica, TestApp};
use mnemo::RuntimeConfig;
use serde_json::{json, Value};

const BUNDLE: &str = "version: 1
rules:
  - id: no-secrets-for-externals
    when: {memory_has_any_label: [secret], caller_type: external}
    action: deny
";

/// Two facts of subject `u` in tenant acme, the Globex one labelled secret.
async fn facts(app: &TestApp) {
    for text in ["My name is Kari Nordmann.", "I work at Globex."] {
        app.post_as("acme", "/v1/episodes", &common::episode("u", text)).await;
    }
    app.post_as("acme", "/v1/memories/compile", &json!({"subject_id": "u"})).await;
    for m in app.memories_as("acme", "u").await {
        if m["content"].as_str().unwrap().contains("Globex") {
            let path = format!("/v1/memories/{}/labels", m["id"].as_str().unwrap());
            let (s, b) = app.patch_as("acme", &path, &json!({"sensitivity_labels": ["secret"]})).await;
            assert_eq!(s, 200, "{b}");
        }
    }
}

/// A context call of an external caller; returns (status, assembled context).
async fn context(app: &TestApp, tenant: &str, identified: bool) -> (u16, String) {
    let mut body = json!({"subject_id": "u", "task": "Where does Kari work?"});
    if identified {
        body["caller_type"] = json!("external");
        body["caller_id"] = json!("agent-7");
    }
    let (s, b) = app.post_as(tenant, "/v1/context", &body).await;
    (s, b["assembled_context"].as_str().unwrap_or_default().to_string())
}

async fn patch_config(app: &TestApp, config: Value) {
    let r = app.client.patch(app.url("/admin/tenants/acme/config")).json(&config);
    let (s, b) = common::split(r.send().await.unwrap()).await;
    assert_eq!(s, 200, "{b}");
}

#[tokio::test]
async fn changes_through_another_server_or_sql_reach_the_next_call() {
    let app = spawn().await;
    let other = spawn_replica(&app, RuntimeConfig::default()).await;
    facts(&app).await;
    // Both servers cache acme's settings (no config, no policy).
    for server in [&app, &other] {
        let (s, text) = context(server, "acme", true).await;
        assert_eq!(s, 200);
        assert!(text.contains("Globex"), "{text}");
    }

    // Enforce mode, then a bundle activated, both through the other server.
    patch_config(&other, json!({"policy_mode": "enforce"})).await;
    let (s, text) = context(&app, "acme", true).await;
    assert!(s == 200 && text.contains("Globex"), "no bundle is active yet: {text}");
    let (s, b) = other.post_as("acme", "/admin/policy/bundles", &json!({"bundle": BUNDLE})).await;
    assert_eq!(s, 201, "{b}");
    let (s, b) = other.post_as("acme", "/admin/policy/activate", &json!({"bundle_hash": b["bundle_hash"]})).await;
    assert_eq!(s, 200, "{b}");
    let (s, text) = context(&app, "acme", true).await;
    assert_eq!(s, 200);
    assert!(!text.contains("Globex") && text.contains("Kari"), "the activation is seen at once: {text}");

    // Back to log_only through the other server: the secret is shown again.
    patch_config(&other, json!({"policy_mode": "log_only"})).await;
    let (_, text) = context(&app, "acme", true).await;
    assert!(text.contains("Globex"), "the config change is seen at once: {text}");

    // A direct SQL update (no server involved) bumps the version too.
    sqlx::query("UPDATE tenant_configs SET config = '{\"require_caller_identity\": true}' WHERE tenant_id = 'acme'")
        .execute(&app.pool)
        .await
        .unwrap();
    for server in [&app, &other] {
        assert_eq!(context(server, "acme", false).await.0, 401);
        assert_eq!(context(server, "acme", true).await.0, 200);
        // Another tenant's settings are its own.
        assert_eq!(context(server, "globex", false).await.0, 200);
    }
    sqlx::query("DELETE FROM tenant_configs WHERE tenant_id = 'acme'").execute(&app.pool).await.unwrap();
    assert_eq!(context(&app, "acme", false).await.0, 200, "a deleted config is seen at once");
}

/// `mnemo_enter_tenant` as the server's role: the tenant's own version, under row-level security.
async fn version(app: &TestApp, tenant: &str) -> i64 {
    let (_tx, v) = mnemo::db::scope::begin_versioned(&app.app_pool, tenant).await.unwrap();
    v
}

#[tokio::test]
async fn every_settings_change_bumps_only_its_tenants_version() {
    let app = spawn().await;
    assert_eq!((version(&app, "acme").await, version(&app, "globex").await), (0, 0));
    patch_config(&app, json!({"receipts": "always"})).await;
    let v1 = version(&app, "acme").await;
    assert!(v1 > 0);
    assert_eq!(version(&app, "globex").await, 0);
    let (s, b) = app.post_as("acme", "/admin/policy/bundles", &json!({"bundle": BUNDLE})).await;
    assert_eq!(s, 201, "{b}");
    let v2 = version(&app, "acme").await;
    assert!(v2 > v1);
    let (s, _) = app.post_as("acme", "/admin/policy/activate", &json!({"bundle_hash": b["bundle_hash"]})).await;
    assert_eq!(s, 200);
    let v3 = version(&app, "acme").await;
    assert!(v3 > v2);
    // Uploading the same bundle again changes nothing, so the version stays.
    app.post_as("acme", "/admin/policy/bundles", &json!({"bundle": BUNDLE})).await;
    assert_eq!(version(&app, "acme").await, v3);

    // The server's role sees no version row of another tenant, nor any without a tenant.
    let mut tx = mnemo::db::scope::begin(&app.app_pool, "globex").await.unwrap();
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM tenant_versions").fetch_one(&mut *tx).await.unwrap();
    assert_eq!(n, 0);
    drop(tx);
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM tenant_versions").fetch_one(&app.app_pool).await.unwrap();
    assert_eq!(n, 0);
    // Nor can it write one for another tenant.
    let mut tx = mnemo::db::scope::begin(&app.app_pool, "globex").await.unwrap();
    let err = sqlx::query("INSERT INTO tenant_versions (tenant_id, version) VALUES ('acme', 1)")
        .execute(&mut *tx)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("row-level security"), "{err}");
}
