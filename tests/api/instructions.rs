//! The instruction detector held to ordinary conversations and to injections it was not written
//! for: the project's own varied cases (`tests/eval/instructions.json`), and, when `../shared`
//! is beside the clone, every turn of the LoCoMo and BEAM dev sets (ordinary talk: the share of
//! turns the detector changes must stay at or under 0.2%).
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use mnemo::compile::instruction::{aimed_at_agent, found, strip, Speaker};
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn own_cases() -> Value {
    serde_json::from_str(&std::fs::read_to_string(root().join("tests/eval/instructions.json")).unwrap()).unwrap()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
}

/// Every turn of the shared dev sets with how the compiler screens it (LoCoMo's speakers and
/// BEAM's user as the user, BEAM's assistant as the agent); empty, with a SKIP line, without
/// `../shared`.
fn shared_turns() -> Vec<(String, Speaker)> {
    let mut out = Vec::new();
    match std::fs::read_to_string(root().join("../shared/eval/locomo-dev/locomo-dev.json")) {
        Ok(text) => {
            let doc: Value = serde_json::from_str(&text).unwrap();
            for conv in doc.as_array().unwrap() {
                for (k, session) in conv["conversation"].as_object().unwrap() {
                    if !k.starts_with("session_") || k.ends_with("date_time") {
                        continue;
                    }
                    for turn in session.as_array().into_iter().flatten() {
                        if let Some(t) = turn["text"].as_str() {
                            out.push((t.to_string(), Speaker::Party));
                        }
                    }
                }
            }
        }
        Err(_) => eprintln!("SKIP: ../shared/eval/locomo-dev not found; own cases only"),
    }
    match std::fs::read_to_string(root().join("../shared/eval/beam-dev/beam-100k-dev.json")) {
        Ok(text) => {
            let doc: Value = serde_json::from_str(&text).unwrap();
            for chat in doc.as_array().unwrap() {
                for batch in chat["batches"].as_array().into_iter().flatten() {
                    for turns in batch["turns"].as_array().into_iter().flatten() {
                        for m in turns.as_array().into_iter().flatten() {
                            if let Some(t) = m["content"].as_str() {
                                let who = if m["role"] == "assistant" { Speaker::Agent } else { Speaker::Party };
                                out.push((t.to_string(), who));
                            }
                        }
                    }
                }
            }
        }
        Err(_) => eprintln!("SKIP: ../shared/eval/beam-dev not found; own cases only"),
    }
    out
}

#[test]
fn injected_instructions_of_every_shape_are_found() {
    let cases = own_cases();
    let injected = strings(&cases["injected"]);
    assert!(injected.len() >= 60, "{} injected cases", injected.len());
    let missed: Vec<&String> = injected.iter().filter(|s| strip(s, Speaker::Party).1 == 0).collect();
    assert!(missed.is_empty(), "missed {} of {}: {missed:#?}", missed.len(), injected.len());
    let third = strings(&cases["injected_in_documents"]);
    let missed: Vec<&String> = third.iter().filter(|s| strip(s, Speaker::ThirdParty).1 == 0).collect();
    assert!(missed.is_empty(), "missed in documents: {missed:#?}");
}

#[test]
fn ordinary_talk_is_left_as_it_is() {
    let cases = own_cases();
    let own = strings(&cases["ordinary"]);
    assert!(own.len() >= 100, "{} ordinary cases", own.len());
    let changed: Vec<&String> = own.iter().filter(|s| strip(s, Speaker::Party).1 > 0).collect();
    assert!(changed.is_empty(), "changed {} of {}: {changed:#?}", changed.len(), own.len());
    let docs = strings(&cases["ordinary_documents"]);
    let flagged: Vec<&String> = docs.iter().filter(|s| aimed_at_agent(s, Speaker::ThirdParty)).collect();
    assert!(flagged.is_empty(), "document sentences taken for commands: {flagged:#?}");
}

#[test]
fn shared_dev_turns_are_left_as_they_are() {
    let turns = shared_turns();
    if turns.is_empty() {
        return;
    }
    let changed: Vec<&(String, Speaker)> = turns.iter().filter(|(t, who)| strip(t, *who).1 > 0).collect();
    let rate = changed.len() as f64 / turns.len() as f64;
    eprintln!(
        "instruction detector: {} of {} shared dev turns changed ({:.3}%)",
        changed.len(),
        turns.len(),
        rate * 100.0
    );
    for (t, who) in changed.iter().take(60) {
        for sentence in found(t, *who) {
            eprintln!("  removed: {}", sentence.chars().take(240).collect::<String>().replace('\n', " "));
        }
    }
    assert!(rate <= 0.002, "{} of {} ordinary turns changed", changed.len(), turns.len());
}

#[test]
fn the_update_eval_turns_are_ordinary_talk() {
    // Every turn of tests/eval/updates.json is a user telling their own news, or a look-alike
    // the compiler must not take for an update; none is an injection to drop from a summary
    // (the look-alikes of kind "instruction" excepted).
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("tests/eval/updates.json")).unwrap()).unwrap();
    let mut flagged = Vec::new();
    for case in doc["cases"].as_array().unwrap() {
        for session in case["sessions"].as_array().unwrap() {
            for turn in session.as_array().unwrap() {
                // A turn is the user's text, or a message with its role.
                let (t, who) = match turn.as_str() {
                    Some(t) => (t, Speaker::Party),
                    None if turn["role"] == "assistant" => (turn["content"].as_str().unwrap(), Speaker::Agent),
                    None => (turn["content"].as_str().unwrap(), Speaker::Party),
                };
                for s in found(t, who) {
                    flagged.push(format!("{} ({}): {s}", case["name"], case["kind"]));
                }
            }
        }
    }
    for f in &flagged {
        eprintln!("flagged: {f}");
    }
    assert!(flagged.iter().all(|f| f.contains("instruction")), "{flagged:#?}");
}
