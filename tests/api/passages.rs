//! Passages of episodes compiled before passages existed (migration 0061): the passage worker
//! writes them a slice at a time, then embeds them as it does compile's.
#![allow(clippy::unwrap_used)]

use crate::common::spawn;

/// The subject's passages as (episode, passage, start, end), in order.
async fn ranges(app: &crate::common::TestApp) -> Vec<(uuid::Uuid, i16, i32, i32)> {
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
    let app = spawn().await;
    let long = |topic: &str| {
        format!("On {topic}: {}", "we walked the old streets and wrote down every detail we saw. ".repeat(14))
    };
    let texts = [long("Lisbon"), "I live in Oslo.".to_string(), long("Porto"), long("Madrid")];
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    app.ingest_and_compile("historian", &texts).await;
    let written = ranges(&app).await;
    assert!(written.len() >= 3, "three long episodes have passages: {written:?}");

    // As a subject compiled before part 60 stands after migration 0061: no passages, and its
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
