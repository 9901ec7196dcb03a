//! Sensitivity-label policy bundles: upload, activation, evaluation in context assembly
//! (log_only records, enforce drops and redacts), receipts and replay; and the per-server cache
//! of a tenant's config and active policy, checked against the tenant's settings version in
//! every context call (a change through another server or by SQL is seen by the next call).
#![allow(clippy::unwrap_used)]

use crate::common::{spawn, spawn_replica, TestApp};
use mnemo::RuntimeConfig;
use serde_json::{json, Value};

const BUNDLE: &str = "version: 1
metadata: {owner: security}
rules:
  - id: no-secrets-for-externals
    when: {memory_has_any_label: [secret], caller_type: external}
    action: deny
  - id: mask-pii
    when: {memory_has_any_label: [pii]}
    action: redact
  - id: never-fires
    when: {caller_id: nobody}
    action: deny
";

async fn setup(app: &TestApp) -> String {
    for text in ["My name is Kari Nordmann.", "I live in Bergen.", "I work at Globex."] {
        app.post_as("acme", "/v1/episodes", &crate::common::episode("u", text)).await;
    }
    app.post_as("acme", "/v1/memories/compile", &json!({"subject_id": "u"})).await;
    for m in app.memories_as("acme", "u").await {
        let content = m["content"].as_str().unwrap().to_string();
        let label = if content.contains("Bergen") {
            "PII"
        } else if content.contains("Globex") {
            "secret"
        } else {
            continue;
        };
        let (s, _) = app
            .patch_as(
                "acme",
                &format!("/v1/memories/{}/labels", m["id"].as_str().unwrap()),
                &json!({"sensitivity_labels": [label]}),
            )
            .await;
        assert_eq!(s, 200);
    }
    let (s, b) = app.post_as("acme", "/admin/policy/bundles", &json!({"bundle": BUNDLE})).await;
    assert_eq!(s, 201, "{b}");
    let hash = b["bundle_hash"].as_str().unwrap().to_string();
    let (s, b) = app.post_as("acme", "/admin/policy/activate", &json!({"bundle_hash": hash})).await;
    assert_eq!(s, 200, "{b}");
    hash
}

async fn context(app: &TestApp, caller_type: &str) -> Value {
    let body = json!({"subject_id": "u", "task": "Tell me about the user's name, home and work.",
                      "caller_type": caller_type, "caller_id": "agent-7", "emit_receipt": true});
    let (s, b) = app.post_as("acme", "/v1/context", &body).await;
    assert_eq!(s, 200, "{b}");
    b
}

#[tokio::test]
async fn bad_bundles_are_refused_and_good_ones_listed() {
    let app = spawn().await;
    for bad in ["version: 2\nrules: []", "rules: [", "version: 1\nrules: [{id: a, when: {}, action: deny}]"] {
        let (s, b) = app.post_as("acme", "/admin/policy/bundles", &json!({"bundle": bad})).await;
        assert_eq!((s, b["error"]["code"].clone()), (400, json!("policy.invalid_bundle")), "{bad}");
    }
    let (s, active) = app.get_as("acme", "/admin/policy/active").await;
    assert_eq!((s, active), (200, Value::Null));
    let hash = setup(&app).await;
    let (_, list) = app.get_as("acme", "/admin/policy/bundles").await;
    assert_eq!(list["bundles"][0]["bundle_hash"], hash.as_str());
    assert_eq!(list["bundles"][0]["active"], true);
    let (_, got) = app.get_as("acme", &format!("/admin/policy/bundles/{hash}")).await;
    assert_eq!(got["content"], BUNDLE);
    // Another tenant neither sees the bundle nor can activate it.
    let (s, _) = app.get_as("globex", &format!("/admin/policy/bundles/{hash}")).await;
    assert_eq!(s, 404);
    let (s, _) = app.post_as("globex", "/admin/policy/activate", &json!({"bundle_hash": hash})).await;
    assert_eq!(s, 404);
    // The same bundle in another form has the same hash.
    let as_json = json!({"rules": [{"action": "deny", "id": "no-secrets-for-externals",
        "when": {"caller_type": "external", "memory_has_any_label": ["secret"]}},
        {"id": "mask-pii", "when": {"memory_has_any_label": ["pii"]}, "action": "redact"},
        {"id": "never-fires", "when": {"caller_id": "nobody"}, "action": "deny"}],
        "version": 1, "metadata": {"owner": "security"}});
    let (_, b) = app.post_as("acme", "/admin/policy/bundles", &json!({"bundle": as_json})).await;
    assert_eq!(b["bundle_hash"], hash.as_str());
}

#[tokio::test]
async fn log_only_records_and_enforce_drops_and_redacts() {
    let app = spawn().await;
    let hash = setup(&app).await;
    // log_only (the default): everything is shown, the decisions are recorded.
    let b = context(&app, "external").await;
    let text = b["assembled_context"].as_str().unwrap();
    assert!(text.contains("Bergen") && text.contains("Globex"), "{text}");
    let (_, receipt) = app.get_as("acme", &format!("/v1/receipts/{}", b["receipt_id"].as_str().unwrap())).await;
    let policy = &receipt["policy"];
    assert_eq!(policy["policy_bundle_hash"], hash.as_str());
    assert_eq!(policy["mode"], "log_only");
    let fired: std::collections::BTreeSet<&str> =
        policy["filters_applied"].as_array().unwrap().iter().map(|f| f["rule_id"].as_str().unwrap()).collect();
    assert_eq!(fired.into_iter().collect::<Vec<_>>(), ["mask-pii", "no-secrets-for-externals"]);
    assert_eq!(policy["filters_skipped"][0]["rule_id"], "never-fires");
    assert_eq!(receipt["policy_snapshot"]["bundle_yaml"], BUNDLE);

    // enforce: the external caller loses the secret and sees the PII masked.
    let r = app.client.patch(app.url("/admin/tenants/acme/config")).json(&json!({"policy_mode": "enforce"}));
    assert_eq!(r.send().await.unwrap().status(), 200);
    let b = context(&app, "external").await;
    let text = b["assembled_context"].as_str().unwrap();
    assert!(!text.contains("Globex") && !text.contains("Bergen"), "{text}");
    assert!(text.contains("[REDACTED by policy]"), "{text}");
    assert!(text.contains("Kari"), "unlabelled memories stay: {text}");
    // An internal caller is not denied the secret, but PII is masked for everyone.
    let b2 = context(&app, "internal").await;
    let text = b2["assembled_context"].as_str().unwrap();
    assert!(text.contains("Globex") && !text.contains("Bergen"), "{text}");
    // The enforced receipt replays to the same bytes under the bundle it recorded.
    let id = b["receipt_id"].as_str().unwrap();
    let r = app.client.post(app.url(&format!("/v1/receipts/{id}/replay"))).header("X-Tenant-ID", "acme");
    let (s, replay) = crate::common::split(r.send().await.unwrap()).await;
    assert_eq!(s, 200, "{replay}");
    assert_eq!(replay["reproduced"], true, "{replay}");
}

#[tokio::test]
async fn admin_tenant_parameter_is_checked_like_the_header() {
    let app = crate::common::spawn().await;
    let (s, b) = app.get_as("acme", "/admin/policy/active?tenant_id=").await;
    assert_eq!(s, 422, "an empty tenant_id must not name the tenant \"\": {b}");
    let (s, _) = app.get_as("acme", "/admin/policy/bundles?tenant_id=acme").await;
    assert_eq!(s, 200);
}

// ---- The settings cache ----

const DENY_SECRETS: &str = "version: 1
rules:
  - id: no-secrets-for-externals
    when: {memory_has_any_label: [secret], caller_type: external}
    action: deny
";

/// Two facts of subject `u` in tenant acme, the Globex one labelled secret.
async fn cached_facts(app: &TestApp) {
    for text in ["My name is Kari Nordmann.", "I work at Globex."] {
        app.post_as("acme", "/v1/episodes", &crate::common::episode("u", text)).await;
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
async fn cached_context(app: &TestApp, tenant: &str, identified: bool) -> (u16, String) {
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
    let (s, b) = crate::common::split(r.send().await.unwrap()).await;
    assert_eq!(s, 200, "{b}");
}

#[tokio::test]
async fn changes_through_another_server_or_sql_reach_the_next_call() {
    let app = spawn().await;
    let other = spawn_replica(&app, RuntimeConfig::default()).await;
    cached_facts(&app).await;
    // Both servers cache acme's settings (no config, no policy).
    for server in [&app, &other] {
        let (s, text) = cached_context(server, "acme", true).await;
        assert_eq!(s, 200);
        assert!(text.contains("Globex"), "{text}");
    }

    // Enforce mode, then a bundle activated, both through the other server.
    patch_config(&other, json!({"policy_mode": "enforce"})).await;
    let (s, text) = cached_context(&app, "acme", true).await;
    assert!(s == 200 && text.contains("Globex"), "no bundle is active yet: {text}");
    let (s, b) = other.post_as("acme", "/admin/policy/bundles", &json!({"bundle": DENY_SECRETS})).await;
    assert_eq!(s, 201, "{b}");
    let (s, b) = other.post_as("acme", "/admin/policy/activate", &json!({"bundle_hash": b["bundle_hash"]})).await;
    assert_eq!(s, 200, "{b}");
    let (s, text) = cached_context(&app, "acme", true).await;
    assert_eq!(s, 200);
    assert!(!text.contains("Globex") && text.contains("Kari"), "the activation is seen at once: {text}");

    // Back to log_only through the other server: the secret is shown again.
    patch_config(&other, json!({"policy_mode": "log_only"})).await;
    let (_, text) = cached_context(&app, "acme", true).await;
    assert!(text.contains("Globex"), "the config change is seen at once: {text}");

    // A direct SQL update (no server involved) bumps the version too.
    sqlx::query("UPDATE tenant_configs SET config = '{\"require_caller_identity\": true}' WHERE tenant_id = 'acme'")
        .execute(&app.pool)
        .await
        .unwrap();
    for server in [&app, &other] {
        assert_eq!(cached_context(server, "acme", false).await.0, 401);
        assert_eq!(cached_context(server, "acme", true).await.0, 200);
        // Another tenant's settings are its own.
        assert_eq!(cached_context(server, "globex", false).await.0, 200);
    }
    sqlx::query("DELETE FROM tenant_configs WHERE tenant_id = 'acme'").execute(&app.pool).await.unwrap();
    assert_eq!(cached_context(&app, "acme", false).await.0, 200, "a deleted config is seen at once");
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
    let (s, b) = app.post_as("acme", "/admin/policy/bundles", &json!({"bundle": DENY_SECRETS})).await;
    assert_eq!(s, 201, "{b}");
    let v2 = version(&app, "acme").await;
    assert!(v2 > v1);
    let (s, _) = app.post_as("acme", "/admin/policy/activate", &json!({"bundle_hash": b["bundle_hash"]})).await;
    assert_eq!(s, 200);
    let v3 = version(&app, "acme").await;
    assert!(v3 > v2);
    // Uploading the same bundle again changes nothing, so the version stays.
    app.post_as("acme", "/admin/policy/bundles", &json!({"bundle": DENY_SECRETS})).await;
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

#[tokio::test]
async fn policy_bodies_are_typed_with_located_errors() {
    let app = spawn().await;
    let kind = |b: &Value| (b["error"]["details"][0]["loc"].clone(), b["error"]["details"][0]["type"].clone());
    let (s, b) = app.post_as("acme", "/admin/policy/bundles", &json!({"bundle": 7})).await;
    assert_eq!((s, kind(&b)), (422, (json!(["body", "bundle"]), json!("string_type"))), "{b}");
    let (s, b) = app.post_as("acme", "/admin/policy/bundles", &json!({"bundle": null})).await;
    assert_eq!((s, kind(&b)), (422, (json!(["body", "bundle"]), json!("missing"))), "{b}");
    let (s, b) =
        app.post_as("acme", "/admin/policy/bundles", &json!({"tenant_id": "t".repeat(257), "bundle": BUNDLE})).await;
    assert_eq!((s, kind(&b)), (422, (json!(["body", "tenant_id"]), json!("string_too_long"))), "{b}");
    // A JSON object is a bundle too, stored as its JSON text.
    let object = json!({"version": 1, "rules": [{"id": "r", "when": {"caller_id": "x"}, "action": "deny"}]});
    let (s, b) = app.post_as("acme", "/admin/policy/bundles", &json!({"bundle": object})).await;
    assert_eq!(s, 201, "{b}");
    let (s, b) = app.post_as("acme", "/admin/policy/activate", &json!({})).await;
    assert_eq!((s, kind(&b)), (422, (json!(["body", "bundle_hash"]), json!("missing"))), "{b}");
    let (s, b) = app.post_as("acme", "/admin/policy/activate", &json!({"bundle_hash": ""})).await;
    assert_eq!((s, kind(&b)), (422, (json!(["body", "bundle_hash"]), json!("string_too_short"))), "{b}");
}
