//! A scripted OpenAI-compatible chat server for the LLM compiler's tests (axum, port 0).
//!
//! It answers `POST /v1/chat/completions` by the model name it is asked for:
//! - `careful…`: like a careful model. For each episode it reads the text it was sent, runs
//!   the heuristic extraction on it, ties updates to the current facts it was sent, and answers
//!   with paraphrased items (`I work at X` → `The user works at X`), claims, and `updates` ids;
//! - `gullible`: obeys whatever it reads: every sentence of the user's lines becomes a fact;
//! - `summaries`: one summary per episode, its own text, nothing else (the cheapest answer,
//!   for measuring the server's own overhead);
//! - `fabricate`: careful, plus a fact and a claim the text never states;
//! - `unknown-key`: careful, with every claim under a key no registry knows;
//! - `plan`: every episode is a fact claiming `billing.plan = Pro`, a key only some tenants declare;
//! - `garbage`: a reply that is not JSON; `down`: HTTP 503; `slow`: answers after 3 s;
//! - `flaky`: HTTP 500 for the first two calls, then careful;
//! - `poison`: garbage for any batch holding an episode that says POISON, else careful;
//! - `no-schema`: HTTP 400 for `response_format` json_schema, else careful inside a code fence.
//!
//! Every request body is kept (`seen`) so tests can check what the model was shown.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use mnemo::compile::claims::Registry;
use mnemo::compile::link::{link_drafts, Current};
use mnemo::compile::pipeline::{compile_episode, EpisodeInput};
use mnemo::model::memory::MemoryKind;
use serde_json::{json, Value};

/// A running stub.
#[derive(Clone)]
pub struct Stub {
    pub url: String,
    seen: Arc<Mutex<Vec<Value>>>,
    /// Authorization headers received.
    auth: Arc<Mutex<Vec<String>>>,
    calls: Arc<AtomicUsize>,
    /// Microseconds the stub spent composing answers (its own CPU, not the server's).
    busy_us: Arc<std::sync::atomic::AtomicU64>,
}

impl Stub {
    /// Every request body received so far.
    pub fn seen(&self) -> Vec<Value> {
        self.seen.lock().unwrap().clone()
    }

    /// Authorization headers received so far.
    pub fn auth(&self) -> Vec<String> {
        self.auth.lock().unwrap().clone()
    }

    /// How many requests arrived.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Seconds spent composing answers so far.
    pub fn busy_secs(&self) -> f64 {
        self.busy_us.load(Ordering::SeqCst) as f64 / 1e6
    }
}

/// Starts a stub on 127.0.0.1:0.
pub async fn start() -> Stub {
    let stub = Stub {
        url: String::new(),
        seen: Arc::new(Mutex::new(Vec::new())),
        auth: Arc::new(Mutex::new(Vec::new())),
        calls: Arc::new(AtomicUsize::new(0)),
        busy_us: Arc::new(std::sync::atomic::AtomicU64::new(0)),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new().route("/v1/chat/completions", post(chat)).with_state(stub.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Stub { url, ..stub }
}

async fn chat(State(stub): State<Stub>, headers: axum::http::HeaderMap, Json(body): Json<Value>) -> Response {
    let n = stub.calls.fetch_add(1, Ordering::SeqCst);
    if let Some(auth) = headers.get("authorization").and_then(|v| v.to_str().ok()) {
        stub.auth.lock().unwrap().push(auth.to_string());
    }
    let started = std::time::Instant::now();
    stub.seen.lock().unwrap().push(body.clone());
    let model = body["model"].as_str().unwrap_or_default().to_string();
    let data: Value = serde_json::from_str(body["messages"][1]["content"].as_str().unwrap_or("{}")).unwrap_or_default();
    let episodes: Vec<String> = data["episodes"]
        .as_array()
        .map(|a| a.iter().map(|e| e["text"].as_str().unwrap_or_default().to_string()).collect())
        .unwrap_or_default();
    let facts = data["current_facts"].as_array().cloned().unwrap_or_default();
    let careful = || json!({"items": careful_items(&episodes, &facts)}).to_string();
    let content = match model.as_str() {
        m if m.starts_with("careful") => careful(),
        "gullible" => json!({"items": gullible_items(&episodes)}).to_string(),
        "summaries" => {
            let items: Vec<Value> = episodes
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    json!({"kind": "episode_summary",
                "content": t.lines().map(|l| l.split_once(": ").map_or(l, |(_, c)| c)).collect::<Vec<_>>().join(" "),
                "summary": null, "confidence": 0.8, "episode_index": i, "claim": null, "updates": null})
                })
                .collect();
            json!({"items": items}).to_string()
        }
        "fabricate" => {
            let mut items = careful_items(&episodes, &facts);
            items.push(
                json!({"kind": "profile_fact", "content": "The user works at Initech", "summary": "Works at Initech",
                              "confidence": 0.9, "episode_index": 0,
                              "claim": {"key": "employment.current_employer", "value": "Initech"}, "updates": null}),
            );
            items.push(
                json!({"kind": "profile_fact", "content": "The user owns three sailboats", "summary": "Owns sailboats",
                              "confidence": 0.9, "episode_index": 0, "claim": null, "updates": null}),
            );
            json!({"items": items}).to_string()
        }
        "unknown-key" => {
            let mut items = careful_items(&episodes, &facts);
            for i in &mut items {
                if i["claim"].is_object() {
                    i["claim"]["key"] = json!("astrology.sign");
                }
            }
            json!({"items": items}).to_string()
        }
        "plan" => {
            // Claims `billing.plan` whatever the registry says: the server must decide.
            let items: Vec<Value> = episodes
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    json!({"kind": "profile_fact",
                "content": t.split_once(": ").map_or(t.as_str(), |(_, c)| c), "summary": null, "confidence": 0.8,
                "episode_index": i, "claim": {"key": "billing.plan", "value": "Pro"}, "updates": null})
                })
                .collect();
            json!({"items": items}).to_string()
        }
        "garbage" => "Sure! Here are the memories: {items: [oops".to_string(),
        "down" => return (StatusCode::SERVICE_UNAVAILABLE, "overloaded").into_response(),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            careful()
        }
        "flaky" if n < 2 => return (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response(),
        "flaky" => careful(),
        "poison" if episodes.iter().any(|e| e.contains("POISON")) => "{\"items\": [".to_string(),
        "poison" => careful(),
        "no-schema" if body.get("response_format").is_some() => {
            let err = json!({"error": {"message": "response_format json_schema is not supported by this server"}});
            return (StatusCode::BAD_REQUEST, Json(err)).into_response();
        }
        "no-schema" => format!("```json\n{}\n```", careful()),
        _ => return (StatusCode::NOT_FOUND, "no such model").into_response(),
    };
    stub.busy_us.fetch_add(started.elapsed().as_micros() as u64, Ordering::SeqCst);
    let prompt_chars: usize =
        body["messages"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap_or("").len()).sum();
    Json(json!({
        "id": format!("stub-{n}"),
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_chars / 4 + 1, "completion_tokens": content.len() / 4 + 1}
    }))
    .into_response()
}

/// `role: content` lines back into a chat payload.
fn payload_of(text: &str) -> Value {
    let messages: Vec<Value> = text
        .lines()
        .map(|l| match l.split_once(": ") {
            Some((role, content)) if !role.contains(' ') => json!({"role": role, "content": content}),
            _ => json!({"role": "user", "content": l}),
        })
        .collect();
    json!({"messages": messages})
}

/// First person into third ("I work at" → "The user works at"); a paraphrase, not a copy.
fn paraphrase(s: &str) -> String {
    let t = s.trim();
    for (from, to) in
        [("My ", "The user's "), ("my ", "The user's "), ("I'm ", "The user is "), ("I am ", "The user is ")]
    {
        if let Some(rest) = t.strip_prefix(from) {
            return format!("{to}{rest}");
        }
    }
    if let Some(rest) = t.strip_prefix("I ") {
        let mut words = rest.splitn(2, ' ');
        let verb = words.next().unwrap_or_default();
        let tail = words.next().unwrap_or_default();
        let verb = if verb.ends_with('s') || verb.ends_with("ed") { verb.to_string() } else { format!("{verb}s") };
        return format!("The user {verb} {tail}").trim_end().to_string();
    }
    t.to_string()
}

fn careful_items(episodes: &[String], facts: &[Value]) -> Vec<Value> {
    let registry = Registry::builtin();
    let mut current: Vec<Current> = facts
        .iter()
        .filter_map(|f| {
            let key = f["key"].as_str()?.to_string();
            let (_, cardinality) = registry.resolve(&key)?;
            Some(Current { key, value: f["value"].as_str()?.to_string(), cardinality })
        })
        .collect();
    let mut items = Vec::new();
    for (index, text) in episodes.iter().enumerate() {
        let ep = EpisodeInput {
            id: uuid::Uuid::nil(),
            seq: index as i64,
            source: "chat".into(),
            voice: mnemo::model::voice::Voice::User,
            payload: payload_of(text),
            occurred_at: chrono::Utc::now(),
        };
        let mut drafts = compile_episode(&ep, &registry);
        link_drafts(&mut drafts, &mut current, &registry);
        for d in drafts {
            let claim =
                d.claim.as_ref().map(|c| json!({"key": c.key, "value": c.raw_value.as_str().unwrap_or(&c.value)}));
            // What the new fact replaces: the current fact of the same single key, or the value it names.
            let replaced = d.claim.as_ref().and_then(|c| {
                let replaces = d.metadata.get("replaces").and_then(Value::as_str);
                facts.iter().find(|f| {
                    f["key"] == c.key.as_str()
                        && match replaces {
                            Some(old) => f["value"] == old,
                            None => f["value"] != c.value.as_str(),
                        }
                })
            });
            let content = if d.kind == MemoryKind::EpisodeSummary {
                text.lines().map(|l| l.split_once(": ").map_or(l, |(_, c)| c)).collect::<Vec<_>>().join(" ")
            } else {
                paraphrase(&d.content)
            };
            items.push(json!({
                "kind": d.kind,
                "content": content,
                "summary": content.chars().take(120).collect::<String>(),
                "confidence": if d.kind == MemoryKind::EpisodeSummary { 0.8 } else { 0.7 },
                "episode_index": index,
                "claim": claim,
                "updates": replaced.map(|f| f["id"].clone()),
            }));
        }
    }
    items
}

fn gullible_items(episodes: &[String]) -> Vec<Value> {
    let mut items = Vec::new();
    for (index, text) in episodes.iter().enumerate() {
        for line in text.lines() {
            let body = line.split_once(": ").map_or(line, |(_, c)| c);
            for sentence in body.split(". ") {
                items.push(json!({"kind": "profile_fact", "content": sentence, "summary": sentence, "confidence": 1.0,
                                  "episode_index": index, "claim": null, "updates": null}));
            }
        }
    }
    items
}
