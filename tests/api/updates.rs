//! Facts that change, through HTTP: open attributes get claims, an update in everyday words
//! supersedes the old value everywhere a later bundle could show it, the past stays queryable,
//! and a tenant's own verb frames extend the registry.
#![allow(clippy::unwrap_used)]

use crate::common::spawn;
use serde_json::{json, Value};

async fn say(app: &crate::common::TestApp, subject: &str, session: &str, at: &str, text: &str) {
    let ep = json!({"subject_id": subject, "source": "chat", "type": "message", "session_id": session,
                    "occurred_at": at, "payload": {"messages": [{"role": "user", "content": text}]}});
    let (s, b) = app.post("/v1/episodes", &ep).await;
    assert!(s == 201, "{b}");
    app.compile_all(subject).await;
}

async fn bundle(app: &crate::common::TestApp, subject: &str, task: &str, as_of: Option<&str>) -> Value {
    let mut req = json!({"subject_id": subject, "task": task, "max_tokens": 800, "emit_receipt": true});
    if let Some(t) = as_of {
        req["as_of"] = json!(t);
    }
    let (s, b) = app.post("/v1/context", &req).await;
    assert_eq!(s, 200, "{b}");
    b
}

#[tokio::test]
async fn an_open_attribute_update_leaves_the_bundle_and_stays_on_the_timeline() {
    let app = spawn().await;
    say(&app, "u", "s1", "2026-03-01T10:00:00Z", "The cache node's address is 10.2.3.4, reachable from the VPN.").await;
    say(&app, "u", "s2", "2026-03-05T10:00:00Z", "Can you explain consistent hashing?").await;
    // What mnemo believed before the change (transaction time).
    let before =
        bundle(&app, "u", "What is the cache node's address?", None).await["as_of"].as_str().unwrap().to_string();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    say(&app, "u", "s3", "2026-03-09T10:00:00Z", "We moved the cache node to 10.2.3.77 last night.").await;

    let mems = app.memories("u").await;
    let claimed = |v: &str| mems.iter().find(|m| m["metadata"]["claim"]["value"] == v).cloned().unwrap();
    let (old, new) = (claimed("10.2.3.4"), claimed("10.2.3.77"));
    assert_eq!(old["metadata"]["claim"]["key"], "attr.cache_node_address");
    assert_eq!(new["metadata"]["claim"]["key"], "attr.cache_node_address", "linked by the attribute it names");
    assert_eq!(new["metadata"]["claim"]["scope"], "single");
    assert_eq!((old["status"].clone(), new["status"].clone()), (json!("superseded"), json!("active")));
    assert!(old["valid_to"].is_string());

    // Now: the old value is in no fact, no summary and no raw episode of the bundle.
    let now = bundle(&app, "u", "What is the cache node's address?", None).await;
    let text = now["assembled_context"].as_str().unwrap();
    assert!(text.contains("10.2.3.77"), "{text}");
    assert!(!text.contains("10.2.3.4,") && !text.contains("10.2.3.4 "), "{text}");
    // Before the change: the old value was the current one.
    let then = bundle(&app, "u", "What is the cache node's address?", Some(&before)).await;
    let text = then["assembled_context"].as_str().unwrap();
    assert!(text.contains("10.2.3.4") && !text.contains("10.2.3.77"), "{text}");
    // A receipt of the later bundle replays byte for byte.
    let id = now["receipt_id"].as_str().unwrap();
    let (s, r) = app.post(&format!("/v1/receipts/{id}/replay"), &json!({})).await;
    assert_eq!((s, r["reproduced"].clone()), (200, json!(true)), "{r}");
    // Search shows the claim as Statewave's envelope.
    let (_, found) = app.get("/v1/memories/search?subject_id=u&q=cache%20node&semantic=false").await;
    let keys: Vec<&Value> =
        found["memories"].as_array().unwrap().iter().map(|m| &m["metadata"]["claim"]["key"]).collect();
    assert!(keys.contains(&&json!("attr.cache_node_address")), "{found}");
}

#[tokio::test]
async fn look_alikes_never_supersede() {
    let app = spawn().await;
    say(&app, "u", "s1", "2026-03-01T10:00:00Z", "I bank with Monzo.").await;
    for (i, text) in [
        "My brother switched to Starling last week.",
        "I'm thinking about moving to Revolut.",
        "Should I switch banks to Chase?",
        "I'm not switching banks, Monzo is fine.",
        "Remember that I bank with Barclays.",
        "The error says: bank=HSBC not reachable",
    ]
    .iter()
    .enumerate()
    {
        say(&app, "u", &format!("s{}", i + 2), &format!("2026-03-0{}T10:00:00Z", i + 2), text).await;
    }
    let mems = app.memories("u").await;
    let bank: Vec<&Value> = mems.iter().filter(|m| m["metadata"]["claim"]["key"] == "attr.bank").collect();
    assert_eq!(bank.len(), 1, "{bank:?}");
    assert_eq!(
        (bank[0]["metadata"]["claim"]["value"].clone(), bank[0]["status"].clone()),
        (json!("monzo"), json!("active"))
    );
}

#[tokio::test]
async fn tenant_frames_extend_the_registry_and_bad_ones_are_refused() {
    let app = spawn().await;
    let bad = json!({"attribute_frames": [{"pattern": "we bill through", "key": "attr.billing_provider"}]});
    let r = app.client.patch(app.url("/admin/tenants/default/config")).json(&bad).send().await.unwrap();
    let (s, b) = crate::common::split(r).await;
    assert_eq!(s, 422, "{b}");
    assert!(b.to_string().contains("exactly one value slot"), "{b}");
    let good = json!({"attribute_frames": [{"pattern": "we bill (through|via) {name}", "key": "attr.billing_provider", "event": false}]});
    let r = app.client.patch(app.url("/admin/tenants/default/config")).json(&good).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    say(&app, "u", "s1", "2026-03-01T10:00:00Z", "We bill through Paddle for the EU shop.").await;
    say(&app, "u", "s2", "2026-03-02T10:00:00Z", "We bill via Stripe now.").await;
    let mems = app.memories("u").await;
    let billing: Vec<(Value, Value)> = mems
        .iter()
        .filter(|m| m["metadata"]["claim"]["key"] == "attr.billing_provider")
        .map(|m| (m["metadata"]["claim"]["value"].clone(), m["status"].clone()))
        .collect();
    assert_eq!(billing, vec![(json!("paddle"), json!("superseded")), (json!("stripe"), json!("active"))]);
}

#[tokio::test]
async fn a_chain_told_in_one_sentence_leaves_its_last_value_current() {
    let app = spawn().await;
    say(&app, "c", "s1", "2026-03-01T10:00:00Z", "our CI runs on Jenkins").await;
    say(&app, "c", "s2", "2026-03-09T10:00:00Z", "we switched CI from Jenkins to CircleCI and then to GitHub Actions")
        .await;
    let mems = app.memories("c").await;
    let current: Vec<&Value> = mems.iter().filter(|m| m["status"] == "active" && m["kind"] == "profile_fact").collect();
    assert!(current.iter().any(|m| m["metadata"]["claim"]["value"] == "github actions"), "{mems:?}");
    assert!(current.iter().all(|m| m["metadata"]["claim"]["value"] != "circleci"), "{mems:?}");
    let b = bundle(&app, "c", "What does the team's CI run on?", None).await;
    let text = b["assembled_context"].as_str().unwrap();
    let current: Vec<&str> = text.lines().filter(|l| !l.starts_with("- (earlier) ")).collect();
    assert!(text.contains("GitHub Actions"), "{text}");
    assert!(!current.iter().any(|l| l.contains("runs on Jenkins")), "{text}");
}

/// A change worded without the attribute's name, then a later change that names it: the first
/// is about the attribute it changed, so the later one does not leave it current.
#[tokio::test]
async fn a_change_is_about_the_attribute_it_changed_however_it_was_worded() {
    let app = spawn().await;
    say(&app, "r", "s1", "2026-02-01T10:00:00Z", "We release quarterly, at the start of each quarter.").await;
    say(&app, "r", "s2", "2026-02-10T10:00:00Z", "Moved to a release every other sprint so customers wait less.").await;
    let mems = app.memories("r").await;
    let first = mems
        .iter()
        .find(|m| m["kind"] == "profile_fact" && m["content"].as_str().unwrap().contains("quarterly"))
        .unwrap();
    assert_eq!(first["metadata"]["claim"]["key"], "attr.release_cadence", "{mems:?}");
    say(&app, "r", "s3", "2026-02-20T10:00:00Z", "We now deploy continuously, straight from main.").await;
    let b = bundle(&app, "r", "How often does the team release?", None).await;
    let text = b["assembled_context"].as_str().unwrap();
    assert!(text.contains("deploy continuously"), "{text}");
    for line in text.lines().filter(|l| l.contains("every other sprint")) {
        assert!(line.starts_with("- (earlier) "), "the sprint cadence is earlier: {text}");
    }
}
