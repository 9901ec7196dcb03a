//! Synthetic, deterministic chat data (ported from `examples/bench/data.rs`, which the in-process
//! benchmark uses): everyday chat episodes with first-person facts, questions and chit-chat, and
//! context tasks. Episodes are JSON request bodies here.

use chrono::{DateTime, Duration, TimeZone, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

#[path = "../../chat_text.rs"]
mod chat_text;
pub use chat_text::*;

fn base_time() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).single().unwrap_or_else(Utc::now)
}

/// A deterministic stream of chat episodes (25 turns a session, a session a day, ~60% with an
/// assistant reply), as `POST /v1/episodes` bodies.
pub struct Episodes {
    rng: StdRng,
    i: usize,
}

impl Episodes {
    pub fn new(seed: u64) -> Self {
        Episodes { rng: StdRng::seed_from_u64(SEED ^ seed), i: 0 }
    }

    /// The next episode for `subject`.
    pub fn next(&mut self, subject: &str) -> Value {
        let user = user_message(&mut self.rng);
        let reply = self.rng.gen_bool(0.6).then(|| pick(&mut self.rng, REPLIES).to_string());
        let i = self.i;
        self.i += 1;
        let at = base_time() + Duration::days((i / 25) as i64) + Duration::minutes((i % 25) as i64 * 3);
        let mut messages = vec![json!({"role": "user", "content": user})];
        if let Some(r) = reply {
            messages.push(json!({"role": "assistant", "content": r}));
        }
        json!({
            "subject_id": subject,
            "source": "chat",
            "type": "message",
            "payload": {"messages": messages},
            "session_id": format!("s{:05}", i / 25),
            "occurred_at": at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        })
    }
}

/// `n` distinct context tasks (what an agent would ask memory for before a prompt).
pub fn context_tasks(n: usize) -> Vec<String> {
    let mut tasks = Vec::new();
    let mut rng = StdRng::seed_from_u64(SEED ^ 0x7a5c);
    let templates: &[&dyn Fn(&mut StdRng) -> String] = &[
        &|_| "Where does the user currently work?".to_string(),
        &|_| "Which city does the user live in?".to_string(),
        &|r| format!("What does the user use for {}?", pick(r, TOOLS).1),
        &|r| format!("Help the user with {}.", pick(r, TOPICS)),
        &|r| format!("Draft a reply to the user's question about {}.", pick(r, TOPICS)),
        &|r| format!("The user asks how to {}; tailor the answer to their setup.", pick(r, HOWTOS)),
        &|r| format!("Explain {} vs {} at the user's level.", pick(r, PAIRS).0, pick(r, PAIRS).1),
        &|r| format!("Troubleshoot: the user's {} is {}.", pick(r, FAILURES).0, pick(r, FAILURES).1),
        &|_| "What is the user's role and team?".to_string(),
        &|_| "How does the user like answers to be formatted?".to_string(),
        &|r| format!("Recommend a tool for {} that fits what the user already runs.", pick(r, TOOLS).1),
        &|r| format!("Prepare notes for a meeting with the user on {}.", pick(r, TOPICS)),
    ];
    let mut seen = std::collections::HashSet::new();
    let mut attempts = 0;
    while tasks.len() < n && attempts < n * 200 {
        attempts += 1;
        let t = pick(&mut rng, templates)(&mut rng);
        // Distinct tasks, so the task-vector cache never answers for the embedder.
        let t = if seen.contains(&t) { format!("{t} (request {})", tasks.len()) } else { t };
        if seen.insert(t.clone()) {
            tasks.push(t);
        }
    }
    tasks
}
