//! Memory templates: the catalogue, strict application, and what the resulting episodes compile into.
#![allow(clippy::unwrap_used)]

use crate::common::TestApp;
use serde_json::{json, Value};

async fn apply(app: &TestApp, id: &str, body: &Value) -> (u16, Value) {
    app.post(&format!("/v1/memory-templates/{id}/apply"), body).await
}

/// Rows in the tables an apply could write.
async fn written(app: &TestApp) -> Vec<i64> {
    let mut out = Vec::new();
    for t in ["episodes", "subject_counters", "tenants", "webhook_events"] {
        out.push(app.count(t).await);
    }
    out
}

#[tokio::test]
async fn the_catalogue_lists_and_serves_each_template() {
    let app = crate::common::spawn().await;
    let (s, list) = app.get("/v1/memory-templates").await;
    assert_eq!(s, 200, "{list}");
    let templates = list["templates"].as_array().unwrap();
    let ids: Vec<&str> = templates.iter().map(|t| t["id"].as_str().unwrap()).collect();
    for id in ["user_preference", "subject_profile", "procedure_step", "decision_record", "support_issue"] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
    for t in templates {
        for key in ["version", "title", "description", "episode_type", "content_template"] {
            assert!(!t[key].is_null(), "{key} in {t}");
        }
        for f in t["fields"].as_array().unwrap() {
            assert!(f["name"].is_string() && f["type"].is_string() && f["required"].is_boolean(), "{f}");
            assert!(f["description"].is_string(), "{f}");
        }
        let (s, one) = app.get(&format!("/v1/memory-templates/{}", t["id"].as_str().unwrap())).await;
        assert_eq!((s, &one), (200, t));
    }
    let (s, missing) = app.get("/v1/memory-templates/no_such_template").await;
    assert_eq!(s, 404);
    assert_eq!(missing["error"]["code"], "http_error");
    assert_eq!(missing["error"]["message"], "memory template not found");
}

#[tokio::test]
async fn applying_records_an_episode_that_compiles_into_clean_memories() {
    let config = mnemo::RuntimeConfig {
        webhooks: mnemo::services::webhooks::WebhookConfig {
            url: Some("http://127.0.0.1:9/unused".into()),
            backoff_base: std::time::Duration::from_secs(600),
            ..Default::default()
        },
        ..Default::default()
    };
    let app = crate::common::spawn_with(config).await;
    let body = json!({
        "subject_id": "user:7",
        "session_id": "s1",
        "idempotency_key": "profile-1",
        "values": {"name": "Dana Reyes", "employer": "Initech", "email": "dana@example.com"},
    });
    let (s, ep) = apply(&app, "subject_profile", &body).await;
    assert_eq!(s, 201, "{ep}");
    assert_eq!((ep["subject_id"].clone(), ep["session_id"].clone()), (json!("user:7"), json!("s1")));
    assert_eq!((ep["source"].clone(), ep["type"].clone()), (json!("memory-template"), json!("profile")));
    assert_eq!(ep["metadata"], json!({"template": {"id": "subject_profile", "version": 1}}));
    let p = &ep["payload"];
    assert_eq!((p["template_id"].clone(), p["template_version"].clone()), (json!("subject_profile"), json!(1)));
    assert_eq!(p["fields"], json!({"name": "Dana Reyes", "employer": "Initech", "email": "dana@example.com"}));
    assert_eq!(p["content"], "Name: Dana Reyes\nEmployer: Initech\nEmail: dana@example.com");
    // Same ingest path as POST /v1/episodes: idempotent, and it announces episode.created.
    let (s, again) = apply(&app, "subject_profile", &body).await;
    assert_eq!((s, again["id"].clone()), (200, ep["id"].clone()));
    let events: Vec<String> =
        sqlx::query_scalar("SELECT event FROM webhook_events").fetch_all(&app.pool).await.unwrap();
    assert_eq!(events, ["episode.created"]);

    let (_, t) = app.get("/v1/timeline?subject_id=user:7").await;
    assert_eq!(t["episodes"][0]["id"], ep["id"]);

    // A later profile update supersedes the employer claim; preferences accumulate.
    let moved = json!({"subject_id": "user:7", "values": {"employer": "Globex", "location": "Oslo"}});
    assert_eq!(apply(&app, "subject_profile", &moved).await.0, 201);
    for pref in ["answers in German", "short summaries"] {
        let body = json!({"subject_id": "user:7", "values": {"preference": pref}});
        assert_eq!(apply(&app, "user_preference", &body).await.0, 201);
    }
    app.compile_all("user:7").await;
    let memories = app.memories("user:7").await;
    let state = |content: &str| {
        let m = memories.iter().find(|m| m["content"] == content).unwrap_or_else(|| panic!("{content}: {memories:#?}"));
        (m["status"].as_str().unwrap().to_string(), m["metadata"]["claim"]["key"].clone())
    };
    assert_eq!(state("The user works at Initech."), ("superseded".into(), json!("employment.current_employer")));
    assert_eq!(state("The user works at Globex."), ("active".into(), json!("employment.current_employer")));
    assert_eq!(state("The user's name is Dana Reyes."), ("active".into(), json!("identity.name")));
    assert_eq!(state("The user lives in Oslo."), ("active".into(), json!("location.current_home")));
    assert_eq!(state("The user prefers answers in German."), ("active".into(), json!("preferences")));
    assert_eq!(state("The user prefers short summaries."), ("active".into(), json!("preferences")));
    assert!(memories.iter().all(|m| m["kind"] != "episode_summary"), "no catch-all summaries of form text");

    let ctx = json!({"subject_id": "user:7", "task": "Where does the user work?"});
    let (_, bundle) = app.post("/v1/context", &ctx).await;
    let text = bundle["assembled_context"].as_str().unwrap();
    assert!(text.contains("The user works at Globex.") && !text.contains("Initech"), "{text}");
}

#[tokio::test]
async fn invalid_applications_are_422_and_write_nothing() {
    let app = crate::common::spawn().await;
    let before = written(&app).await;
    let cases = [
        (
            "procedure_step",
            json!({"subject_id": "u", "values": {"procedure": "Deploy", "action": "Run it"}}),
            "values.step",
            "missing",
        ),
        (
            "procedure_step",
            json!({"subject_id": "u", "values": {"procedure": "Deploy", "step": "second", "action": "Run it"}}),
            "values.step",
            "int_parsing",
        ),
        (
            "decision_record",
            json!({"subject_id": "u", "values": {"decision": "Use Go", "decided_on": "last week"}}),
            "values.decided_on",
            "date_parsing",
        ),
        (
            "subject_profile",
            json!({"subject_id": "u", "values": {"email": "dana at example"}}),
            "values.email",
            "email_parsing",
        ),
        (
            "user_preference",
            json!({"subject_id": "u", "values": {"preference": "tea", "mood": "calm"}}),
            "values.mood",
            "extra_forbidden",
        ),
        (
            "user_preference",
            json!({"subject_id": "u", "values": {"preference": 3}}),
            "values.preference",
            "string_type",
        ),
        (
            "user_preference",
            json!({"subject_id": "u", "values": {"preference": "   "}}),
            "values.preference",
            "missing",
        ),
        (
            "support_issue",
            json!({"subject_id": "u", "values": {"summary": "Login fails", "status": "closed"}}),
            "values.status",
            "enum",
        ),
        ("subject_profile", json!({"subject_id": "u", "values": {}}), "values", "too_short"),
        (
            "user_preference",
            json!({"subject_id": "u", "values": {"preference": "tea"}, "payload": {}}),
            "payload",
            "extra_forbidden",
        ),
        ("user_preference", json!({"subject_id": "u", "values": ["tea"]}), "values", "dict_type"),
        ("user_preference", json!({"values": {"preference": "tea"}}), "subject_id", "missing"),
    ];
    for (id, body, loc, kind) in cases {
        let (s, b) = apply(&app, id, &body).await;
        assert_eq!(s, 422, "{id} {body}: {b}");
        assert_eq!(b["error"]["code"], "validation_error");
        let found = b["error"]["details"].as_array().unwrap().iter().any(|d| {
            let at: Vec<String> =
                d["loc"].as_array().unwrap().iter().skip(1).map(|p| p.as_str().unwrap().to_string()).collect();
            at.join(".") == loc && d["type"] == kind
        });
        assert!(found, "{id} {body}: expected {kind} at {loc}, got {b}");
    }
    // Every problem of one body is reported at once.
    let (_, b) = apply(&app, "procedure_step", &json!({"subject_id": "", "values": {"step": "x"}, "extra": 1})).await;
    assert_eq!(b["error"]["details"].as_array().unwrap().len(), 5, "{b}");
    let (s, _) = apply(&app, "no_such_template", &json!({"subject_id": "u", "values": {}})).await;
    assert_eq!(s, 404);
    assert_eq!(written(&app).await, before, "a refused application writes nothing");
}
