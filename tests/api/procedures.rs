//! Standing instructions become procedures: the project's own varied cases
//! (`tests/eval/procedures.json`) held to the compiler (pass rates printed and asserted), and
//! through HTTP, a changed rule supersedes the old one and every bundle carries the current one.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use chrono::DateTime;
use mnemo::compile::claims::Registry;
use mnemo::compile::pipeline::{compile_episode, EpisodeInput};
use mnemo::model::memory::MemoryKind;
use mnemo::model::voice::Voice;
use serde_json::{json, Value};

use crate::common::spawn;

fn cases() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/eval/procedures.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
}

/// The procedures' (claim key, value) the compiler makes of one message by `role`.
fn procedures(role: &str, text: &str) -> Vec<(String, String)> {
    let ep = EpisodeInput {
        id: uuid::Uuid::nil(),
        seq: 1,
        source: "chat".into(),
        payload: json!({"messages": [{"role": role, "content": text}]}),
        occurred_at: DateTime::UNIX_EPOCH,
        voice: Voice::User,
    };
    compile_episode(&ep, &Registry::builtin())
        .into_iter()
        .filter(|d| d.kind == MemoryKind::Procedure)
        .map(|d| {
            let c = d.claim.unwrap();
            (c.key, c.value)
        })
        .collect()
}

fn rate(pass: usize, n: usize) -> f64 {
    pass as f64 / n.max(1) as f64
}

#[test]
fn standing_instructions_become_procedures_and_look_alikes_do_not() {
    let c = cases();
    let standing = strings(&c["procedures"]);
    let missed: Vec<&String> = standing.iter().filter(|s| procedures("user", s).len() != 1).collect();

    let pairs = |name: &str| -> Vec<(String, String)> {
        c[name]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["first"].as_str().unwrap().into(), p["then"].as_str().unwrap().into()))
            .collect()
    };
    // A change: both are rules, on one topic, with different values (the claim pass then
    // supersedes the first; tested through HTTP below).
    let same_topic = |(a, b): &(String, String)| {
        let (x, y) = (procedures("user", a), procedures("user", b));
        x.len() == 1 && y.len() == 1 && x[0].0 == y[0].0 && x[0].1 != y[0].1
    };
    let changes = pairs("changes");
    let unchanged: Vec<&(String, String)> = changes.iter().filter(|p| !same_topic(p)).collect();
    let distinct = pairs("distinct");
    let merged: Vec<&(String, String)> = distinct
        .iter()
        .filter(|(a, b)| {
            let (x, y) = (procedures("user", a), procedures("user", b));
            !(x.len() == 1 && y.len() == 1 && x[0].0 != y[0].0)
        })
        .collect();

    let mut report = format!(
        "standing instructions: {}/{} become one procedure\nchanges: {}/{} on the same topic\ndistinct rules: {}/{} on different topics\n",
        standing.len() - missed.len(),
        standing.len(),
        changes.len() - unchanged.len(),
        changes.len(),
        distinct.len() - merged.len(),
        distinct.len()
    );
    let mut wrong = Vec::new();
    let mut total = 0;
    for (group, list) in c["not_procedures"].as_object().unwrap() {
        let list = strings(list);
        let bad: Vec<String> = list.iter().filter(|s| !procedures("user", s).is_empty()).cloned().collect();
        report.push_str(&format!("look-alikes, {group}: {}/{} left alone\n", list.len() - bad.len(), list.len()));
        total += list.len();
        wrong.extend(bad);
    }
    let advice = strings(&c["assistant_advice"]);
    let advised: Vec<&String> = advice.iter().filter(|s| !procedures("assistant", s).is_empty()).collect();
    report.push_str(&format!("assistant advice: {}/{} left alone\n", advice.len() - advised.len(), advice.len()));
    eprintln!("{report}missed: {missed:#?}\nchanges not tied: {unchanged:#?}\ndistinct merged: {merged:#?}\nlook-alikes taken: {wrong:#?}");

    // Cases written after tuning: reported, held to looser floors.
    let f = &c["fresh"];
    let fresh = strings(&f["procedures"]);
    let fresh_missed: Vec<&String> = fresh.iter().filter(|s| procedures("user", s).len() != 1).collect();
    let fresh_changes: Vec<(String, String)> = f["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["first"].as_str().unwrap().into(), p["then"].as_str().unwrap().into()))
        .collect();
    let fresh_unchanged: Vec<&(String, String)> = fresh_changes.iter().filter(|p| !same_topic(p)).collect();
    let fresh_alike = strings(&f["not_procedures"]);
    let fresh_taken: Vec<&String> = fresh_alike.iter().filter(|s| !procedures("user", s).is_empty()).collect();
    let fresh_advice = strings(&f["assistant_advice"]);
    let fresh_advised: Vec<&String> = fresh_advice.iter().filter(|s| !procedures("assistant", s).is_empty()).collect();
    eprintln!(
        "fresh: standing {}/{}, changes {}/{}, look-alikes left alone {}/{}, advice left alone {}/{}\n\
         fresh missed: {fresh_missed:#?}\nfresh changes not tied: {fresh_unchanged:#?}\nfresh look-alikes taken: {fresh_taken:#?}",
        fresh.len() - fresh_missed.len(),
        fresh.len(),
        fresh_changes.len() - fresh_unchanged.len(),
        fresh_changes.len(),
        fresh_alike.len() - fresh_taken.len(),
        fresh_alike.len(),
        fresh_advice.len() - fresh_advised.len(),
        fresh_advice.len()
    );

    assert!(standing.len() >= 50 && total >= 50, "the eval keeps its size");
    assert!(rate(fresh.len() - fresh_missed.len(), fresh.len()) >= 0.7, "fresh standing instructions");
    assert!(fresh_taken.len() <= 1 && fresh_advised.is_empty(), "fresh look-alikes: {fresh_taken:?} {fresh_advised:?}");
    assert!(rate(standing.len() - missed.len(), standing.len()) >= 0.9, "{report}");
    assert!(rate(changes.len() - unchanged.len(), changes.len()) >= 0.8, "{report}");
    assert!(rate(distinct.len() - merged.len(), distinct.len()) >= 0.9, "{report}");
    assert!(rate(wrong.len(), total) <= 0.05, "{report}");
    assert!(advised.is_empty(), "the assistant's advice is never the user's rule: {advised:?}");
}

#[tokio::test]
async fn a_changed_rule_supersedes_the_old_one_and_every_bundle_carries_the_current_rules() {
    let app = spawn().await;
    app.ingest_and_compile(
        "u",
        &[
            "Always format dates as MM/DD/YYYY.",
            "I'm planning a trip to Lisbon in May with my sister.",
            "From now on, keep answers under 200 words.",
            "My boss always formats dates as DD/MM/YYYY.",
        ],
    )
    .await;
    app.ingest_and_compile("u", &["Actually, from now on format dates as YYYY-MM-DD."]).await;
    let mems = app.memories("u").await;
    let procs = |status: &str| -> Vec<String> {
        mems.iter()
            .filter(|m| m["kind"] == "procedure" && m["status"] == status)
            .map(|m| m["content"].as_str().unwrap().to_string())
            .collect()
    };
    let (active, superseded) = (procs("active"), procs("superseded"));
    assert_eq!(active.len(), 2, "{active:?}");
    assert!(active.iter().any(|p| p.contains("YYYY-MM-DD")) && active.iter().any(|p| p.contains("200 words")));
    assert_eq!(superseded, vec!["Always format dates as MM/DD/YYYY".to_string()]);
    assert!(!active.iter().chain(&superseded).any(|p| p.contains("boss")), "someone else's rule");

    // A task about something else still gets the rules, within a small share of the budget.
    for max_tokens in [300, 2000] {
        let (s, b) = app
            .post("/v1/context", &json!({"subject_id": "u", "task": "Plan the Lisbon trip", "max_tokens": max_tokens}))
            .await;
        assert_eq!(s, 200, "{b}");
        let shown: Vec<&str> =
            b["procedures"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap()).collect();
        assert_eq!(shown.len(), 2, "{max_tokens}: {b}");
        assert!(!b["assembled_context"].as_str().unwrap().contains("MM/DD/YYYY"), "the old rule is gone");
    }
}
