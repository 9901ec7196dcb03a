//! Support sessions through HTTP: resolutions, SLA, health (and its transition cache), handoff
//! briefs with receipts and policy, and their erasure.
#![allow(clippy::unwrap_used)]

mod common;

use chrono::{Duration, SecondsFormat, Utc};
use common::{spawn, TestApp};
use serde_json::{json, Value};

fn ago(minutes: i64) -> String {
    (Utc::now() - Duration::minutes(minutes)).to_rfc3339_opts(SecondsFormat::Secs, true)
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
