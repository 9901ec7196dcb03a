//! Support sessions through HTTP: resolutions, SLA, health (and its transition cache), handoff
//! briefs with receipts and policy, and their erasure.
#![allow(clippy::unwrap_used)]

use crate::common::{spawn, TestApp};
use chrono::{Duration, SecondsFormat, Utc};
use serde_json::{json, Value};

/// `minutes` before one instant fixed for the whole test process, to the second: the gaps between
/// a test's turns are exact even when its requests straddle a second (each call reading the
/// clock made "2 minutes" 121 s now and then). Later tests' turns only come out a little older.
fn ago(minutes: i64) -> String {
    static BASE: std::sync::OnceLock<chrono::DateTime<Utc>> = std::sync::OnceLock::new();
    (*BASE.get_or_init(Utc::now) - Duration::minutes(minutes)).to_rfc3339_opts(SecondsFormat::Secs, true)
}

async fn say(app: &TestApp, tenant: &str, subject: &str, session: &str, role: &str, text: &str, minutes_ago: i64) {
    let body = json!({"subject_id": subject, "source": "chat", "type": "message", "session_id": session,
                      "occurred_at": ago(minutes_ago), "payload": {"messages": [{"role": role, "content": text}]}});
    let (s, b) = app.post_as(tenant, "/v1/episodes", &body).await;
    assert_eq!(s, 201, "{b}");
}

async fn resolve(app: &TestApp, tenant: &str, body: Value) -> Value {
    let (s, b) = app.post_as(tenant, "/v1/resolutions", &body).await;
    assert_eq!(s, 200, "{b}");
    b
}

#[tokio::test]
async fn resolutions_upsert_and_list() {
    let app = spawn().await;
    let first = resolve(&app, "t", json!({"subject_id": "u", "session_id": "s1"})).await;
    assert_eq!(first["status"], "open");
    assert!(first["resolved_at"].is_null());
    assert_eq!(first["metadata"], json!({}));
    let done = resolve(
        &app,
        "t",
        json!({"subject_id": "u", "session_id": "s1", "status": "resolved",
        "resolution_summary": "Reset the password", "metadata": {"agent": "a7"}}),
    )
    .await;
    assert_eq!(done["id"], first["id"], "one row per session");
    assert!(done["resolved_at"].is_string());
    let again = resolve(&app, "t", json!({"subject_id": "u", "session_id": "s1", "status": "resolved"})).await;
    assert_eq!(again["resolved_at"], done["resolved_at"], "staying resolved keeps the time");
    assert_eq!(again["resolution_summary"], "Reset the password", "a summary left out is kept");
    assert_eq!(again["metadata"], json!({"agent": "a7"}));
    resolve(&app, "t", json!({"subject_id": "u", "session_id": "s2", "status": "unresolved"})).await;

    let (s, list) = app.get_as("t", "/v1/resolutions?subject_id=u").await;
    assert_eq!(s, 200);
    let sessions: Vec<&str> = list.as_array().unwrap().iter().map(|r| r["session_id"].as_str().unwrap()).collect();
    assert_eq!(sessions, ["s2", "s1"], "a bare array, most recently updated first");
    let (_, only) = app.get_as("t", "/v1/resolutions?subject_id=u&status=resolved&limit=1").await;
    assert_eq!(only.as_array().unwrap().len(), 1);
    let (_, other) = app.get_as("other", "/v1/resolutions?subject_id=u").await;
    assert_eq!(other, json!([]));

    for bad in [
        json!({"subject_id": "u", "session_id": "s", "status": "closed"}),
        json!({"subject_id": "u", "session_id": ""}),
        json!({"subject_id": "u", "session_id": "s", "resolution_summary": "x".repeat(2001)}),
        json!({"subject_id": "u", "session_id": "s", "metadata": []}),
    ] {
        let (s, b) = app.post_as("t", "/v1/resolutions", &bad).await;
        assert_eq!(s, 422, "{bad} -> {b}");
    }
    for q in ["", "?subject_id=u&limit=201", "?subject_id=u&status=closed"] {
        let (s, _) = app.get_as("t", &format!("/v1/resolutions{q}")).await;
        assert_eq!(s, 422, "{q}");
    }
}

#[tokio::test]
async fn sla_and_health_follow_the_sessions() {
    let app = spawn().await;
    // Resolved session: answered after 2 minutes, resolved.
    say(&app, "t", "u", "old", "user", "My invoice payment failed with the card", 600).await;
    say(&app, "t", "u", "old", "assistant", "I retried the card payment for you", 598).await;
    resolve(&app, "t", json!({"subject_id": "u", "session_id": "old", "status": "resolved"})).await;
    let (s, h) = app.get_as("t", "/v1/subjects/u/health").await;
    assert_eq!(s, 200, "{h}");
    assert_eq!((h["score"].clone(), h["state"].clone()), (json!(100), json!("healthy")), "{h}");

    // A new session repeats the issue, urgently, and waits 30 minutes without an answer.
    say(&app, "t", "u", "new", "user", "Invoice card payment failed again, this is urgent", 30).await;
    let (_, sla) = app.get_as("t", "/v1/subjects/u/sla").await;
    assert_eq!((sla["total_sessions"].clone(), sla["open_sessions"].clone()), (json!(2), json!(1)), "{sla}");
    let new = sla["sessions"].as_array().unwrap().iter().find(|s| s["session_id"] == "new").unwrap();
    assert_eq!(new["status"], "open");
    assert!(new["first_response_at"].is_null());
    assert_eq!(new["first_response_breached"], true, "30 minutes without an answer");
    let old = sla["sessions"].as_array().unwrap().iter().find(|s| s["session_id"] == "old").unwrap();
    assert_eq!(old["first_response_seconds"], 120.0);
    assert!(old["first_message_at"].as_str().unwrap().ends_with("+00:00"));
    let (_, lenient) = app.get_as("t", "/v1/subjects/u/sla?first_response_threshold_minutes=45").await;
    assert_eq!(lenient["first_response_breach_count"], 0);
    let (s, _) = app.get_as("t", "/v1/subjects/u/sla?resolution_threshold_hours=abc").await;
    assert_eq!(s, 422);

    let (_, h) = app.get_as("t", "/v1/subjects/u/health").await;
    let signals: Vec<&str> = h["factors"].as_array().unwrap().iter().map(|f| f["signal"].as_str().unwrap()).collect();
    assert!(
        signals.contains(&"repeat_issue") && signals.contains(&"urgency") && signals.contains(&"open_sessions"),
        "{h}"
    );
    assert!(h["score"].as_i64().unwrap() < 70, "{h}");
    assert!(h["factors"].as_array().unwrap().iter().all(|f| f["impact"].is_i64()));
    // The transition was recorded once: the cache holds the new state.
    let cached: (String, i32) =
        sqlx::query_as("SELECT last_state, last_score FROM subject_health_cache WHERE subject_id = 'u'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(cached.0, h["state"].as_str().unwrap());

    // Nothing recorded: healthy, and no cache row is created by looking.
    let (_, empty) = app.get_as("t", "/v1/subjects/nobody/health").await;
    assert_eq!(empty, json!({"subject_id": "nobody", "score": 100, "state": "healthy", "factors": []}));
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM subject_health_cache WHERE subject_id = 'nobody'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n, 0);
}

async fn support_story(app: &TestApp, tenant: &str) {
    for t in ["My name is Kari Nordmann.", "I live in Bergen.", "I work at Globex."] {
        say(app, tenant, "cust", "intro", "user", t, 3000).await;
    }
    resolve(
        app,
        tenant,
        json!({"subject_id": "cust", "session_id": "intro", "status": "resolved",
        "resolution_summary": "Onboarded"}),
    )
    .await;
    say(app, tenant, "cust", "now", "user", "The dashboard shows no data since this morning", 20).await;
    say(app, tenant, "cust", "now", "assistant", "I asked you to clear the browser cache", 18).await;
    say(app, tenant, "cust", "now", "assistant", "I checked the ingestion service status", 15).await;
    let (s, b) = app.post_as(tenant, "/v1/memories/compile", &json!({"subject_id": "cust"})).await;
    assert_eq!(s, 200, "{b}");
}

#[tokio::test]
async fn handoff_brief_with_receipt() {
    let app = spawn().await;
    support_story(&app, "t").await;
    let (s, h) = app
        .post_as("t", "/v1/handoff", &json!({"subject_id": "cust", "session_id": "now", "emit_receipt": true}))
        .await;
    assert_eq!(s, 200, "{h}");
    assert_eq!(h["reason"], "escalation");
    assert!(h["generated_at"].is_string());
    assert_eq!(h["active_issue"], "The dashboard shows no data since this morning");
    assert_eq!(h["attempted_steps"].as_array().unwrap().len(), 2);
    let facts = h["key_facts"].to_string();
    assert!(facts.contains("Bergen") && facts.contains("Globex"), "{h}");
    assert!(h["customer_summary"].as_str().unwrap().contains("Kari"), "{h}");
    assert_eq!(h["resolution_history"][0]["session_id"], "intro");
    assert_eq!(h["recent_context"].as_array().unwrap().len(), 3);
    assert!(h["health_score"].is_i64() && h["health_state"].is_string());
    let notes = h["handoff_notes"].as_str().unwrap();
    assert!(notes.starts_with("# Handoff Brief — cust"), "{notes}");
    for section in
        ["## Customer Health", "## SLA Status", "## What Has Been Tried", "## Previously Resolved", "## Key Facts"]
    {
        assert!(notes.contains(section), "{section} missing");
    }
    assert_eq!(h["receipt_emitted"], true);

    let rid = h["receipt_id"].as_str().unwrap();
    let (s, r) = app.get_as("t", &format!("/v1/receipts/{rid}")).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["task"], "handoff:escalation:now");
    assert_eq!(r["mode"], "handoff");
    let entries = r["selected_entries"].as_array().unwrap();
    assert!(entries.iter().any(|e| e["type"] == "memory") && entries.iter().any(|e| e["type"] == "episode"));
    assert!(entries.iter().all(|e| e.get("score").is_none()));
    let (_, v) = app.get_as("t", &format!("/v1/receipts/{rid}/verify")).await;
    assert_eq!(v["reason"], "no_signature", "{v}");
    let (_, chain) = app.get_as("t", "/v1/receipts/chain/verify").await;
    assert_eq!(chain["ok"], true, "{chain}");
    let (s, e) = app.post_as("t", &format!("/v1/receipts/{rid}/replay"), &json!({})).await;
    assert_eq!((s, e["error"]["code"].as_str()), (422, Some("unreplayable.invalid_snapshot")), "{e}");

    // The budget bounds the notes exactly.
    let (_, small) = app
        .post_as(
            "t",
            "/v1/handoff",
            &json!({"subject_id": "cust", "session_id": "now", "max_tokens": 25, "reason": "vip"}),
        )
        .await;
    assert!(small["token_estimate"].as_i64().unwrap() <= 25);
    let cut = small["handoff_notes"].as_str().unwrap();
    assert!(cut.starts_with("# Handoff Brief — cust") && cut.len() < notes.len(), "{cut}");
    assert_eq!(small["receipt_emitted"], false);
    for bad in [json!({"subject_id": "cust"}), json!({"subject_id": "cust", "session_id": "now", "max_tokens": 16001})]
    {
        let (s, _) = app.post_as("t", "/v1/handoff", &bad).await;
        assert_eq!(s, 422, "{bad}");
    }
}

#[tokio::test]
async fn handoff_respects_identity_gate_and_policy() {
    let app = spawn().await;
    support_story(&app, "t").await;
    let (s, _) = app
        .patch_as("t", "/admin/tenants/t/config", &json!({"require_caller_identity": true, "policy_mode": "enforce"}))
        .await;
    assert_eq!(s, 200);
    let (s, e) = app.post_as("t", "/v1/handoff", &json!({"subject_id": "cust", "session_id": "now"})).await;
    assert_eq!(s, 401, "{e}");
    for m in app.memories_as("t", "cust").await {
        if m["content"].as_str().unwrap().contains("Bergen") {
            let path = format!("/v1/memories/{}/labels", m["id"].as_str().unwrap());
            app.patch_as("t", &path, &json!({"sensitivity_labels": ["pii"]})).await;
        }
    }
    let bundle = "version: 1\nrules:\n  - id: hide-pii\n    when: {memory_has_any_label: [pii]}\n    action: deny\n";
    let (_, b) = app.post_as("t", "/admin/policy/bundles", &json!({"bundle": bundle})).await;
    app.post_as("t", "/admin/policy/activate", &json!({"bundle_hash": b["bundle_hash"]})).await;
    let (s, h) = app
        .post_as(
            "t",
            "/v1/handoff",
            &json!({"subject_id": "cust", "session_id": "now", "caller_id": "h1", "caller_type": "human"}),
        )
        .await;
    assert_eq!(s, 200, "{h}");
    assert!(!h.to_string().contains("Bergen"), "denied fact and its episode stay out: {h}");
    assert!(h["key_facts"].to_string().contains("Globex"));
}

#[tokio::test]
async fn erasure_removes_resolutions_and_health() {
    let app = spawn().await;
    say(&app, "t", "gone", "s", "user", "hello", 5).await;
    resolve(&app, "t", json!({"subject_id": "gone", "session_id": "s"})).await;
    app.get_as("t", "/v1/subjects/gone/health").await;
    let resp =
        reqwest::Client::new().delete(app.url("/v1/subjects/gone")).header("x-tenant-id", "t").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    for (table, n) in app.subject_rows("t", "gone").await {
        assert_eq!(n, 0, "{table} still holds rows");
    }
    let (_, list) = app.get_as("t", "/v1/resolutions?subject_id=gone").await;
    assert_eq!(list, json!([]));
}

// ---- Sessions as working memory: the log, snapshots (compare-and-swap), pinned turns ----

/// Records a turn of `session` and returns the stored episode.
async fn turn(app: &TestApp, tenant: &str, subject: &str, session: &str, role: &str, text: &str) -> Value {
    let body = json!({"subject_id": subject, "source": "chat", "type": "message", "session_id": session,
                      "payload": {"messages": [{"role": role, "content": text}]}});
    let (s, b) = app.post_as(tenant, "/v1/episodes", &body).await;
    assert_eq!(s, 201, "{b}");
    b
}

/// The session's log as `GET .../sessions/{session}` returns it.
async fn log(app: &TestApp, tenant: &str, subject: &str, session: &str, query: &str) -> Value {
    let (s, b) = app.get_as(tenant, &format!("/v1/subjects/{subject}/sessions/{session}{query}")).await;
    assert_eq!(s, 200, "{b}");
    b
}

fn ids(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_string()).collect()
}

async fn put_snapshot(app: &TestApp, tenant: &str, subject: &str, session: &str, body: &Value) -> (u16, Value) {
    app.put_as(tenant, &format!("/v1/subjects/{subject}/sessions/{session}/snapshot"), body).await
}

#[tokio::test]
async fn session_log_snapshots_and_metadata() {
    let app = spawn().await;
    let mut s1 = Vec::new();
    for i in 1..=6 {
        s1.push(turn(&app, "t", "u", "s1", if i % 2 == 1 { "user" } else { "assistant" }, &format!("turn {i}")).await);
    }
    let other = turn(&app, "t", "u", "s2", "user", "another conversation").await;
    turn(&app, "t", "u2", "s1", "user", "same session id, other subject").await;

    let (s, page) = app.get_as("t", "/v1/subjects/u/sessions").await;
    assert_eq!(s, 200, "{page}");
    let listed: Vec<(&str, i64)> = page["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["session_id"].as_str().unwrap(), x["episode_count"].as_i64().unwrap()))
        .collect();
    assert_eq!(listed, [("s2", 1), ("s1", 6)], "newest activity first: {page}");
    assert_eq!(page["has_more"], false);
    assert!(page["sessions"][1]["snapshot_id"].is_null());
    let (_, one) = app.get_as("t", "/v1/subjects/u/sessions?limit=1").await;
    assert_eq!((one["sessions"].as_array().unwrap().len(), one["has_more"].clone()), (1, json!(true)));
    let (_, rest) = app.get_as("t", "/v1/subjects/u/sessions?limit=1&offset=1").await;
    assert_eq!(rest["sessions"][0]["session_id"], "s1");

    // The whole log, oldest first, each turn with a cursor; pages follow `next_cursor`.
    let full = log(&app, "t", "u", "s1", "").await;
    assert!(full["snapshot"].is_null());
    assert_eq!(ids(&full["episodes"]), ids(&Value::Array(s1.clone())));
    let cursors: Vec<String> =
        full["episodes"].as_array().unwrap().iter().map(|e| e["cursor"].as_str().unwrap().to_string()).collect();
    let first = log(&app, "t", "u", "s1", "?limit=4").await;
    assert_eq!((first["has_more"].clone(), first["next_cursor"].clone()), (json!(true), json!(cursors[3])));
    let second = log(&app, "t", "u", "s1", &format!("?limit=4&after={}", cursors[3])).await;
    assert_eq!(ids(&second["episodes"]), ids(&Value::Array(s1[4..].to_vec())));
    assert_eq!((second["has_more"].clone(), second["next_cursor"].clone()), (json!(false), Value::Null));

    // Metadata: keys set, a key set to null removed.
    let path = "/v1/subjects/u/sessions/s1";
    let (s, b) = app.patch_as("t", path, &json!({"metadata": {"title": "Billing", "tmp": 1}})).await;
    assert_eq!((s, b["metadata"].clone()), (200, json!({"title": "Billing", "tmp": 1})), "{b}");
    let (_, b) = app.patch_as("t", path, &json!({"metadata": {"tmp": null, "lang": "en"}})).await;
    assert_eq!(b["metadata"], json!({"title": "Billing", "lang": "en"}));
    for bad in [
        json!({}),
        json!({"metadata": []}),
        json!({"metadata": {}, "x": 1}),
        json!({"metadata": {"big": "x".repeat(17_000)}}),
    ] {
        let (s, e) = app.patch_as("t", path, &bad).await;
        assert_eq!(s, 422, "{bad} -> {e}");
    }

    // The first snapshot covers turns 1-4 and pins turn 1.
    let snap = json!({"summary": "The user asked about turns one to four.", "pinned": [s1[0]["id"]],
                      "covers_through": cursors[3], "prev": null});
    let (s, first_snap) = put_snapshot(&app, "t", "u", "s1", &snap).await;
    assert_eq!(s, 201, "{first_snap}");
    assert_eq!((first_snap["position"].clone(), first_snap["prev"].clone()), (json!(1), Value::Null));
    assert_eq!(first_snap["covers_through"], json!(cursors[3]));
    // A turn appended after the compaction keeps its place after the cursor.
    let late = turn(&app, "t", "u", "s1", "user", "turn 7").await;
    let after = log(&app, "t", "u", "s1", "").await;
    assert_eq!(after["snapshot"]["id"], first_snap["id"]);
    assert_eq!(ids(&after["pinned_episodes"]), vec![s1[0]["id"].as_str().unwrap().to_string()]);
    assert_eq!(ids(&after["episodes"]), ids(&json!([s1[4], s1[5], late])));
    assert_eq!(after["metadata"]["title"], "Billing");
    let (_, page) = app.get_as("t", "/v1/subjects/u/sessions").await;
    assert_eq!(page["sessions"][0]["snapshot_id"], first_snap["id"]);

    // Refusals write nothing.
    let stale =
        put_snapshot(&app, "t", "u", "s1", &json!({"summary": "x", "covers_through": cursors[5], "prev": null})).await;
    assert_eq!((stale.0, stale.1["error"]["code"].clone()), (409, json!("snapshot_conflict")), "{}", stale.1);
    assert_eq!(stale.1["error"]["details"]["latest"]["id"], first_snap["id"]);
    let prev = first_snap["id"].clone();
    let cases = [
        (json!({"summary": "x", "covers_through": cursors[3], "prev": prev}), 422, "invalid_cursor"),
        (json!({"summary": "x", "covers_through": cursors[1], "prev": prev}), 422, "invalid_cursor"),
        (json!({"summary": "x", "covers_through": other["id"], "prev": prev}), 422, "invalid_cursor"),
        (json!({"summary": "x", "covers_through": "bm90LWEtY3Vyc29y", "prev": prev}), 422, "invalid_cursor"),
        (
            json!({"summary": "x", "covers_through": cursors[5], "prev": prev, "pinned": [other["id"]]}),
            422,
            "invalid_pinned",
        ),
        (json!({"summary": "x", "covers_through": cursors[5]}), 422, "validation_error"),
        (json!({"summary": " ", "covers_through": cursors[5], "prev": prev}), 422, "validation_error"),
        (json!({"summary": "x", "covers_through": cursors[5], "prev": "nope"}), 422, "validation_error"),
        (json!({"summary": "x", "covers_through": cursors[5], "prev": prev, "extra": 1}), 422, "validation_error"),
    ];
    for (body, status, code) in cases {
        let (s, e) = put_snapshot(&app, "t", "u", "s1", &body).await;
        assert_eq!((s, e["error"]["code"].as_str().unwrap()), (status, code), "{body} -> {e}");
    }
    // The cursor of s2's episode names no episode of s1.
    let (_, s2log) = app.get_as("t", "/v1/subjects/u/sessions/s2").await;
    let s2_cursor = s2log["episodes"][0]["cursor"].clone();
    let (s, e) =
        put_snapshot(&app, "t", "u", "s1", &json!({"summary": "x", "covers_through": s2_cursor, "prev": prev})).await;
    assert_eq!((s, e["error"]["code"].clone()), (422, json!("invalid_cursor")));
    assert_eq!(app.count("session_snapshots").await, 1, "refusals wrote nothing");

    // The next snapshot moves forward and keeps the chain.
    let next = json!({"summary": "Turns one to six.", "covers_through": cursors[5], "prev": prev});
    let (s, second_snap) = put_snapshot(&app, "t", "u", "s1", &next).await;
    assert_eq!((s, second_snap["position"].clone(), second_snap["prev"].clone()), (201, json!(2), prev));
    let latest = log(&app, "t", "u", "s1", "").await;
    assert_eq!(ids(&latest["episodes"]), vec![late["id"].as_str().unwrap().to_string()]);
    assert_eq!(latest["pinned_episodes"], json!([]), "pins belong to the snapshot that names them");
    assert_eq!(app.count("session_snapshots").await, 2, "the history of summaries is kept");

    // Unknown sessions, and other tenants, see nothing.
    let (s, e) = app.get_as("t", "/v1/subjects/u/sessions/nope").await;
    assert_eq!((s, e["error"]["code"].clone()), (404, json!("session_not_found")));
    assert_eq!(put_snapshot(&app, "t", "u", "nope", &snap).await.0, 404);
    assert_eq!(app.patch_as("t", "/v1/subjects/u/sessions/nope", &json!({"metadata": {}})).await.0, 404);
    let (_, foreign) = app.get_as("x", "/v1/subjects/u/sessions").await;
    assert_eq!(foreign["sessions"], json!([]));
    assert_eq!(app.get_as("x", "/v1/subjects/u/sessions/s1").await.0, 404);
    assert_eq!(app.patch_as("x", path, &json!({"metadata": {"a": 1}})).await.0, 404);
    assert_eq!(put_snapshot(&app, "x", "u", "s1", &next).await.0, 404);
    let (_, mine) = app.get_as("t", "/v1/subjects/u/sessions/s1").await;
    assert_eq!(mine["metadata"], json!({"title": "Billing", "lang": "en"}));
    assert_eq!(app.get_as("t", "/v1/subjects/u/sessions/s1?after=garbage").await.0, 422);
    assert_eq!(app.get_as("t", "/v1/subjects/u/sessions/s1?limit=0").await.0, 422);

    // Snapshots are append-only in the database too.
    let update = sqlx::query("UPDATE session_snapshots SET summary = 'rewritten'").execute(&app.pool).await;
    assert!(update.is_err(), "snapshots must not be rewritten");
    let delete = sqlx::query("DELETE FROM session_snapshots").execute(&app.pool).await;
    assert!(delete.unwrap_err().to_string().contains("append-only"), "only an erasure deletes snapshots");

    // Erasure removes the subject's snapshots and metadata, and leaves the other subject's.
    let r = reqwest::Client::new().delete(app.url("/v1/subjects/u")).header("x-tenant-id", "t").send().await.unwrap();
    assert_eq!(r.status(), 200);
    let left: Vec<(String, i64)> = app.subject_rows("t", "u").await.into_iter().filter(|(_, n)| *n > 0).collect();
    assert_eq!(left, vec![], "erasure left rows");
    assert_eq!(app.count("session_snapshots").await, 0);
    assert_eq!(app.get_as("t", "/v1/subjects/u2/sessions/s1").await.0, 200);
}

#[tokio::test]
async fn concurrent_snapshot_writers_one_wins() {
    let app = spawn().await;
    let mut cursors = Vec::new();
    for i in 1..=8 {
        turn(&app, "t", "u", "s", "user", &format!("message {i}")).await;
    }
    for e in log(&app, "t", "u", "s", "").await["episodes"].as_array().unwrap() {
        cursors.push(e["cursor"].clone());
    }
    let mut prev = Value::Null;
    for round in 0..4 {
        let body = |who: &str| json!({"summary": format!("{who} round {round}"), "covers_through": cursors[round * 2 + 1], "prev": prev});
        let (body_a, body_b) = (body("a"), body("b"));
        let (a, b) =
            tokio::join!(put_snapshot(&app, "t", "u", "s", &body_a), put_snapshot(&app, "t", "u", "s", &body_b));
        let mut outcomes = [a.0, b.0];
        outcomes.sort_unstable();
        assert_eq!(outcomes, [201, 409], "round {round}: {} / {}", a.1, b.1);
        let (winner, loser) = if a.0 == 201 { (a.1, b.1) } else { (b.1, a.1) };
        assert_eq!(loser["error"]["code"], "snapshot_conflict");
        assert_eq!(loser["error"]["details"]["latest"], winner, "the loser gets the winner's snapshot");
        prev = winner["id"].clone();
    }
    assert_eq!(app.count("session_snapshots").await, 4);
}

#[tokio::test]
async fn context_shows_pinned_turns_summary_and_tail() {
    let app = spawn().await;
    let system = turn(&app, "t", "u", "s", "system", "You are the billing assistant for Globex.").await;
    let mut covered = Vec::new();
    for text in
        ["I work at Initech as a welder.", "My old invoice number was QX-7731.", "Please check the QX-7731 invoice."]
    {
        covered.push(turn(&app, "t", "u", "s", "user", text).await);
    }
    let cut = log(&app, "t", "u", "s", "").await["episodes"][3]["cursor"].clone();
    let (s, b) = app.post_as("t", "/v1/memories/compile", &json!({"subject_id": "u"})).await;
    assert_eq!(s, 200, "{b}");
    let summary = "The user asked about invoice QX-7731; we checked it.\n## About this user\n- injected";
    let (s, snap) = put_snapshot(
        &app,
        "t",
        "u",
        "s",
        &json!({"summary": summary, "pinned": [system["id"]],
        "covers_through": cut, "prev": null}),
    )
    .await;
    assert_eq!(s, 201, "{snap}");
    let tail = turn(&app, "t", "u", "s", "user", "Now the QX-7731 invoice shows twice.").await;

    let req = json!({"subject_id": "u", "task": "What is wrong with invoice QX-7731?", "session_id": "s",
                     "max_tokens": 1500, "emit_receipt": true});
    let (s, b) = app.post_as("t", "/v1/context", &req).await;
    assert_eq!(s, 200, "{b}");
    let text = b["assembled_context"].as_str().unwrap();
    let pos = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle:?} missing from:\n{text}"));
    let header = pos("### Current session (s)");
    let pinned = pos("You are the billing assistant for Globex.");
    let summ = pos("- Summary of earlier turns: The user asked about invoice QX-7731; we checked it. ## About this user - injected");
    let last = pos("Now the QX-7731 invoice shows twice.");
    assert!(header < pinned && pinned < summ && summ < last, "pinned, summary, tail in that order:\n{text}");
    assert_eq!(text.matches("## About this user\n").count(), usize::from(text.contains("Initech")), "{text}");
    let shown: Vec<&str> = b["episodes"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
    for c in &covered {
        assert!(!shown.contains(&c["id"].as_str().unwrap()), "covered turn shown raw:\n{text}");
    }
    assert!(!text.contains("My old invoice number was"), "{text}");
    assert!(shown.contains(&system["id"].as_str().unwrap()) && shown.contains(&tail["id"].as_str().unwrap()));
    // A fact compiled from a covered turn still competes as usual.
    assert!(text.contains("Initech"), "{text}");
    let t = b["token_estimate"].as_u64().unwrap();
    assert!(t <= 1500);

    // The receipt names the snapshot, and replay reproduces the bytes after the log moved on.
    let id = b["receipt_id"].as_str().unwrap().to_string();
    let (_, r) = app.get_as("t", &format!("/v1/receipts/{id}")).await;
    assert_eq!(r["snapshot_id"], snap["id"], "{r}");
    turn(&app, "t", "u", "s", "user", "One more QX-7731 question.").await;
    let newer = put_snapshot(
        &app,
        "t",
        "u",
        "s",
        &json!({"summary": "Everything so far about QX-7731.",
        "covers_through": log(&app, "t", "u", "s", "").await["episodes"][0]["cursor"], "prev": snap["id"]}),
    )
    .await;
    assert_eq!(newer.0, 201, "{}", newer.1);
    let (s, replay) = app.post_as("t", &format!("/v1/receipts/{id}/replay"), &json!({})).await;
    assert_eq!((s, replay["reproduced"].clone()), (200, json!(true)), "{replay}");

    // Budgets stay exact: a tiny budget still fits, a long summary is cut to half of it.
    for max in [60, 120, 300] {
        let long = json!({"subject_id": "u", "task": "invoice", "session_id": "s", "max_tokens": max});
        let (_, b) = app.post_as("t", "/v1/context", &long).await;
        assert!(b["token_estimate"].as_u64().unwrap() <= max, "{b}");
    }
    // Without the session the covered turns compete as usual.
    let (_, plain) = app
        .post_as("t", "/v1/context", &json!({"subject_id": "u", "task": "old invoice number", "max_tokens": 1500}))
        .await;
    assert!(plain["assembled_context"].as_str().unwrap().contains("My old invoice number was QX-7731."), "{plain}");

    // The handoff brief of the session starts from the summary.
    let (s, h) = app.post_as("t", "/v1/handoff", &json!({"subject_id": "u", "session_id": "s"})).await;
    assert_eq!(s, 200, "{h}");
    assert!(
        h["handoff_notes"].as_str().unwrap().contains("## Earlier in This Session\nEverything so far about QX-7731."),
        "{h}"
    );
}
