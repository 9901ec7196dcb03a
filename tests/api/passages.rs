//! Passages of episodes compiled before passages existed: the passage worker
//! writes them a slice at a time, then embeds them as it does compile's.
#![allow(clippy::unwrap_used)]

use serde_json::json;

use crate::common::{spawn_with, TestApp};

/// A server without its background workers: the test runs the passage worker's steps itself.
async fn quiet() -> TestApp {
    spawn_with(mnemo::RuntimeConfig { run_worker: false, ..mnemo::RuntimeConfig::default() }).await
}

/// The subject's passages as (episode, passage, start, end), in order.
async fn ranges(app: &TestApp) -> Vec<(uuid::Uuid, i16, i32, i32)> {
    sqlx::query_as(
        "SELECT episode_id, passage, start_char, end_char FROM episode_passages \
         WHERE subject_id = 'historian' ORDER BY episode_id, passage",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn an_older_subject_gets_the_passages_compile_would_have_written() {
    let app = quiet().await;
    let long = |topic: &str| {
        format!("On {topic}: {}", "we walked the old streets and wrote down every detail we saw. ".repeat(14))
    };
    let texts = [long("Lisbon"), "I live in Oslo.".to_string(), long("Porto"), long("Madrid")];
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    app.ingest_and_compile("historian", &texts).await;
    let written = ranges(&app).await;
    assert!(written.len() >= 3, "three long episodes have passages: {written:?}");

    // As a subject compiled before passages existed stands once adopted: no passages, and its
    // whole history waiting for them.
    sqlx::query("DELETE FROM episode_passages WHERE subject_id = 'historian'").execute(&app.pool).await.unwrap();
    sqlx::query("UPDATE compile_cursors SET passages_through = compiled_seq WHERE subject_id = 'historian'")
        .execute(&app.pool)
        .await
        .unwrap();
    // The worker runs as the server does (the application role; the subject's tenant unnamed).
    let mut steps = 0;
    while mnemo::services::passages::backfill_step(&app.app_pool).await.unwrap() {
        steps += 1;
        assert!(steps < 10, "the backfill does not end");
    }
    assert!(steps >= 1);
    assert_eq!(ranges(&app).await, written, "the same passages as compile writes");
    let left: Option<i64> =
        sqlx::query_scalar("SELECT passages_through FROM compile_cursors WHERE subject_id = 'historian'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(left, None);
    // Compile's own passages are never written twice: a new subject has nothing to backfill.
    app.ingest_and_compile("newcomer", &texts).await;
    assert!(!mnemo::services::passages::backfill_step(&app.app_pool).await.unwrap());
}

/// A long episode for `tenant`'s subject, compiled (its passages wait for vectors).
async fn long_episodes(app: &TestApp, tenant: &str, n: usize) {
    let text = "We walked the old streets of the harbour town and wrote down every detail we saw. ".repeat(10);
    let eps: Vec<_> = (0..n)
        .map(|i| {
            json!({"subject_id": "writer", "source": "chat", "type": "message",
                        "payload": {"messages": [{"role": "user", "content": format!("Day {i}. {text}")}]}})
        })
        .collect();
    let (s, b) = app.post_as(tenant, "/v1/episodes/batch", &json!({ "episodes": eps })).await;
    assert_eq!(s, 201, "{b}");
    let (s, b) = app.post_as(tenant, "/v1/memories/compile", &json!({"subject_id": "writer"})).await;
    assert_eq!(s, 200, "{b}");
}

/// The worker leases the oldest passages of every tenant waiting in turns: a tenant with a long
/// backlog written first does not hold back one that came later.
#[tokio::test]
async fn every_tenant_waiting_gets_its_turn_at_the_passage_worker() {
    let app = quiet().await;
    long_episodes(&app, "backlog", 6).await;
    long_episodes(&app, "later", 1).await;
    let mut conn = app.app_pool.acquire().await.unwrap();
    let leased = mnemo::db::passages::claim(&mut conn, 4).await.unwrap();
    let tenants: Vec<&str> = leased.iter().map(|c| c.tenant_id.as_str()).collect();
    assert_eq!(tenants.len(), 4, "{tenants:?}");
    assert_eq!(tenants.iter().filter(|t| **t == "later").count(), 2, "{tenants:?}");
    // Leased passages are not leased again while their lease holds; the rest still are.
    let again = mnemo::db::passages::claim(&mut conn, 100).await.unwrap();
    let first: Vec<_> = leased.iter().map(|c| (c.range.episode_id, c.range.passage)).collect();
    assert!(again.iter().all(|c| !first.contains(&(c.range.episode_id, c.range.passage))));
    let waiting: i64 = sqlx::query_scalar("SELECT count(*) FROM episode_passages").fetch_one(&app.pool).await.unwrap();
    assert_eq!(i64::try_from(leased.len() + again.len()).unwrap(), waiting);
}
