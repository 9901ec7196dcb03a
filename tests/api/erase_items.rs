//! POST /v1/subjects/{id}/erase: chosen episodes and memories go (with what derives from them
//! and the receipts that showed them), the subject's other rows stay, a certificate proves it,
//! and no server shows the erased text afterwards.
#![allow(clippy::unwrap_used)]

use base64::Engine as _;
use mnemo::RuntimeConfig;
use serde_json::{json, Value};

use crate::common::{spawn_replica, TestApp};

fn signing_keys() -> mnemo::receipts::signing::SigningKeys {
    let key = base64::engine::general_purpose::STANDARD.encode([5u8; 32]);
    mnemo::receipts::signing::SigningKeys::parse(&json!({"ops-1": key}).to_string()).unwrap()
}

async fn spawn_signed(config: RuntimeConfig) -> TestApp {
    let embedder = mnemo::embed::build(&mnemo::embed::EmbedderConfig::Hash { dims: 384 }).unwrap();
    crate::common::spawn_state(config, embedder, signing_keys()).await
}

async fn erase(app: &TestApp, tenant: &str, subject: &str, body: &Value) -> (u16, Value) {
    app.post_as(tenant, &format!("/v1/subjects/{subject}/erase"), body).await
}

/// The subject's episodes (id, text) in the timeline.
async fn episodes(app: &TestApp, tenant: &str, subject: &str) -> Vec<(String, String)> {
    let (_, t) = app.get_as(tenant, &format!("/v1/timeline?subject_id={subject}&limit=100")).await;
    t["episodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["id"].as_str().unwrap().to_string(), e["payload"].to_string()))
        .collect()
}

fn episode_with(eps: &[(String, String)], word: &str) -> String {
    eps.iter().find(|(_, text)| text.contains(word)).map(|(id, _)| id.clone()).unwrap()
}

/// The bundle's text for `task`, without the task itself (the bundle repeats it).
async fn context_text(app: &TestApp, subject: &str, task: &str) -> String {
    let (s, ctx) = app.post("/v1/context", &json!({"subject_id": subject, "task": task})).await;
    assert_eq!(s, 200, "{ctx}");
    ctx["assembled_context"].as_str().unwrap().replace(task, "")
}

async fn rows(app: &TestApp, sql: &str, id: &str) -> i64 {
    sqlx::query_scalar(sql).bind(uuid::Uuid::parse_str(id).unwrap()).fetch_one(&app.pool).await.unwrap()
}

#[tokio::test]
async fn erasing_an_episode_takes_what_derives_from_it_and_certifies_it() {
    let app = spawn_signed(RuntimeConfig::default()).await;
    let s = "user:9";
    app.ingest_and_compile(
        s,
        &["My name is Ola Nordmann and I live in Bergen.", "I work at Globex.", "I work at Initech."],
    )
    .await;
    let (_, with_receipt) = app
        .post("/v1/context", &json!({"subject_id": s, "task": "Where does the user live?", "emit_receipt": true}))
        .await;
    assert!(with_receipt["assembled_context"].as_str().unwrap().contains("Bergen"), "{with_receipt}");
    let eps = episodes(&app, "default", s).await;
    let bergen = episode_with(&eps, "Bergen");
    let derived: Vec<String> = app
        .memories(s)
        .await
        .iter()
        .filter(|m| m["source_episode_ids"].as_array().unwrap().iter().any(|e| e == bergen.as_str()))
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    assert!(!derived.is_empty(), "the episode made memories");
    let memories_before = app.memories(s).await.len();
    assert!(rows(&app, "SELECT count(*) FROM episode_embeddings WHERE episode_id = $1", &bergen).await > 0);

    let (st, b) = erase(&app, "default", s, &json!({"episode_ids": [bergen]})).await;
    assert_eq!(st, 200, "{b}");
    assert_eq!((b["episodes_deleted"].clone(), b["episode_ids"].clone()), (json!(1), json!([bergen])));
    for id in &derived {
        assert!(b["memory_ids"].as_array().unwrap().iter().any(|m| m == id.as_str()), "{b}");
    }
    assert_eq!(b["memories_deleted"], json!(derived.len()));
    assert!(b["receipts_tombstoned"].as_u64().unwrap() >= 1, "{b}");
    let cert = &b["certificate"];
    assert_eq!(cert["certificate_version"], "mnemo-erasure-items-v1");
    assert_eq!(
        (cert["erasure_id"].clone(), cert["signature_key_id"].clone()),
        (b["erasure_id"].clone(), json!("ops-1"))
    );
    assert_eq!(cert["rows_remaining"], 0);
    let printed = cert.to_string();
    assert!(!printed.contains("Bergen") && !printed.contains("Ola") && !printed.contains(s), "{printed}");

    // Gone: the row, its embeddings, its memories; the receipt that showed it is a tombstone.
    assert_eq!(rows(&app, "SELECT count(*) FROM episodes WHERE id = $1", &bergen).await, 0);
    assert_eq!(rows(&app, "SELECT count(*) FROM episode_embeddings WHERE episode_id = $1", &bergen).await, 0);
    assert_eq!(rows(&app, "SELECT count(*) FROM memories WHERE $1 = ANY(source_episode_ids)", &bergen).await, 0);
    let receipt = with_receipt["receipt_id"].as_str().unwrap();
    let body: String = sqlx::query_scalar("SELECT body FROM receipts WHERE receipt_id = $1")
        .bind(receipt)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert!(!body.contains("Bergen") && body.contains("tombstoned"), "{body}");
    let (_, chain) = app.get("/v1/receipts/chain/verify").await;
    assert_eq!(chain["ok"], true, "{chain}");
    assert!(!context_text(&app, s, "Where does the user live? Bergen").await.contains("Bergen"));
    let (_, found) = app.get(&format!("/v1/memories/search?subject_id={s}&q=Bergen")).await;
    assert_eq!(found["memories"], json!([]));

    // The rest of the subject stays.
    assert_eq!(episodes(&app, "default", s).await.len(), 2);
    assert_eq!(app.memories(s).await.len(), memories_before - derived.len());
    assert!(context_text(&app, s, "Where does the user work?").await.contains("Initech"));

    // The certificate reads back, signed.
    let id = b["erasure_id"].as_str().unwrap();
    let (st, got) = app.get(&format!("/v1/erasures/{id}")).await;
    assert_eq!(st, 200, "{got}");
    assert_eq!(&got["certificate"], cert);
    assert_eq!(got["signature_check"], json!({"valid": true, "reason": "ok"}));
    let (st, _) = app.get_as("globex", &format!("/v1/erasures/{id}")).await;
    assert_eq!(st, 404, "another tenant cannot read it");
}

#[tokio::test]
async fn erasing_a_memory_takes_its_supersession_records_only() {
    let app = spawn_signed(RuntimeConfig::default()).await;
    let s = "user:10";
    app.ingest_and_compile(s, &["Hi! I work at Globex and my name is Dana Reyes."]).await;
    app.ingest_and_compile(s, &["Quick update: I work at Initech now, I started last week."]).await;
    let all = app.memories(s).await;
    let fact = |m: &&Value, word: &str| m["kind"] == "profile_fact" && m["content"].as_str().unwrap().contains(word);
    let initech = all.iter().find(|m| fact(m, "Initech")).unwrap();
    let id = initech["id"].as_str().unwrap().to_string();
    let naming =
        "SELECT count(*) FROM supersession_records WHERE superseded_memory_id = $1 OR superseding_memory_id = $1";
    assert!(rows(&app, naming, &id).await > 0, "Initech superseded Globex");

    let (st, b) = erase(&app, "default", s, &json!({"memory_ids": [id]})).await;
    assert_eq!(st, 200, "{b}");
    assert_eq!((b["memories_deleted"].clone(), b["episodes_deleted"].clone()), (json!(1), json!(0)));
    assert_eq!(rows(&app, "SELECT count(*) FROM memories WHERE id = $1", &id).await, 0);
    assert_eq!(rows(&app, naming, &id).await, 0);
    // The log is untouched; the older value stays superseded (erasure brings no belief back).
    assert_eq!(episodes(&app, "default", s).await.len(), 2);
    let left = app.memories(s).await;
    let globex = left.iter().find(|m| fact(m, "Globex")).unwrap();
    assert_eq!(globex["status"], "superseded", "{globex}");
}

#[tokio::test]
async fn ids_the_subject_does_not_have_erase_nothing() {
    let app = crate::common::spawn().await;
    app.ingest_and_compile("mine", &["I live in Oslo."]).await;
    app.ingest_and_compile("theirs", &["I live in Rome."]).await;
    app.post_as("acme", "/v1/episodes", &crate::common::episode("mine", "I live in Lima.")).await;
    let mine = episode_with(&episodes(&app, "default", "mine").await, "Oslo");
    let theirs = episode_with(&episodes(&app, "default", "theirs").await, "Rome");
    let other_tenant = episode_with(&episodes(&app, "acme", "mine").await, "Lima");
    let never = "01890a5d-ac96-774b-bcce-b302099a8057";

    for (ids, missing) in [
        (json!({"episode_ids": [mine, theirs]}), theirs.clone()),
        (json!({"episode_ids": [mine, other_tenant]}), other_tenant.clone()),
        (json!({"episode_ids": [mine], "memory_ids": [never]}), never.to_string()),
    ] {
        let (st, b) = erase(&app, "default", "mine", &ids).await;
        assert_eq!(st, 404, "{b}");
        assert!(b["error"]["message"].as_str().unwrap().contains(&missing), "{b}");
        assert!(b["error"]["message"].as_str().unwrap().contains("Nothing was erased"), "{b}");
    }
    for (body, why) in [
        (json!({}), "no ids"),
        (json!({"episode_ids": [], "memory_ids": []}), "no ids"),
        (json!({"episode_ids": ["not-a-uuid"]}), "a bad id"),
        (json!({"episode_ids": [mine], "other": 1}), "an unknown field"),
    ] {
        let (st, b) = erase(&app, "default", "mine", &body).await;
        assert_eq!(st, 422, "{why}: {b}");
    }
    // Nothing went anywhere.
    assert_eq!(episodes(&app, "default", "mine").await.len(), 1);
    assert_eq!(episodes(&app, "default", "theirs").await.len(), 1);
    assert_eq!(episodes(&app, "acme", "mine").await.len(), 1);
    assert_eq!(app.count("erasures").await, 0);
}

/// Two servers on one database, both holding a copy of the subject: after an erasure through
/// one, the next call on either shows none of the erased text.
#[tokio::test]
async fn no_server_shows_erased_text_after_the_erasure() {
    let a = crate::common::spawn().await;
    let b = spawn_replica(&a, RuntimeConfig::default()).await;
    let s = "kept-twice";
    a.ingest_and_compile(s, &["I like rooibos tea.", "My favourite colour is teal.", "We planted tulips."]).await;
    let task = "What does the user like: rooibos tea, teal, tulips?";
    for app in [&a, &b] {
        let text = context_text(app, s, task).await;
        assert!(text.contains("rooibos") && text.contains("tulips"), "{text}");
        assert!(app.subjects.get("default", s).is_some(), "a small subject is kept after a call");
    }
    let eps = episodes(&a, "default", s).await;
    // One episode with its memories, one without any (a plain turn), through server a.
    let rooibos = episode_with(&eps, "rooibos");
    let tulips = episode_with(&eps, "tulips");
    let (st, body) = erase(&a, "default", s, &json!({"episode_ids": [rooibos, tulips]})).await;
    assert_eq!(st, 200, "{body}");
    for app in [&b, &a] {
        let text = context_text(app, s, task).await;
        assert!(!text.contains("rooibos") && !text.contains("tulips"), "{text}");
        assert!(text.contains("teal"), "{text}");
    }
}

#[tokio::test]
async fn an_item_erasure_is_announced_without_content() {
    use mnemo::services::webhooks::WebhookConfig;
    // A receiver that never answers: the event stays queued, where it is read.
    let hooks = WebhookConfig {
        url: Some("http://127.0.0.1:9/hook".into()),
        backoff_base: std::time::Duration::from_secs(3600),
        ..WebhookConfig::default()
    };
    let app = crate::common::spawn_with(RuntimeConfig { webhooks: hooks, ..RuntimeConfig::default() }).await;
    app.ingest_and_compile("hooked", &["I live in Bergen."]).await;
    let bergen = episode_with(&episodes(&app, "default", "hooked").await, "Bergen");
    let (st, b) = erase(&app, "default", "hooked", &json!({"episode_ids": [bergen]})).await;
    assert_eq!(st, 200, "{b}");
    let payload: Value =
        sqlx::query_scalar("SELECT payload FROM webhook_events WHERE event = 'items.erased' AND subject_id = 'hooked'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(payload["erasure_id"], b["erasure_id"]);
    assert_eq!(payload["episodes_deleted"], 1);
    assert!(!payload.to_string().contains("Bergen"), "{payload}");
}

/// A long episode's passages (compile writes them, the worker embeds them) go with it.
#[tokio::test]
async fn erasing_a_long_episode_takes_its_passages() {
    let app = spawn_signed(RuntimeConfig::default()).await;
    let long = "I keep notes on every trip I take, with the trains and the hotels and what I ate. ".repeat(12);
    app.ingest_and_compile("traveller", &[long.as_str(), "I live in Oslo."]).await;
    let count = |sql: &'static str| sqlx::query_scalar::<_, i64>(sql);
    let passages = count("SELECT count(*) FROM episode_passages").fetch_one(&app.pool).await.unwrap();
    assert!(passages >= 1, "a {}-char episode has passages", long.len());
    let eps = episodes(&app, "default", "traveller").await;
    let id = episode_with(&eps, "trains");
    let (s, b) = erase(&app, "default", "traveller", &json!({"episode_ids": [id]})).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(count("SELECT count(*) FROM episode_passages").fetch_one(&app.pool).await.unwrap(), 0);
    assert_eq!(b["certificate"]["rows_remaining"], 0, "{b}");
}
