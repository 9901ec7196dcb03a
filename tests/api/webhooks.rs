//! Webhooks: a real receiver on 127.0.0.1 records what mnemo POSTs; events fire only for
//! committed changes, are signed, retried, dead-lettered, shared by replicas, and erased.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::TestApp;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use mnemo::services::webhooks::signature::verify;
use mnemo::services::webhooks::{Secret, WebhookConfig, WebhookEvent, Webhooks};
use mnemo::RuntimeConfig;
use serde_json::{json, Value};

const SECRET: &str = "whsec-test-0123456789";

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Seen {
    event: String,
    delivery: String,
    attempt: String,
    signature: Option<String>,
    content_type: String,
    raw: Vec<u8>,
    body: Value,
}

#[derive(Clone, Default)]
struct Receiver {
    seen: Arc<Mutex<Vec<Seen>>>,
    /// Statuses to answer, in order; 200 once used up.
    script: Arc<Mutex<VecDeque<u16>>>,
    url: String,
}

async fn hook(State(r): State<Receiver>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let h = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    r.seen.lock().unwrap().push(Seen {
        event: h("x-mnemo-event").unwrap_or_default(),
        delivery: h("x-mnemo-delivery").unwrap_or_default(),
        attempt: h("x-mnemo-attempt").unwrap_or_default(),
        signature: h("x-mnemo-signature"),
        content_type: h("content-type").unwrap_or_default(),
        raw: body.to_vec(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let status = r.script.lock().unwrap().pop_front().unwrap_or(200);
    StatusCode::from_u16(status).unwrap()
}

async fn receiver(script: &[u16]) -> Receiver {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let r = Receiver {
        url: format!("http://{}/hooks/mnemo", listener.local_addr().unwrap()),
        script: Arc::new(Mutex::new(script.iter().copied().collect())),
        ..Receiver::default()
    };
    let app = axum::Router::new().route("/hooks/mnemo", axum::routing::post(hook)).with_state(r.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    r
}

impl Receiver {
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn hooks(url: &str) -> WebhookConfig {
    WebhookConfig {
        url: Some(url.to_string()),
        secret: Secret::new(SECRET),
        timeout: Duration::from_secs(3),
        backoff_base: Duration::from_millis(20),
        poll_interval: Duration::from_millis(50),
        ..WebhookConfig::default()
    }
}

async fn spawn_hooked(config: WebhookConfig) -> TestApp {
    crate::common::spawn_with(RuntimeConfig { webhooks: config, ..RuntimeConfig::default() }).await
}

/// Polls until `f` holds (10 s at most).
async fn eventually<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// (status, attempts, http_status, last_error) of every stored event, by event name.
async fn rows(app: &TestApp) -> Vec<(String, String, i32, Option<i32>, Option<String>)> {
    sqlx::query_as(
        "SELECT event, status, attempts, http_status, last_error FROM webhook_events ORDER BY created_at, id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

async fn delete(app: &TestApp, subject: &str) -> Value {
    let r = app.client.delete(app.url(&format!("/v1/subjects/{subject}"))).send().await.unwrap();
    let (s, b) = crate::common::split(r).await;
    assert_eq!(s, 200, "{b}");
    b
}

#[tokio::test]
async fn committed_changes_fire_signed_events_and_repeats_fire_nothing() {
    let rx = receiver(&[]).await;
    let app = spawn_hooked(hooks(&rx.url)).await;

    let mut ep = crate::common::episode("user:1", "My name is Dana Reyes and I work at Globex.");
    ep["idempotency_key"] = json!("k-1");
    let (s, created) = app.post("/v1/episodes", &ep).await;
    assert_eq!(s, 201, "{created}");
    let (s, _) = app.post("/v1/episodes", &ep).await;
    assert_eq!(s, 200, "an idempotent repeat");
    let mut batch: Vec<Value> =
        vec![crate::common::episode("user:2", "I live in Oslo."), crate::common::episode("user:1", "I use Rust.")];
    batch.push(ep.clone());
    let (s, b) = app.post("/v1/episodes/batch", &json!({"episodes": batch})).await;
    assert_eq!((s, b["episodes_created"].clone()), (201, json!(2)));
    let (s, b) = app.post("/v1/episodes/batch", &json!({"episodes": [ep]})).await;
    assert_eq!((s, b["episodes_created"].clone()), (201, json!(0)), "a batch of repeats creates nothing");
    let compiled = app.compile_all("user:1").await;
    app.compile_all("user:1").await;
    // Erasure would strip user:2 from a batch event still queued; let that one go out first.
    eventually("three deliveries", || async { rx.seen().len() >= 3 }).await;
    let erased = delete(&app, "user:2").await;
    delete(&app, "never-existed").await;

    eventually("four deliveries", || async { rx.seen().len() >= 4 }).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let seen = rx.seen();
    let mut names: Vec<&str> = seen.iter().map(|s| s.event.as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["episode.created", "episodes.batch_created", "memories.compiled", "subject.deleted"],
        "exactly one event per committed change (the repeats, the empty compile and the no-op delete fire none)"
    );
    let by_name: BTreeMap<&str, &Seen> = seen.iter().map(|s| (s.event.as_str(), s)).collect();
    let data = |name: &str| by_name[name].body["data"].clone();
    assert_eq!(data("episode.created"), json!({"id": created["id"], "subject_id": "user:1"}));
    assert_eq!(data("episodes.batch_created"), json!({"count": 2, "subject_ids": ["user:1", "user:2"]}));
    assert_eq!(data("memories.compiled"), json!({"subject_id": "user:1", "memories_created": compiled.len()}));
    assert_eq!(
        data("subject.deleted"),
        json!({"subject_id": "user:2", "episodes_deleted": 1, "memories_deleted": 0, "erasure_id": erased["erasure_id"]})
    );
    let now = chrono::Utc::now().timestamp();
    for s in &seen {
        assert_eq!(s.body["event"], s.event);
        assert_eq!(s.body["id"], s.delivery, "X-Mnemo-Delivery is the event id");
        assert_eq!(s.body["tenant_id"], "default");
        assert!(s.body["timestamp"].as_str().unwrap().ends_with('Z'));
        assert_eq!((s.attempt.as_str(), s.content_type.as_str()), ("1", "application/json"));
        let sig = s.signature.as_deref().expect("signed");
        assert_eq!(verify(SECRET.as_bytes(), sig, &s.raw, now, 300), Ok(()), "{sig}");
        assert!(verify(b"wrong secret", sig, &s.raw, now, 300).is_err());
    }
    eventually("every event marked delivered", || async {
        rows(&app).await.iter().all(|r| r.1 == "delivered" && r.2 == 1 && r.3 == Some(200))
    })
    .await;
}

#[tokio::test]
async fn single_ingests_written_together_announce_each_new_episode_once() {
    use crate::common::{episode, hold_counter, send_all, until_queued};
    let rx = receiver(&[]).await;
    let app = spawn_hooked(hooks(&rx.url)).await;
    // One lane (the default): the writes queued behind the held counter go in one statement.
    let lock = hold_counter(&app, "user:g").await;
    let first = send_all(&app, vec![episode("user:g", "alone")]);
    until_queued(&app, 0).await;
    let mut keyed = episode("user:g", "keyed");
    keyed["idempotency_key"] = json!("k");
    let queued = send_all(&app, vec![episode("user:g", "a"), episode("user:h", "b"), keyed.clone(), keyed]);
    until_queued(&app, 4).await;
    lock.commit().await.unwrap();
    let mut created = Vec::new();
    for handle in first.into_iter().chain(queued) {
        let (status, row) = handle.await.unwrap();
        if status == 201 {
            created.push(row["id"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(created.len(), 4, "alone, a, b and the first keyed write");
    // The held counter's first write announced itself too.
    eventually("five deliveries", || async { rx.seen().len() >= 5 }).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let seen = rx.seen();
    assert_eq!(seen.len(), 5, "one event per new episode, none for the repeat");
    assert!(seen.iter().all(|s| s.event == "episode.created"));
    let announced: std::collections::BTreeSet<String> =
        seen.iter().map(|s| s.body["data"]["id"].as_str().unwrap().to_string()).collect();
    assert!(created.iter().all(|id| announced.contains(id)), "{created:?} in {announced:?}");
}

#[tokio::test]
async fn the_allowlist_and_an_unset_url_keep_events_out_of_the_outbox() {
    let rx = receiver(&[]).await;
    let only_deletes = WebhookConfig { events: vec![WebhookEvent::SubjectDeleted], ..hooks(&rx.url) };
    let app = spawn_hooked(only_deletes).await;
    app.ingest_and_compile("u", &["I live in Bergen."]).await;
    delete(&app, "u").await;
    eventually("the deletion event", || async { !rx.seen().is_empty() }).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let names: Vec<String> = rx.seen().iter().map(|s| s.event.clone()).collect();
    assert_eq!(names, ["subject.deleted"]);

    let off = crate::common::spawn().await;
    off.ingest_and_compile("u", &["I live in Bergen."]).await;
    delete(&off, "u").await;
    assert_eq!(off.count("webhook_events").await, 0, "webhooks off: nothing is queued");
}

#[tokio::test]
async fn server_errors_are_retried_until_delivered() {
    let rx = receiver(&[500, 503, 429]).await;
    let app = spawn_hooked(hooks(&rx.url)).await;
    app.post("/v1/episodes", &crate::common::episode("u", "hello")).await;
    eventually("delivery after three failures", || async {
        rows(&app).await.first().is_some_and(|r| r.1 == "delivered")
    })
    .await;
    let seen = rx.seen();
    let attempts: Vec<&str> = seen.iter().map(|s| s.attempt.as_str()).collect();
    assert_eq!(attempts, ["1", "2", "3", "4"]);
    assert!(seen.iter().all(|s| s.delivery == seen[0].delivery && s.raw == seen[0].raw), "the same event each time");
    assert_eq!(rows(&app).await[0], ("episode.created".into(), "delivered".into(), 4, Some(200), None));
}

#[tokio::test]
async fn a_permanent_refusal_dead_letters_at_once_and_an_operator_can_retry_it() {
    let rx = receiver(&[400]).await;
    let app = spawn_hooked(hooks(&rx.url)).await;
    app.post("/v1/episodes", &crate::common::episode("u", "hello")).await;
    eventually("dead letter", || async { rows(&app).await.first().is_some_and(|r| r.1 == "dead_letter") }).await;
    assert_eq!(
        rows(&app).await[0],
        ("episode.created".into(), "dead_letter".into(), 1, Some(400), Some("HTTP 400".into()))
    );
    assert_eq!(rx.seen().len(), 1, "no second attempt");

    let (s, stats) = app.get("/admin/webhooks/stats").await;
    assert_eq!(s, 200, "{stats}");
    assert_eq!(stats["counts"], json!({"pending": 0, "delivered": 0, "dead_letter": 1}));
    assert_eq!((stats["enabled"].clone(), stats["signed"].clone()), (json!(true), json!(true)));
    assert!(!stats.to_string().contains(&rx.url) && !stats.to_string().contains(SECRET));
    let (s, page) = app.get("/admin/webhooks?status=dead_letter").await;
    assert_eq!(s, 200, "{page}");
    let listed = &page["events"][0];
    assert_eq!((listed["event"].clone(), listed["http_status"].clone()), (json!("episode.created"), json!(400)));
    assert!(listed.get("data").is_none(), "listings carry no payloads");
    let id = listed["id"].as_str().unwrap();
    let (_, one) = app.get(&format!("/admin/webhooks/{id}")).await;
    assert_eq!(one["data"]["subject_id"], "u");
    let (s, none) = app.get("/admin/webhooks?status=pending").await;
    assert_eq!((s, none["events"].clone()), (200, json!([])));
    let (s, _) = app.get("/admin/webhooks?status=lost").await;
    assert_eq!(s, 422);

    let (s, again) = app.post(&format!("/admin/webhooks/{id}/retry"), &json!({})).await;
    assert_eq!((s, again["status"].clone()), (200, json!("pending")), "{again}");
    eventually("delivery after the retry", || async { rows(&app).await[0].1 == "delivered" }).await;
    let (s, refused) = app.post(&format!("/admin/webhooks/{id}/retry"), &json!({})).await;
    assert_eq!((s, refused["error"]["code"].clone()), (409, json!("not_retryable")));
    let (s, _) = app.post("/admin/webhooks/01ARZ3NDEKTSV4RRFFQ69G5FAV/retry", &json!({})).await;
    assert_eq!(s, 404);
}

#[tokio::test]
async fn an_unreachable_receiver_dead_letters_after_max_attempts() {
    // A port bound but never listened on: connections are refused, and no other process can
    // take the port while the test runs (a port merely freed was once reused by a parallel test,
    // which then answered the hook with a 404).
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let url = format!("http://{}/hook?token=abc", socket.local_addr().unwrap());
    let app = spawn_hooked(WebhookConfig { backoff_base: Duration::from_millis(10), ..hooks(&url) }).await;
    app.post("/v1/episodes", &crate::common::episode("u", "hello")).await;
    eventually("dead letter", || async { rows(&app).await.first().is_some_and(|r| r.1 == "dead_letter") }).await;
    let (_, status, attempts, http, error) = rows(&app).await.remove(0);
    assert_eq!((status.as_str(), attempts, http), ("dead_letter", 5, None), "{error:?}");
    let error = error.unwrap();
    assert!(error.starts_with("transport error"), "{error}");
    assert!(!error.contains("token") && !error.contains("127.0.0.1"), "no URL in stored errors: {error}");
    drop(socket);
}

#[tokio::test]
async fn an_event_exists_only_if_its_transaction_commits() {
    let rx = receiver(&[]).await;
    let config = hooks(&rx.url);
    let app = spawn_hooked(config.clone()).await;
    let outbox = Webhooks::new(&config);
    let degraded = |subject: &str| json!({"subject_id": subject, "state": "at_risk"});
    let mut tx = mnemo::db::scope::begin(&app.app_pool, "default").await.unwrap();
    outbox.enqueue(&mut tx, "default", WebhookEvent::SubjectHealthDegraded, degraded("rolled-back")).await.unwrap();
    tx.rollback().await.unwrap();
    let mut tx = mnemo::db::scope::begin(&app.app_pool, "default").await.unwrap();
    outbox.enqueue(&mut tx, "default", WebhookEvent::SubjectHealthDegraded, degraded("committed")).await.unwrap();
    tx.commit().await.unwrap();

    eventually("the committed event", || async { !rx.seen().is_empty() }).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let seen = rx.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].body["data"], json!({"subject_id": "committed", "state": "at_risk"}));
    assert_eq!(app.count("webhook_events").await, 1);
}

#[tokio::test]
async fn two_replicas_deliver_each_event_exactly_once() {
    let rx = receiver(&[]).await;
    let config = WebhookConfig { poll_interval: Duration::from_millis(10), ..hooks(&rx.url) };
    let a = spawn_hooked(config.clone()).await;
    let b = crate::common::spawn_replica(&a, RuntimeConfig { webhooks: config, ..RuntimeConfig::default() }).await;
    let mut sent = 0;
    for i in 0..30 {
        let app = if i % 2 == 0 { &a } else { &b };
        let (s, _) =
            app.post("/v1/episodes", &crate::common::episode(&format!("u{}", i % 3), &format!("note {i}"))).await;
        assert_eq!(s, 201);
        sent += 1;
    }
    eventually("every event", || async { rx.seen().len() >= sent }).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let seen = rx.seen();
    let mut ids: Vec<&str> = seen.iter().map(|s| s.delivery.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!((seen.len(), ids.len()), (sent, sent), "each event delivered once");
    assert!(rows(&a).await.iter().all(|r| r.1 == "delivered" && r.2 == 1));
}

#[tokio::test]
async fn erasure_leaves_no_webhook_row_naming_the_subject() {
    // The first two deliveries fail and wait ten minutes: those events are still queued when
    // the subject is erased.
    let rx = receiver(&[503, 503]).await;
    let app = spawn_hooked(WebhookConfig { backoff_base: Duration::from_secs(600), ..hooks(&rx.url) }).await;
    app.post("/v1/episodes", &crate::common::episode("gone", "My name is Ola.")).await;
    let batch = json!({"episodes": [crate::common::episode("gone", "I live in Bergen."), crate::common::episode("kept", "I use Go.")]});
    app.post("/v1/episodes/batch", &batch).await;
    eventually("two failed attempts", || async { rx.seen().len() == 2 }).await;

    delete(&app, "gone").await;
    eventually("the deletion delivered", || async { rx.seen().len() == 3 }).await;
    let deleted = rx.seen().pop().unwrap();
    assert_eq!(
        (deleted.event.as_str(), deleted.body["data"]["subject_id"].clone()),
        ("subject.deleted", json!("gone"))
    );
    eventually("the deletion recorded", || async {
        rows(&app).await.iter().any(|r| r.0 == "subject.deleted" && r.1 == "delivered")
    })
    .await;

    assert!(app.subject_rows("default", "gone").await.iter().all(|(_, n)| *n == 0));
    let left: Vec<(String, Option<String>, Option<Value>)> =
        sqlx::query_as("SELECT event, subject_id, payload FROM webhook_events ORDER BY created_at")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        left,
        vec![
            ("episodes.batch_created".into(), None, Some(json!({"count": 2, "subject_ids": ["kept"]}))),
            ("subject.deleted".into(), None, None),
        ],
        "the subject's own event is gone, the shared batch event forgot it, the deletion kept no payload"
    );
}

#[tokio::test]
async fn health_transitions_are_announced_once() {
    let r = receiver(&[]).await;
    let app = spawn_hooked(hooks(&r.url)).await;
    let say = |session: &'static str, text: &'static str| {
        let app = &app;
        async move {
            let body = serde_json::json!({"subject_id": "h", "source": "chat", "type": "message", "session_id": session,
                                          "payload": {"messages": [{"role": "user", "content": text}]}});
            assert_eq!(app.post("/v1/episodes", &body).await.0, 201);
        }
    };
    say("a", "hello").await;
    assert_eq!(app.get("/v1/subjects/h/health").await.1["state"], "healthy");
    say("b", "This is urgent, the site is down").await;
    say("c", "Please answer immediately").await;
    let (_, h) = app.get("/v1/subjects/h/health").await;
    assert_ne!(h["state"], "healthy", "{h}");
    app.get("/v1/subjects/h/health").await; // same state again: nothing new
    for s in ["a", "b", "c"] {
        let body = serde_json::json!({"subject_id": "h", "session_id": s, "status": "resolved"});
        assert_eq!(app.post("/v1/resolutions", &body).await.0, 200);
    }
    assert_eq!(app.get("/v1/subjects/h/health").await.1["state"], "healthy");
    eventually("two health events", || async {
        r.seen().iter().filter(|s| s.event.starts_with("subject.health_")).count() >= 2
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut health: Vec<Seen> = r.seen().into_iter().filter(|s| s.event.starts_with("subject.health_")).collect();
    // A claimed batch is delivered concurrently, so arrival order is not the events' order:
    // receivers order by `timestamp` (fixed-width microseconds, so text order is time order).
    health.sort_by(|a, b| a.body["timestamp"].as_str().cmp(&b.body["timestamp"].as_str()));
    let names: Vec<&str> = health.iter().map(|s| s.event.as_str()).collect();
    assert_eq!(names, ["subject.health_degraded", "subject.health_improved"]);
    assert_eq!(health[0].body["data"]["subject_id"], "h");
    assert_eq!(health[0].body["data"]["previous_state"], "healthy");
    assert_eq!(health[1].body["data"]["state"], "healthy");
}
