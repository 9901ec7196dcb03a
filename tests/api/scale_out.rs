//! Several mnemo processes on one database: compile jobs claimed once, the receipt chain never
//! forked, erasure correct while another process compiles. (Rate limits and webhooks shared by
//! processes are in tests/auth.rs and tests/webhooks.rs.) `scripts/cluster test` also runs
//! this suite through pgbouncer in transaction pooling mode.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::common::{spawn_replica, TestApp};
use mnemo::RuntimeConfig;
use serde_json::json;

async fn two() -> (TestApp, TestApp) {
    let fast = || RuntimeConfig { job_poll_ms: 20, ..RuntimeConfig::default() };
    let a = crate::common::spawn_with(fast()).await;
    let b = spawn_replica(&a, fast()).await;
    (a, b)
}

#[tokio::test]
async fn async_compile_jobs_are_claimed_once_across_processes() {
    let (a, b) = two().await;
    let mut jobs = Vec::new();
    for s in 0..12 {
        let subject = format!("user:{s}");
        for (i, app) in [&a, &b].into_iter().enumerate() {
            let text = format!("My project codename is Falcon{s}x{i}.");
            assert_eq!(app.post("/v1/episodes", &crate::common::episode(&subject, &text)).await.0, 201);
        }
        let app = if s % 2 == 0 { &a } else { &b };
        let (status, job) = app.post("/v1/memories/compile", &json!({"subject_id": subject, "async": true})).await;
        assert_eq!(status, 202, "{job}");
        jobs.push(job["job_id"].as_str().unwrap().to_string());
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let open: i64 = sqlx::query_scalar("SELECT count(*) FROM compile_jobs WHERE status IN ('pending', 'running')")
            .fetch_one(&a.pool)
            .await
            .unwrap();
        if open == 0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{open} jobs still open");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let rows: Vec<(String, i32)> =
        sqlx::query_as("SELECT status, attempts FROM compile_jobs").fetch_all(&a.pool).await.unwrap();
    assert_eq!(rows.len(), jobs.len());
    assert!(rows.iter().all(|(s, n)| s == "completed" && *n == 1), "each job ran once: {rows:?}");
    let dups: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT 1 FROM memories WHERE status = 'active' \
         GROUP BY tenant_id, subject_id, kind, content HAVING count(*) > 1) d",
    )
    .fetch_one(&a.pool)
    .await
    .unwrap();
    assert_eq!(dups, 0, "no memory compiled twice");
}

#[tokio::test]
async fn concurrent_receipts_from_two_processes_form_one_chain() {
    let (a, b) = two().await;
    a.ingest_and_compile("user:1", &["I live in Bergen.", "I work at Globex."]).await;
    let calls = (0..24).map(|i| {
        let app = if i % 2 == 0 { &a } else { &b };
        let body =
            json!({"subject_id": "user:1", "task": format!("Where does the user live? {i}"), "emit_receipt": true});
        async move { app.post("/v1/context", &body).await }
    });
    let answers = futures_util::future::join_all(calls).await;
    assert!(answers.iter().all(|(s, b)| *s == 200 && b["receipt_id"].is_string()), "{answers:?}");
    let chain: Vec<(i64, String, String)> =
        sqlx::query_as("SELECT seq, prev_hash, receipt_hash FROM receipts WHERE tenant_id = 'default' ORDER BY seq")
            .fetch_all(&a.pool)
            .await
            .unwrap();
    assert_eq!(chain.len(), 24);
    for (i, w) in chain.windows(2).enumerate() {
        assert_eq!(w[1].0, w[0].0 + 1, "gapless at {i}");
        assert_eq!(w[1].1, w[0].2, "each receipt links the one before");
    }
    let head: (i64, String) =
        sqlx::query_as("SELECT last_seq, last_hash FROM receipt_chain_heads WHERE tenant_id = 'default'")
            .fetch_one(&a.pool)
            .await
            .unwrap();
    assert_eq!((head.0, &head.1), (chain.last().unwrap().0, &chain.last().unwrap().2));
}

#[tokio::test]
async fn erasure_is_complete_while_another_process_compiles() {
    let (a, b) = two().await;
    for round in 0..4 {
        let subject = format!("gone:{round}");
        let batch: Vec<_> = (0..40)
            .map(|i| crate::common::episode(&subject, &format!("My project codename is Kite{round}x{i}.")))
            .collect();
        assert_eq!(a.post("/v1/episodes/batch", &json!({"episodes": batch})).await.0, 201);
        let body = json!({"subject_id": subject});
        let compile = b.post("/v1/memories/compile", &body);
        let erase = async {
            tokio::time::sleep(Duration::from_millis(round * 5)).await;
            a.client.delete(a.url(&format!("/v1/subjects/{subject}"))).send().await.unwrap().status().as_u16()
        };
        let ((c, _), e) = tokio::join!(compile, erase);
        assert!(c == 200 || c == 404 || c == 409, "compile answered {c}");
        assert_eq!(e, 200);
        let left: Vec<_> = a.subject_rows("default", &subject).await.into_iter().filter(|(_, n)| *n > 0).collect();
        assert!(left.is_empty(), "rows left after erasure: {left:?}");
    }
}
