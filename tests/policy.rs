//! Sensitivity-label policy bundles: upload, activation, evaluation in context assembly
//! (log_only records, enforce drops and redacts), receipts and replay.
#![allow(clippy::unwrap_used)]

mod common;

use common::{spawn, TestApp};
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
        app.post_as("acme", "/v1/episodes", &common::episode("u", text)).await;
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
    let (s, replay) = common::split(r.send().await.unwrap()).await;
    assert_eq!(s, 200, "{replay}");
    assert_eq!(replay["reproduced"], true, "{replay}");
}

#[tokio::test]
async fn admin_tenant_parameter_is_checked_like_the_header() {
    let app = common::spawn().await;
    let (s, b) = app.get_as("acme", "/admin/policy/active?tenant_id=").await;
    assert_eq!(s, 422, "an empty tenant_id must not name the tenant \"\": {b}");
    let (s, _) = app.get_as("acme", "/admin/policy/bundles?tenant_id=acme").await;
    assert_eq!(s, 200);
}
