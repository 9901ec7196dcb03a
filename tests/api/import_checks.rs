//! The Statewave import checks what a memory cites and how confident it claims to be (issue 49):
//! no memory may cite another subject's or tenant's episode, and a confidence outside [0, 1] is
//! refused with nothing written.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use mnemo::services::statewave_backup::document::checksum;
use serde_json::{json, Value};

use crate::common::TestApp;

fn fixture() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/statewave/small-export.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The document with its checksum recomputed after an edit.
fn resealed(mut doc: Value) -> Value {
    doc["checksum"] = json!(checksum(doc.get("episodes"), doc.get("memories")));
    doc
}

async fn episode(app: &TestApp, tenant: &str, subject: &str) -> String {
    let (s, b) = app.post_as(tenant, "/v1/episodes", &crate::common::episode(subject, "I live in Oslo.")).await;
    assert_eq!(s, 201, "{b}");
    b["id"].as_str().unwrap().to_string()
}

/// What the imported memory of that content cites.
async fn cited(app: &TestApp, content: &str) -> Vec<String> {
    let ids: Vec<uuid::Uuid> = sqlx::query_scalar(
        "SELECT source_episode_ids FROM memories WHERE tenant_id = 'acme' AND subject_id = 'user:a' AND content = $1",
    )
    .bind(content)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    ids.iter().map(ToString::to_string).collect()
}

#[tokio::test]
async fn imported_memories_never_cite_another_subjects_or_tenants_episodes() {
    let app = crate::common::spawn().await;
    let victim = episode(&app, "victim", "user:v").await;
    let other_subject = episode(&app, "acme", "user:other").await;
    let own = episode(&app, "acme", "user:a").await;
    // The subject's own episode is compiled, so the import may follow it.
    let (s, b) = app.post_as("acme", "/v1/memories/compile", &json!({"subject_id": "user:a"})).await;
    assert_eq!(s, 200, "{b}");
    let dangling = "0f3c2a10-5b1e-4c7a-9d2e-ffffffffffff".to_string();
    let mut doc = fixture();
    let content = doc["memories"][0]["content"].as_str().unwrap().to_string();
    let in_document = doc["memories"][0]["source_episode_ids"][0].clone();
    doc["memories"][0]["source_episode_ids"] = json!([in_document, victim, other_subject, own, dangling]);
    let body = json!({"document": resealed(doc), "target_subject_id": "user:a", "target_tenant_id": "acme",
                      "preserve_ids": false});
    let (s, b) = app.post("/admin/import", &body).await;
    assert_eq!(s, 200, "{b}");
    let cited = cited(&app, &content).await;
    assert!(!cited.contains(&victim), "another tenant's episode is cited: {cited:?}");
    assert!(!cited.contains(&other_subject), "another subject's episode is cited: {cited:?}");
    assert!(cited.contains(&own), "the subject's own episode stays cited");
    assert!(cited.contains(&dangling), "a dangling reference stays, as the format allows");
    // The document's own episode, under its new id.
    let imported: Vec<uuid::Uuid> =
        sqlx::query_scalar("SELECT id FROM episodes WHERE tenant_id = 'acme' AND subject_id = 'user:a'")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert!(cited.iter().any(|c| *c != own && imported.iter().any(|i| i.to_string() == *c)), "{cited:?}");
    assert_eq!(cited.len(), 3, "{cited:?}");
}

#[tokio::test]
async fn a_confidence_outside_zero_to_one_is_refused_and_writes_nothing() {
    let app = crate::common::spawn().await;
    for bad in [json!(1e308), json!(-0.1), json!(1.5)] {
        let mut doc = fixture();
        doc["memories"][2]["confidence"] = bad.clone();
        let body = json!({"document": resealed(doc), "preserve_ids": false});
        let (s, b) = app.post("/admin/import", &body).await;
        let message = b["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(s, 400, "{bad}: {b}");
        assert!(message.contains("memories[2].confidence") && message.contains("from 0 to 1"), "{message}");
    }
    assert_eq!(app.count("episodes").await + app.count("memories").await, 0);
    // The bounds themselves are fine.
    let mut doc = fixture();
    doc["memories"][0]["confidence"] = json!(0);
    doc["memories"][1]["confidence"] = json!(1);
    let (s, b) = app.post("/admin/import", &json!({"document": resealed(doc), "preserve_ids": false})).await;
    assert_eq!(s, 200, "{b}");
}
