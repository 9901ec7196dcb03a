//! Suggested sensitivity labels: suggestions at compile time, the admin review queue, promotion
//! (rules, audit trail, tenancy) and the tenant switch that turns suggestions off.
#![allow(clippy::unwrap_used)]

use crate::common::{spawn, TestApp};
use serde_json::{json, Value};

async fn queue(app: &TestApp, tenant: &str, query: &str) -> Value {
    let (s, b) = app.get_as(tenant, &format!("/admin/memories/with-suggested-labels{query}")).await;
    assert_eq!(s, 200, "{b}");
    b
}

async fn seed(app: &TestApp, tenant: &str, subject: &str) {
    for text in [
        "You can reach me at kari.nordmann@example.com any time.",
        "I live in Bergen.",
        "I prefer dark mode in every editor.",
    ] {
        let (s, b) = app.post_as(tenant, "/v1/episodes", &crate::common::episode(subject, text)).await;
        assert_eq!(s, 201, "{b}");
    }
    let (s, b) = app.post_as(tenant, "/v1/memories/compile", &json!({"subject_id": subject})).await;
    assert_eq!(s, 200, "{b}");
}

fn with_label<'a>(q: &'a Value, label: &str) -> Vec<&'a Value> {
    q["memories"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["suggested_labels"].as_array().unwrap().iter().any(|l| l == label))
        .collect()
}

#[tokio::test]
async fn compile_suggests_labels_and_the_queue_lists_them() {
    let app = spawn().await;
    seed(&app, "acme", "u").await;
    let q = queue(&app, "acme", "").await;
    assert_eq!(q["limit"], 50);
    assert_eq!(q["offset"], 0);
    assert!(!with_label(&q, "pii.email").is_empty(), "{q}");
    assert!(!with_label(&q, "pii.location").is_empty(), "the home claim is a location: {q}");
    assert_eq!(q["total"].as_i64().unwrap() as usize, q["memories"].as_array().unwrap().len());
    for m in q["memories"].as_array().unwrap() {
        assert!(m["summary"].is_string() && m["created_at"].is_string() && m["id"].is_string(), "{m}");
        assert!(!m["content"].as_str().unwrap().contains("dark mode"), "nothing sensitive there: {m}");
    }
    // The catalogue is a list of string-valued objects (the SDK's model demands it).
    for entry in q["catalogue"].as_array().unwrap() {
        assert!(entry.as_object().unwrap().values().all(Value::is_string), "{entry}");
    }
    // Filters: label, subject, tenant_id, paging.
    let by_label = queue(&app, "acme", "?label=PII.Email").await;
    assert_eq!(by_label["total"].as_i64().unwrap() as usize, with_label(&q, "pii.email").len());
    assert_eq!(queue(&app, "acme", "?subject_id=nobody").await["total"], 0);
    assert_eq!(queue(&app, "other", "").await["total"], 0, "another tenant's queue is its own");
    assert_eq!(queue(&app, "other", "?tenant_id=acme").await["total"], q["total"], "an admin may name the tenant");
    let page = queue(&app, "acme", "?limit=1&offset=1").await;
    assert_eq!(page["memories"].as_array().unwrap().len(), 1);
    assert_eq!(page["memories"][0]["id"], q["memories"][1]["id"]);
    let (s, b) = app.get_as("acme", "/admin/memories/with-suggested-labels?limit=0").await;
    assert_eq!(s, 422, "{b}");
}

#[tokio::test]
async fn promotion_moves_labels_and_records_an_audit_entry() {
    let app = spawn().await;
    seed(&app, "acme", "u").await;
    let q = queue(&app, "acme", "?label=pii.email").await;
    let id = q["memories"][0]["id"].as_str().unwrap().to_string();
    let path = format!("/admin/memories/{id}/promote-labels");

    for (labels, code) in [
        (json!([]), "promote_labels.empty"),
        (json!(["pii.email", " PII.email "]), "promote_labels.duplicate_labels"),
        (json!(["financial.card"]), "promote_labels.not_suggested"),
    ] {
        let (s, b) = app.post_as("acme", &path, &json!({ "labels": labels })).await;
        assert_eq!(s, 422, "{b}");
        assert_eq!(b["error"]["code"], code);
    }
    let (s, b) = app.post_as("acme", &path, &json!({"labels": ["PII.Email"]})).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["memory_id"], id.as_str());
    assert_eq!(b["promoted"], json!(["pii.email"]));
    assert_eq!(b["sensitivity_labels"], json!(["pii.email"]));
    assert!(!b["suggested_labels"].as_array().unwrap().iter().any(|l| l == "pii.email"));

    let memory = app.memories_as("acme", "u").await.into_iter().find(|m| m["id"] == id.as_str()).unwrap();
    assert_eq!(memory["sensitivity_labels"], json!(["pii.email"]));
    let audit = memory["metadata"]["label_promotions"].as_array().unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["labels"], json!(["pii.email"]));
    assert!(audit[0]["promoted_by"].is_null());
    assert!(audit[0]["promoted_at"].as_str().unwrap().starts_with("20"));

    // Promoting again: no longer a suggestion.
    let (s, b) = app.post_as("acme", &path, &json!({"labels": ["pii.email"]})).await;
    assert_eq!((s, b["error"]["code"].as_str()), (422, Some("promote_labels.not_suggested")));
    // Another tenant cannot see or touch it; unknown ids are 404 alike.
    let (s_other, b_other) = app.post_as("other", &path, &json!({"labels": ["pii.email"]})).await;
    let unknown = format!("/admin/memories/{}/promote-labels", uuid::Uuid::nil());
    let (s_none, b_none) = app.post_as("acme", &unknown, &json!({"labels": ["pii.email"]})).await;
    assert_eq!((s_other, s_none), (404, 404));
    assert_eq!(b_other["error"]["message"], b_none["error"]["message"]);
    let (s, _) = app.post_as("acme", "/admin/memories/not-a-uuid/promote-labels", &json!({"labels": ["x"]})).await;
    assert_eq!(s, 422);
}

#[tokio::test]
async fn tenants_can_turn_suggestions_off() {
    let app = spawn().await;
    let (s, b) = app.patch_as("acme", "/admin/tenants/acme/config", &json!({"auto_labeling": false})).await;
    assert_eq!(s, 200, "{b}");
    seed(&app, "acme", "u").await;
    assert_eq!(queue(&app, "acme", "").await["total"], 0);
    let (s, _) = app.patch_as("acme", "/admin/tenants/acme/config", &json!({"auto_labeling": "yes"})).await;
    assert_eq!(s, 422);
}

#[tokio::test]
async fn label_bodies_report_each_bad_label_where_it_is() {
    let app = crate::common::spawn().await;
    let id = uuid::Uuid::nil();
    let long = "x".repeat(129);
    let body = json!({"sensitivity_labels": ["pii", long, "a\u{0000}b"]});
    let (s, b) = app.patch_as("acme", &format!("/v1/memories/{id}/labels"), &body).await;
    assert_eq!(s, 422, "{b}");
    let mut got: Vec<(Value, Value)> =
        b["error"]["details"].as_array().unwrap().iter().map(|e| (e["loc"].clone(), e["type"].clone())).collect();
    got.sort_by_key(|(l, _)| l.to_string());
    assert_eq!(
        got,
        vec![
            (json!(["body", "sensitivity_labels", 1]), json!("string_too_long")),
            (json!(["body", "sensitivity_labels", 2]), json!("string_nul")),
        ]
    );
    let (s, b) = app.post_as("acme", &format!("/admin/memories/{id}/promote-labels"), &json!({})).await;
    assert_eq!((s, b["error"]["details"][0]["type"].clone()), (422, json!("missing")), "{b}");
    let (s, b) = app.post_as("acme", &format!("/admin/memories/{id}/promote-labels"), &json!({"labels": [1]})).await;
    assert_eq!(
        (s, b["error"]["details"][0]["loc"].clone(), b["error"]["details"][0]["type"].clone()),
        (422, json!(["body", "labels", 0]), json!("string_type")),
        "{b}"
    );
}
