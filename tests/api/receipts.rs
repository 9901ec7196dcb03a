//! Receipts over HTTP: emission, reads, paging, signatures, tampering, the chain, replay, erasure.
#![allow(clippy::unwrap_used)]

use crate::common::{spawn, TestApp};
use mnemo::receipts::signing::SigningKeys;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

async fn context_with_receipt(app: &TestApp, tenant: &str, subject: &str, task: &str) -> Value {
    let body = json!({"subject_id": subject, "task": task, "emit_receipt": true, "max_tokens": 500,
                      "caller_id": "bot", "caller_type": "agent", "query_id": "q-1"});
    let (s, b) = app.post_as(tenant, "/v1/context", &body).await;
    assert_eq!(s, 200, "{b}");
    b
}

#[tokio::test]
async fn emission_follows_request_and_tenant_config() {
    let app = spawn().await;
    app.ingest_and_compile("u", &["I live in Lisbon."]).await;
    let (_, b) = app.post("/v1/context", &json!({"subject_id": "u", "task": "where?"})).await;
    assert_eq!((b["receipt_id"].clone(), b["receipt_emitted"].clone()), (Value::Null, json!(false)));
    let b = context_with_receipt(&app, "default", "u", "where?").await;
    let id = b["receipt_id"].as_str().unwrap();
    assert_eq!(id.len(), 26);
    assert!(id.chars().all(|c| "0123456789ABCDEFGHJKMNPQRSTVWXYZ".contains(c)));
    assert_eq!(b["receipt_emitted"], true);
    crate::common::set_config(&app, "always", json!({"receipts": "always"})).await;
    let (_, b) = app.post_as("always", "/v1/context", &json!({"subject_id": "u", "task": "t"})).await;
    assert!(b["receipt_id"].is_string());
    crate::common::set_config(&app, "never", json!({"receipts": "never"})).await;
    let (_, b) =
        app.post_as("never", "/v1/context", &json!({"subject_id": "u", "task": "t", "emit_receipt": true})).await;
    assert_eq!(b["receipt_emitted"], false);
}

#[tokio::test]
async fn receipt_body_proves_the_delivered_bytes() {
    let app = spawn().await;
    app.ingest_and_compile("u", &["I work at Globex.", "I use Vim."]).await;
    let b = context_with_receipt(&app, "default", "u", "Where does the user work?").await;
    let (s, r) = app.get(&format!("/v1/receipts/{}", b["receipt_id"].as_str().unwrap())).await;
    assert_eq!(s, 200, "{r}");
    let text = b["assembled_context"].as_str().unwrap();
    assert_eq!(r["output"]["context_hash"], hex::encode(Sha256::digest(text.as_bytes())));
    assert_eq!(r["output"]["context_size_bytes"], text.len());
    assert_eq!(r["output"]["token_estimate"], b["token_estimate"]);
    assert_eq!(r["status"], "active");
    assert_eq!(r["mode"], "retrieval");
    assert_eq!((r["caller_id"].clone(), r["query_id"].clone()), (json!("bot"), json!("q-1")));
    assert_eq!(r["max_tokens"], 500);
    assert_eq!(r["chain"]["seq"], 1);
    let entries = r["selected_entries"].as_array().unwrap();
    let included = b["provenance"]["fact_ids"].as_array().unwrap().len()
        + b["provenance"]["summary_ids"].as_array().unwrap().len()
        + b["provenance"]["episode_ids"].as_array().unwrap().len();
    assert_eq!(entries.len(), included);
    assert_eq!(entries[0]["rank"], 1);
    assert!(r["as_of"].as_str().unwrap().ends_with("+00:00"));
    // Another tenant sees the same 404 as a missing receipt.
    let (s, e) = app.get_as("other", &format!("/v1/receipts/{}", b["receipt_id"].as_str().unwrap())).await;
    assert_eq!((s, e["error"]["message"].clone()), (404, json!("receipt not found")));
    assert_eq!(app.get("/v1/receipts/01ARZ3NDEKTSV4RRFFQ69G5FAV").await.0, 404);
}

#[tokio::test]
async fn list_pages_newest_first() {
    let app = spawn().await;
    app.ingest_and_compile("u", &["I live in Lisbon."]).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(
            context_with_receipt(&app, "default", "u", &format!("task {i}")).await["receipt_id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    ids.reverse();
    let (_, p1) = app.get("/v1/receipts?subject_id=u&limit=2").await;
    let got: Vec<&str> = p1["receipts"].as_array().unwrap().iter().map(|r| r["receipt_id"].as_str().unwrap()).collect();
    assert_eq!(got, ids[..2].to_vec());
    let cursor = p1["next_cursor"].as_str().unwrap();
    let (_, p2) = app.get(&format!("/v1/receipts?subject_id=u&limit=2&cursor={cursor}")).await;
    let got: Vec<&str> = p2["receipts"].as_array().unwrap().iter().map(|r| r["receipt_id"].as_str().unwrap()).collect();
    assert_eq!(got, ids[2..4].to_vec());
    let (_, p3) =
        app.get(&format!("/v1/receipts?subject_id=u&limit=2&cursor={}", p2["next_cursor"].as_str().unwrap())).await;
    assert_eq!(p3["receipts"].as_array().unwrap().len(), 1);
    assert_eq!(p3["next_cursor"], Value::Null);
    let (_, other) = app.get_as("other", "/v1/receipts?subject_id=u").await;
    assert_eq!(other["receipts"], json!([]));
    assert_eq!(app.get("/v1/receipts?subject_id=u&limit=500").await.0, 422);
    assert_eq!(app.get("/v1/receipts?subject_id=u&since=yesterday").await.0, 422);
}

fn keys() -> SigningKeys {
    SigningKeys::parse(r#"{"k1": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}"#).unwrap()
}

async fn signed_app() -> TestApp {
    let embedder = mnemo::embed::build(&mnemo::embed::EmbedderConfig::Hash { dims: 384 }).unwrap();
    let app = spawn_full_with_keys(embedder).await;
    crate::common::set_config(&app, "default", json!({"receipt_signing_key_id": "k1"})).await;
    app
}

async fn spawn_full_with_keys(embedder: std::sync::Arc<dyn mnemo::embed::Embedder>) -> TestApp {
    crate::common::spawn_state(mnemo::RuntimeConfig::default(), embedder, keys()).await
}

#[tokio::test]
async fn signatures_verify_and_tampering_is_detected() {
    let app = signed_app().await;
    app.ingest_and_compile("u", &["I work at Globex."]).await;
    let id = context_with_receipt(&app, "default", "u", "Where does the user work?").await["receipt_id"]
        .as_str()
        .unwrap()
        .to_string();
    let id2 =
        context_with_receipt(&app, "default", "u", "Anything else?").await["receipt_id"].as_str().unwrap().to_string();
    let (_, v) = app.get(&format!("/v1/receipts/{id}/verify")).await;
    assert_eq!((v["valid"].clone(), v["reason"].clone(), v["key_id"].clone()), (json!(true), json!("ok"), json!("k1")));
    let (_, chain) = app.get("/v1/receipts/chain/verify").await;
    assert_eq!((chain["ok"].clone(), chain["checked"].clone()), (json!(true), json!(2)));

    // Edit the stored task text: the signature and the chain both catch it.
    sqlx::query("UPDATE receipts SET body = replace(body, 'Where does the user work?', 'Where does the user live?') WHERE receipt_id = $1")
        .bind(&id)
        .execute(&app.pool)
        .await
        .unwrap();
    let (_, v) = app.get(&format!("/v1/receipts/{id}/verify")).await;
    assert_eq!((v["valid"].clone(), v["reason"].clone()), (json!(false), json!("signature_mismatch")));
    let (_, chain) = app.get("/v1/receipts/chain/verify").await;
    assert_eq!(chain["ok"], false);
    assert_eq!(chain["first_break"]["receipt_id"], json!(id));

    // Rewriting the hash to match the edited body breaks the next link instead.
    let body: String = sqlx::query_scalar("SELECT body FROM receipts WHERE receipt_id = $1")
        .bind(&id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE receipts SET receipt_hash = $2 WHERE receipt_id = $1")
        .bind(&id)
        .bind(hex::encode(Sha256::digest(body.as_bytes())))
        .execute(&app.pool)
        .await
        .unwrap();
    let (_, chain) = app.get("/v1/receipts/chain/verify").await;
    assert_eq!(chain["first_break"]["receipt_id"], json!(id2));
    // An unsigned tenant's receipts say so.
    let (_, b) =
        app.post_as("plain", "/v1/context", &json!({"subject_id": "u", "task": "t", "emit_receipt": true})).await;
    let (_, v) = app.get_as("plain", &format!("/v1/receipts/{}/verify", b["receipt_id"].as_str().unwrap())).await;
    assert_eq!((v["valid"].clone(), v["reason"].clone()), (Value::Null, json!("no_signature")));
}

#[tokio::test]
async fn concurrent_emitters_keep_one_unbroken_chain() {
    let app = spawn().await;
    app.ingest_and_compile("u", &["I live in Lisbon.", "I use Vim."]).await;
    let mut set = tokio::task::JoinSet::new();
    for i in 0..50 {
        let (client, url) = (app.client.clone(), app.url("/v1/context"));
        set.spawn(async move {
            let body = json!({"subject_id": "u", "task": format!("task {i}"), "emit_receipt": true});
            crate::common::split(client.post(url).json(&body).send().await.unwrap()).await
        });
    }
    for (s, b) in set.join_all().await {
        assert_eq!(s, 200);
        assert_eq!(b["receipt_emitted"], true);
    }
    let (_, chain) = app.get("/v1/receipts/chain/verify").await;
    assert_eq!((chain["ok"].clone(), chain["checked"].clone()), (json!(true), json!(50)), "{chain}");
}

#[tokio::test]
async fn replay_reproduces_the_bytes_after_the_history_moved_on() {
    let app = spawn().await;
    app.ingest_and_compile("u", &["I work at Globex.", "I live in Lisbon.", "I use Vim for everything."]).await;
    let b = context_with_receipt(&app, "default", "u", "Where does the user work and live?").await;
    let id = b["receipt_id"].as_str().unwrap().to_string();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    // New episodes, a supersession and new memories since.
    app.ingest_and_compile("u", &["I work at Initech now.", "I live in Berlin.", "I use Emacs too."]).await;
    let (s, r) = app.post(&format!("/v1/receipts/{id}/replay"), &json!({})).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["reproduced"], true, "{r}");
    assert_eq!(r["diff"]["context_hash"]["changed"], false);
    assert_eq!(r["diff"]["selected_entries"]["added"], json!([]));
    let replay_id = r["replay_receipt_id"].as_str().unwrap();
    let (_, rr) = app.get(&format!("/v1/receipts/{replay_id}")).await;
    assert_eq!((rr["mode"].clone(), rr["parent_receipt_id"].clone()), (json!("as_of_replay"), json!(id)));
    // Against today's memories the bundle differs (Statewave's meaning of replay).
    let (_, cur) = app.post(&format!("/v1/receipts/{id}/replay?mode=current"), &json!({})).await;
    assert_eq!(cur["reproduced"], false);
    assert!(!cur["diff"]["selected_entries"]["added"].as_array().unwrap().is_empty());
    // A replay cannot be replayed.
    let (s, e) = app.post(&format!("/v1/receipts/{replay_id}/replay"), &json!({})).await;
    assert_eq!((s, e["error"]["code"].clone()), (422, json!("unreplayable.nested_replay")));
    assert_eq!(app.post("/v1/receipts/NOPE/replay", &json!({})).await.0, 404);
}

#[tokio::test]
async fn erasure_keeps_chain_links_but_no_content() {
    let app = signed_app().await;
    app.ingest_and_compile("gone", &["My name is Ola Nordmann and I live in Bergen."]).await;
    app.ingest_and_compile("kept", &["I live in Oslo."]).await;
    let a = context_with_receipt(&app, "default", "gone", "Who is Ola?").await;
    context_with_receipt(&app, "default", "kept", "Where?").await;
    let r = app.client.delete(app.url("/v1/subjects/gone")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let rows: Vec<(String, String, String)> =
        sqlx::query_as("SELECT subject_id, body, status FROM receipts ORDER BY seq")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(rows.len(), 2);
    let (subject, body, status) = &rows[0];
    assert!(subject.starts_with("erased:") && status == "tombstoned");
    for needle in ["Ola", "Bergen", "gone", "bot"] {
        assert!(!body.contains(needle), "{needle} left in {body}");
    }
    let (_, chain) = app.get("/v1/receipts/chain/verify").await;
    assert_eq!(chain["ok"], true, "{chain}");
    let (s, e) = app.post(&format!("/v1/receipts/{}/replay", a["receipt_id"].as_str().unwrap()), &json!({})).await;
    assert_eq!((s, e["error"]["code"].clone()), (422, json!("unreplayable.tombstoned")));
    let (_, list) = app.get("/v1/receipts?subject_id=gone&include_tombstoned=true").await;
    assert_eq!(list["receipts"], json!([]), "the subject id itself is gone");
}

#[tokio::test]
async fn retention_tombstones_old_receipts_and_the_chain_still_verifies() {
    let app = spawn().await;
    app.ingest_and_compile("u", &["I live in Lisbon."]).await;
    crate::common::set_config(&app, "default", json!({"receipt_retention_days": 30})).await;
    let old = context_with_receipt(&app, "default", "u", "old task").await["receipt_id"].as_str().unwrap().to_string();
    let new = context_with_receipt(&app, "default", "u", "new task").await["receipt_id"].as_str().unwrap().to_string();
    sqlx::query("UPDATE receipts SET created_at = now() - interval '40 days' WHERE receipt_id = $1")
        .bind(&old)
        .execute(&app.pool)
        .await
        .unwrap();
    let n = mnemo::services::receipts::apply_retention(&app.pool).await.unwrap();
    assert_eq!(n, 1);
    let (_, r) = app.get(&format!("/v1/receipts/{old}")).await;
    assert_eq!(r["status"], "tombstoned");
    assert!(r.get("task").is_none() && r["tombstoned_at"].is_string());
    let (_, r) = app.get(&format!("/v1/receipts/{new}")).await;
    assert_eq!(r["status"], "active");
    let (_, list) = app.get("/v1/receipts?subject_id=u").await;
    assert_eq!(list["receipts"].as_array().unwrap().len(), 1);
    let (_, list) = app.get("/v1/receipts?subject_id=u&include_tombstoned=true").await;
    assert_eq!(list["receipts"].as_array().unwrap().len(), 2);
    let (_, chain) = app.get("/v1/receipts/chain/verify").await;
    assert_eq!(chain["ok"], true, "{chain}");
}

#[tokio::test]
async fn audit_verify_command_reports_the_chain() {
    let app = spawn().await;
    app.ingest_and_compile("u", &["I live in Lisbon."]).await;
    context_with_receipt(&app, "default", "u", "where").await;
    // The embedded cluster's socket, or the TCP server of MNEMO_TEST_DATABASE_URL.
    let url = app.database_url();
    let run = || async {
        tokio::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
            .args(["audit", "verify", "--tenant", "default"])
            .env("MNEMO_DATABASE_URL", &url)
            .output()
            .await
            .unwrap()
    };
    let out = run().await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"ok\": true"));
    sqlx::query("UPDATE receipts SET receipt_hash = repeat('0', 64)").execute(&app.pool).await.unwrap();
    sqlx::query("INSERT INTO receipts (tenant_id, receipt_id, subject_id, seq, prev_hash, receipt_hash, mode, context_hash, body) \
                 VALUES ('default', 'X', 'u', 2, 'bad', 'h', 'retrieval', 'c', '{}')")
        .execute(&app.pool)
        .await
        .unwrap();
    assert!(!run().await.status.success());
}
