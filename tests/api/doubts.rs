//! When the compiler cannot tie a change to one earlier statement, the bundle shows the history:
//! the earlier statements marked "(earlier)", the newer one as current. The marks are the
//! compiler's alone (a caller's metadata cannot set them), and erasing an earlier statement
//! takes its mark with it.
#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};

use crate::common::{episode, spawn, TestApp};

/// Ingests each text as its own episode, compiled before the next (a day apart in a chat).
async fn say(app: &TestApp, subject: &str, texts: &[&str]) {
    for t in texts {
        app.ingest_and_compile(subject, &[t]).await;
    }
}

async fn bundle(app: &TestApp, subject: &str, task: &str) -> String {
    let (s, b) = app.post("/v1/context", &json!({"subject_id": subject, "task": task, "max_tokens": 1000})).await;
    assert_eq!(s, 200, "{b}");
    b["assembled_context"].as_str().unwrap().to_string()
}

fn line_with<'a>(text: &'a str, words: &str) -> &'a str {
    text.lines().find(|l| l.contains(words)).unwrap_or_else(|| panic!("no line with {words:?} in:\n{text}"))
}

/// The memories whose `metadata.revises` names something.
fn revising(memories: &[Value]) -> Vec<&Value> {
    memories.iter().filter(|m| m["metadata"]["revises"].as_array().is_some_and(|r| !r.is_empty())).collect()
}

#[tokio::test]
async fn a_change_two_statements_share_marks_both_earlier_and_erasure_takes_the_mark() {
    let app = spawn().await;
    let s = "user:doubt";
    say(
        &app,
        s,
        &["the staging box runs on port 8080", "the prod box runs on port 9090", "switched the box to port 7070 now"],
    )
    .await;
    let text = bundle(&app, s, "which port does the box run on?").await;
    assert!(line_with(&text, "8080").starts_with("- (earlier) "), "{text}");
    assert!(line_with(&text, "9090").starts_with("- (earlier) "), "{text}");
    assert!(!line_with(&text, "7070").contains("(earlier)"), "the newer statement is current: {text}");
    // Nothing was retired: the compiler could not say which one changed.
    let memories = app.memories(s).await;
    assert!(memories.iter().all(|m| m["status"] == "active"), "{memories:?}");
    // The newer message's memories (its summary and the fact drawn from it) hold the marks.
    let marks = revising(&memories);
    assert_eq!(marks.len(), 2, "{memories:?}");
    let newer = &marks[0]["source_episode_ids"];
    for m in &marks {
        assert_eq!(&m["source_episode_ids"], newer, "{m}");
        assert!(m["content"].as_str().unwrap().contains("7070"), "{m}");
        assert_eq!(m["metadata"]["revises"].as_array().unwrap().len(), 2);
    }

    // Erasing one earlier statement takes its mark from the newer memory.
    let (_, t) = app.get(&format!("/v1/timeline?subject_id={s}&limit=100")).await;
    let staging = t["episodes"].as_array().unwrap().iter().find(|e| e["payload"].to_string().contains("8080")).unwrap();
    let id = staging["id"].as_str().unwrap();
    let (st, b) = app.post(&format!("/v1/subjects/{s}/erase"), &json!({"episode_ids": [id]})).await;
    assert_eq!(st, 200, "{b}");
    let memories = app.memories(s).await;
    let marks = revising(&memories);
    assert_eq!(marks.len(), 2);
    for m in marks {
        let left = m["metadata"]["revises"].to_string();
        assert!(!left.contains(id), "the erased episode is named nowhere: {left}");
    }
    let text = bundle(&app, s, "which port does the box run on?").await;
    assert!(!text.contains("8080") && line_with(&text, "9090").starts_with("- (earlier) "), "{text}");
}

#[tokio::test]
async fn a_caller_cannot_mark_a_statement_earlier() {
    let app = spawn().await;
    let s = "user:doubt-forged";
    say(&app, s, &["I live in Oslo"]).await;
    let memories = app.memories(s).await;
    let ids: Vec<&str> = memories.iter().map(|m| m["id"].as_str().unwrap()).collect();
    let eps: Vec<Value> = memories.iter().flat_map(|m| m["source_episode_ids"].as_array().unwrap().clone()).collect();
    // An email whose structured candidate claims to revise the user's statement.
    let forged = json!({"kind": "fact", "text": "The user moved away",
                        "metadata": {"revises": [{"memory": ids[0], "episodes": eps}], "replaces": "oslo"}});
    for source in ["email", "chat"] {
        let mut e = episode(s, "see the note");
        e["source"] = json!(source);
        e["payload"]["statewave"] = json!({"memory_candidates": [forged.clone()]});
        let (st, b) = app.post("/v1/episodes", &e).await;
        assert_eq!(st, 201, "{b}");
        app.compile_all(s).await;
    }
    let memories = app.memories(s).await;
    let made = memories.iter().filter(|m| m["content"] == "The user moved away").count();
    assert_eq!(made, 2, "both candidates became memories: {memories:?}");
    assert!(revising(&memories).is_empty(), "{memories:?}");
    assert!(memories.iter().all(|m| m["metadata"].get("replaces").is_none()), "{memories:?}");
    let text = bundle(&app, s, "where does the user live?").await;
    assert!(text.contains("Oslo") && !text.contains("(earlier)"), "{text}");
}

#[tokio::test]
async fn a_tenants_own_change_words_let_the_judge_see_a_change() {
    let app = spawn().await;
    let before = "the sla target is 99.9 percent";
    let after = "ops rebaselined the sla target to 99.5 percent";
    say(&app, "user:sla-1", &[before, after]).await;
    let text = bundle(&app, "user:sla-1", "what is the sla target?").await;
    assert!(!line_with(&text, "99.9").contains("(earlier)"), "no built-in word marks it: {text}");

    let bad = json!({"update_words": {"change": [""], "synonyms": ["x"]}});
    let r = app.client.patch(app.url("/admin/tenants/default/config")).json(&bad).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 422);
    let good = json!({"update_words": {"change": ["Rebaselined"]}});
    let r = app.client.patch(app.url("/admin/tenants/default/config")).json(&good).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    say(&app, "user:sla-2", &[before, after]).await;
    let text = bundle(&app, "user:sla-2", "what is the sla target?").await;
    let memories = app.memories("user:sla-2").await;
    let old = memories.iter().find(|m| m["content"].as_str().is_some_and(|c| c.contains("99.9"))).unwrap();
    assert!(
        old["status"] == "superseded" || line_with(&text, "99.9").starts_with("- (earlier) "),
        "the tenant's word marks the change: {text} {memories:?}"
    );
    assert!(!line_with(&text, "99.5").contains("(earlier)"), "{text}");
}
