//! Prints what the heuristic compiler extracts from an update-eval file, case by case, without a
//! database: each user turn's facts and claims, the claims after linking, and whether the old
//! values are replaced. A development aid for `tests/eval/updates.json`:
//!
//! ```sh
//! cargo run --example facts -- tests/eval/updates.json [case-name-substring]
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::DateTime;
use serde_json::{json, Value};
use uuid::Uuid;

use mnemo::compile::claims::{Cardinality, Registry};
use mnemo::compile::link::{link_drafts, Current};
use mnemo::compile::pipeline::{compile_episode, EpisodeInput};
use mnemo::model::memory::MemoryKind;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).map(String::as_str).unwrap_or("tests/eval/updates.json");
    let filter = args.get(2).cloned().unwrap_or_default();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let registry = Registry::builtin();
    let (mut replaced, mut updates) = (0, 0);
    for case in doc["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap_or("?");
        if !name.contains(&filter) {
            continue;
        }
        let mut current: Vec<(Current, String)> = Vec::new();
        let mut log = Vec::new();
        for (k, session) in case["sessions"].as_array().unwrap().iter().enumerate() {
            for (n, t) in session.as_array().unwrap().iter().enumerate() {
                let (role, text) = match t {
                    Value::String(s) => ("user".to_string(), s.clone()),
                    o => (o["role"].as_str().unwrap_or("user").into(), o["content"].as_str().unwrap_or("").into()),
                };
                let ep = EpisodeInput {
                    id: Uuid::from_u128((k * 10 + n) as u128),
                    seq: (k * 10 + n) as i64,
                    source: "chat".into(),
                    voice: mnemo::model::voice::Voice::User,
                    payload: json!({"messages": [{"role": role, "content": text}]}),
                    occurred_at: DateTime::from_timestamp(1_700_000_000 + (k * 86_400 + n) as i64, 0).unwrap(),
                };
                let mut drafts = compile_episode(&ep, &registry);
                let mut cur: Vec<Current> = current.iter().map(|(c, _)| c.clone()).collect();
                link_drafts(&mut drafts, &mut cur, &registry);
                log.push(format!("  s{k}: {text}"));
                for d in drafts.iter().filter(|d| d.kind == MemoryKind::ProfileFact) {
                    let claim = d.claim.as_ref().map(|c| format!("{}={}", c.key, c.value)).unwrap_or("-".into());
                    log.push(format!("      fact [{}] {:?} claim {claim}", d.metadata["rule"], d.content));
                    if let Some(c) = &d.claim {
                        if c.cardinality == Cardinality::Single {
                            current.retain(|(o, _)| o.key != c.key);
                        }
                        current.push((Current::of(c), d.content.clone()));
                    }
                }
            }
        }
        let holds = |s: &str| current.iter().any(|(_, content)| content.contains(s));
        let strs = |k: &str| -> Vec<String> {
            case[k]
                .as_array()
                .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
                .unwrap_or_default()
        };
        let first_session_facts = |s: &str| log.iter().any(|l| l.contains("fact") && l.contains(s));
        let kind = case["kind"].as_str().unwrap_or("?");
        let ok = if kind == "update" {
            updates += 1;
            // The old value is gone from the current claims when it was claimed and replaced.
            let gone = strs("must_not").iter().all(|s| !holds(s) && first_session_facts(s));
            replaced += usize::from(gone);
            gone
        } else {
            strs("must").iter().all(|s| holds(s) || !first_session_facts(s))
        };
        println!("{} {kind} {name}: {}", if ok { "ok  " } else { "MISS" }, case["question"]);
        if !ok || !filter.is_empty() {
            for l in &log {
                println!("{l}");
            }
        }
    }
    println!("updates whose old value was claimed and replaced: {replaced}/{updates}");
}
