//! DELETE /v1/subjects/{id}: every row of the subject goes, other subjects and tenants stay.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use crate::common::{spawn, TestApp};
use base64::Engine as _;
use serde_json::{json, Value};

#[tokio::test]
async fn delete_removes_every_row_of_the_subject_only() {
    let app = spawn().await;
    app.ingest_and_compile(
        "gone",
        &["My name is Ola Nordmann and I live in Bergen.", "I work at Globex.", "I work at Initech."],
    )
    .await;
    app.ingest_and_compile("kept", &["I live in Oslo."]).await;
    app.post_as("acme", "/v1/episodes", &crate::common::episode("gone", "other tenant")).await;
    app.post("/v1/memories/compile", &json!({"subject_id": "gone", "async": true})).await;

    let r = app.client.delete(app.url("/v1/subjects/gone")).send().await.unwrap();
    let (s, b) = crate::common::split(r).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["episodes_deleted"], 3);
    assert!(b["memories_deleted"].as_u64().unwrap() >= 6);

    // Catalog-driven: every table with a subject_id column has no row of the subject left.
    let left = app.subject_rows("default", "gone").await;
    assert!(left.len() >= 7, "{left:?}");
    assert!(left.iter().all(|(_, n)| *n == 0), "{left:?}");
    let (_, ctx) = app.post("/v1/context", &json!({"subject_id": "gone", "task": "Who is the user?"})).await;
    assert!(!ctx["assembled_context"].as_str().unwrap().contains("Bergen"));
    let (_, found) = app.get("/v1/memories/search?subject_id=gone&q=Bergen").await;
    assert_eq!(found["memories"], json!([]));
    let (_, t) = app.get("/v1/timeline?subject_id=gone").await;
    assert_eq!((t["episodes"].clone(), t["memories"].clone()), (json!([]), json!([])));
    // Other subjects and tenants are untouched; a new ingest starts a fresh subject.
    assert_eq!(app.memories("kept").await.len(), 2);
    let (_, t) = app.get_as("acme", "/v1/timeline?subject_id=gone").await;
    assert_eq!(t["episodes"].as_array().unwrap().len(), 1);
    app.ingest_and_compile("gone", &["I live in Tromsø."]).await;
    assert_eq!(app.memories("gone").await.len(), 2);
    // Deleting an absent subject is a 200 with zero counts.
    let r = app.client.delete(app.url("/v1/subjects/never-existed")).send().await.unwrap();
    let (s, b) = crate::common::split(r).await;
    assert_eq!((s, b["episodes_deleted"].clone()), (200, json!(0)));
}

async fn delete(app: &TestApp, tenant: &str, subject: &str) -> (u16, Value) {
    let r = app.client.delete(app.url(&format!("/v1/subjects/{subject}"))).header("X-Tenant-ID", tenant);
    crate::common::split(r.send().await.unwrap()).await
}

fn signing_keys() -> mnemo::receipts::signing::SigningKeys {
    let key = base64::engine::general_purpose::STANDARD.encode([5u8; 32]);
    mnemo::receipts::signing::SigningKeys::parse(&json!({"ops-1": key}).to_string()).unwrap()
}

#[tokio::test]
async fn erasure_certificate_is_signed_stored_and_tenant_scoped() {
    let embedder = mnemo::embed::build(&mnemo::embed::EmbedderConfig::Hash { dims: 384 }).unwrap();
    let app = crate::common::spawn_state(mnemo::RuntimeConfig::default(), embedder, signing_keys()).await;
    for text in ["I live in Bergen.", "I work at Globex."] {
        app.post_as("acme", "/v1/episodes", &crate::common::episode("user:7", text)).await;
    }
    app.post_as("acme", "/v1/memories/compile", &json!({"subject_id": "user:7"})).await;
    app.post_as("acme", "/v1/context", &json!({"subject_id": "user:7", "task": "where?", "emit_receipt": true})).await;

    let (s, b) = delete(&app, "acme", "user:7").await;
    assert_eq!(s, 200, "{b}");
    let cert = &b["certificate"];
    assert_eq!(cert["erasure_id"], b["erasure_id"]);
    assert_eq!(cert["tenant_id"], "acme");
    assert_eq!(cert["counts"]["episodes"], 2);
    assert_eq!(cert["counts"]["receipts"], 1);
    assert_eq!(cert["rows_remaining"], 0);
    assert_eq!(cert["signature_key_id"], "ops-1");
    assert_eq!(cert["subject_sha256"], mnemo::receipts::certificate::subject_digest("acme", "user:7"));
    assert!(cert["verified_tables"].as_array().unwrap().len() >= 7);
    assert!(!cert.to_string().contains("user:7"), "the certificate names the subject only by digest");

    let id = b["erasure_id"].as_str().unwrap();
    let (s, got) = app.get_as("acme", &format!("/v1/erasures/{id}")).await;
    assert_eq!(s, 200, "{got}");
    assert_eq!(&got["certificate"], cert);
    assert_eq!(got["signature_check"], json!({"valid": true, "reason": "ok"}));
    // Another tenant cannot see it, nor tell it apart from an id that never existed.
    let (s, other) = app.get_as("globex", &format!("/v1/erasures/{id}")).await;
    let (s2, never) = app.get_as("globex", "/v1/erasures/01ARZ3NDEKTSV4RRFFQ69G5FAV").await;
    assert_eq!((s, s2), (404, 404));
    assert_eq!(other["error"]["code"], never["error"]["code"]);
    // The receipt chain still verifies after its link was tombstoned.
    let (_, chain) = app.get_as("acme", "/v1/receipts/chain/verify").await;
    assert_eq!(chain["ok"], true, "{chain}");
}

#[tokio::test]
async fn cli_deletes_a_subject_and_prints_the_certificate() {
    let app = spawn().await;
    app.post_as("acme", "/v1/episodes", &crate::common::episode("cli-gone", "I live in Oslo.")).await;
    app.post_as("acme", "/v1/memories/compile", &json!({"subject_id": "cli-gone"})).await;
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(["subjects", "delete", "cli-gone", "--tenant", "acme"])
        .env("MNEMO_DATABASE_URL", app.database_url())
        .env_remove("MNEMO_RECEIPT_SIGNING_KEYS")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["episodes_deleted"], 1);
    assert_eq!(printed["certificate"]["signature"], Value::Null);
    assert!(app.subject_rows("acme", "cli-gone").await.iter().all(|(_, n)| *n == 0));
    let id = printed["erasure_id"].as_str().unwrap();
    let (s, got) = app.get_as("acme", &format!("/v1/erasures/{id}")).await;
    assert_eq!((s, got["signature_check"]["reason"].clone()), (200, json!("unsigned")));
}

/// Deletes race ingests, compiles (sync and queued) and receipt-emitting context calls on one subject: no request fails with
/// a 5xx, and after the last delete nothing of the subject remains anywhere. Webhooks are on, towards a receiver that
/// refuses connections, so the dispatcher claims and updates the subject's events throughout.
#[tokio::test]
async fn deletes_racing_ingests_and_compiles_never_fail_and_leave_nothing() {
    let webhooks = mnemo::services::webhooks::WebhookConfig {
        url: Some("http://127.0.0.1:9/refused".into()),
        backoff_base: Duration::from_millis(5),
        poll_interval: Duration::from_millis(10),
        max_attempts: 1000,
        ..Default::default()
    };
    let app =
        std::sync::Arc::new(crate::common::spawn_with(mnemo::RuntimeConfig { webhooks, ..Default::default() }).await);
    let deadline = Instant::now() + Duration::from_secs(4);
    let mut tasks = Vec::new();
    for worker in 0..7 {
        let app = app.clone();
        tasks.push(tokio::spawn(async move {
            let mut statuses = Vec::new();
            let mut i = 0;
            while Instant::now() < deadline {
                i += 1;
                let (s, b) = match worker {
                    0 | 1 => {
                        let text = format!("I work at Company{worker}x{i}. My name is Kari.");
                        app.post_as("race", "/v1/episodes", &crate::common::episode("hot", &text)).await
                    }
                    2 => {
                        let batch: Vec<Value> =
                            (0..5).map(|k| crate::common::episode("hot", &format!("I live in Town{i}x{k}."))).collect();
                        app.post_as("race", "/v1/episodes/batch", &json!({"episodes": batch})).await
                    }
                    3 => app.post_as("race", "/v1/memories/compile", &json!({"subject_id": "hot"})).await,
                    4 => {
                        app.post_as("race", "/v1/memories/compile", &json!({"subject_id": "hot", "async": true})).await
                    }
                    5 => {
                        let ctx = json!({"subject_id": "hot", "task": "Where do I work?", "emit_receipt": true});
                        app.post_as("race", "/v1/context", &ctx).await
                    }
                    _ => {
                        tokio::time::sleep(Duration::from_millis(40)).await;
                        delete(&app, "race", "hot").await
                    }
                };
                statuses.push((s, b));
            }
            statuses
        }));
    }
    let mut total = 0;
    for t in tasks {
        for (s, b) in t.await.unwrap() {
            total += 1;
            assert!(s < 500, "{s}: {b}");
        }
    }
    assert!(total > 50, "the race ran only {total} requests");
    // Let queued compile jobs drain, then delete once more: nothing may remain.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (s, _) = delete(&app, "race", "hot").await;
    assert_eq!(s, 200);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let left = app.subject_rows("race", "hot").await;
    assert!(left.iter().all(|(_, n)| *n == 0), "{left:?}");
    let erasures: i64 = sqlx::query_scalar("SELECT count(*) FROM erasures WHERE tenant_id = 'race'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert!(erasures > 5, "{erasures}");
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM webhook_events WHERE tenant_id = 'race'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert!(events > 5, "the deletions were announced: {events}");
}
