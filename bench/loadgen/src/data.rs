//! Synthetic, deterministic chat data (ported from `examples/bench/data.rs`, which the in-process
//! benchmark uses): everyday chat episodes with first-person facts, questions and chit-chat, and
//! context tasks. Episodes are JSON request bodies here.

use chrono::Duration;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

#[path = "../../chat_text.rs"]
mod chat_text;
pub use chat_text::*;

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
