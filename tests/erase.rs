//! DELETE /v1/subjects/{id}: every row of the subject goes, other subjects and tenants stay.
#![allow(clippy::unwrap_used)]

mod common;

use common::spawn;
use serde_json::json;

#[tokio::test]
async fn delete_removes_every_row_of_the_subject_only() {
    let app = spawn().await;
    app.ingest_and_compile(
        "gone",
        &["My name is Ola Nordmann and I live in Bergen.", "I work at Globex.", "I work at Initech."],
    )
    .await;
    app.ingest_and_compile("kept", &["I live in Oslo."]).await;
    app.post_as("acme", "/v1/episodes", &common::episode("gone", "other tenant")).await;
    app.post("/v1/memories/compile", &json!({"subject_id": "gone", "async": true})).await;

    let r = app.client.delete(app.url("/v1/subjects/gone")).send().await.unwrap();
    let (s, b) = common::split(r).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["episodes_deleted"], 3);
    assert!(b["memories_deleted"].as_u64().unwrap() >= 6);

    // Catalog-driven: every table with a subject_id column has no row of the subject left.
    let tables = mnemo::db::erase::tables_with_subjects(&mut app.pool.acquire().await.unwrap()).await.unwrap();
    assert!(tables.len() >= 7, "{tables:?}");
    for t in &tables {
        let n: i64 = sqlx::query_scalar(&format!(
            "SELECT count(*) FROM {t} WHERE tenant_id = 'default' AND subject_id = 'gone'"
        ))
        .fetch_one(&app.pool)
        .await
        .unwrap();
        assert_eq!(n, 0, "{t}");
    }
    let (_, ctx) = app.post("/v1/context", &json!({"subject_id": "gone", "task": "Who is the user?"})).await;
    assert!(!ctx["assembled_context"].as_str().unwrap().contains("Bergen"));
    // Other subjects and tenants are untouched; a new ingest starts a fresh subject.
    assert_eq!(app.memories("kept").await.len(), 2);
    let (_, t) = app.get_as("acme", "/v1/timeline?subject_id=gone").await;
    assert_eq!(t["episodes"].as_array().unwrap().len(), 1);
    app.ingest_and_compile("gone", &["I live in Tromsø."]).await;
    assert_eq!(app.memories("gone").await.len(), 2);
    // Deleting an absent subject is a 200 with zero counts.
    let r = app.client.delete(app.url("/v1/subjects/never-existed")).send().await.unwrap();
    let (s, b) = common::split(r).await;
    assert_eq!((s, b["episodes_deleted"].clone()), (200, json!(0)));
}
