//! Running the protocol against a server over HTTP (blocking: `ureq`), with a progress bar.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};

use super::report::Tally;
use super::Conversation;

/// Episodes per ingest request (the batch endpoint's limit).
const BATCH: usize = 100;
/// Compile calls per subject before the run gives up on it (a server that never answers
/// `has_more: false`).
const MAX_COMPILE_CALLS: usize = 100_000;

/// Where and how to run.
#[derive(Debug, Clone)]
pub struct Target {
    /// The server's base URL, e.g. `http://127.0.0.1:8080`.
    pub url: String,
    pub api_key: Option<String>,
    /// Subjects are `<prefix><conversation id>`.
    pub subject_prefix: String,
    pub budgets: Vec<usize>,
}

impl Target {
    fn post(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        let mut req =
            ureq::post(&format!("{}{path}", self.url.trim_end_matches('/'))).timeout(Duration::from_secs(300));
        if let Some(key) = &self.api_key {
            req = req.set("x-api-key", key);
        }
        match req.send_json(body) {
            Ok(resp) => Ok(resp.into_json()?),
            Err(ureq::Error::Status(code, resp)) => {
                let text = resp.into_string().unwrap_or_default();
                bail!("POST {path} answered {code}: {}", text.chars().take(300).collect::<String>())
            }
            Err(e) => Err(e).with_context(|| format!("POST {path}")),
        }
    }
}

/// Ingests, compiles and asks every conversation; returns the tally.
pub fn run(target: &Target, conversations: &[Conversation], bar: &ProgressBar) -> anyhow::Result<Tally> {
    let questions: usize = conversations.iter().map(|c| c.questions.len()).sum();
    let turns: usize = conversations.iter().map(|c| c.turns.len()).sum();
    bar.set_length((turns + questions * target.budgets.len()) as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg:24} [{bar:30}] {pos}/{len} {per_sec} eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let mut tally = Tally::new(&target.budgets);
    for conv in conversations {
        let subject = format!("{}{}", target.subject_prefix, conv.id);
        bar.set_message(format!("{} ingest", conv.id));
        let started = Instant::now();
        let turn_of = ingest(target, &subject, conv, bar)?;
        tally.ingest_secs += started.elapsed().as_secs_f64();
        bar.set_message(format!("{} compile", conv.id));
        let started = Instant::now();
        let calls = compile(target, &subject)?;
        tally.compile_secs += started.elapsed().as_secs_f64();
        tally.compile_calls += calls;
        tally.turns += conv.turns.len();
        tally.chars += conv.turns.iter().map(|t| t.content.chars().count()).sum::<usize>();
        bar.set_message(format!("{} ask", conv.id));
        for q in &conv.questions {
            for &budget in &target.budgets {
                let body = json!({"subject_id": subject, "task": q.text, "max_tokens": budget});
                let started = Instant::now();
                let bundle = target.post("/v1/context", &body)?;
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                let shown = shown(&bundle, &turn_of);
                let tokens = bundle["token_estimate"].as_u64().unwrap_or(0) as usize;
                tally.add(budget, q, &shown, tokens, ms);
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    Ok(tally)
}

/// Sends the turns in order, in batches; returns each stored episode's turn id.
fn ingest(
    target: &Target,
    subject: &str,
    conv: &Conversation,
    bar: &ProgressBar,
) -> anyhow::Result<HashMap<String, String>> {
    let mut turn_of = HashMap::new();
    for chunk in conv.turns.chunks(BATCH) {
        let episodes: Vec<Value> = chunk
            .iter()
            .map(|t| {
                let mut e = json!({
                    "subject_id": subject,
                    "source": "chat",
                    "type": "message",
                    "payload": {"messages": [{"role": t.role, "content": t.content}]},
                    "metadata": {"eval_turn": t.id},
                    "idempotency_key": format!("eval/{subject}/{}", t.id),
                });
                if let Some(s) = &t.session {
                    e["session_id"] = json!(s);
                }
                if let Some(at) = &t.at {
                    e["occurred_at"] = json!(at.to_rfc3339());
                }
                e
            })
            .collect();
        let answer = target.post("/v1/episodes/batch", &json!({ "episodes": episodes }))?;
        let stored = answer["episodes"].as_array().context("the batch answer has no episodes")?;
        for (e, t) in stored.iter().zip(chunk) {
            if let Some(id) = e["id"].as_str() {
                turn_of.insert(id.to_string(), t.id.clone());
            }
        }
        bar.inc(chunk.len() as u64);
    }
    Ok(turn_of)
}

/// Compiles the subject the way a client does: calls until `has_more` is false. Returns the
/// number of calls.
fn compile(target: &Target, subject: &str) -> anyhow::Result<usize> {
    for calls in 1..=MAX_COMPILE_CALLS {
        let answer = target.post("/v1/memories/compile", &json!({ "subject_id": subject }))?;
        if answer["has_more"] != json!(true) {
            return Ok(calls);
        }
    }
    bail!("compile of {subject} still had more after {MAX_COMPILE_CALLS} calls")
}

/// The turns a bundle showed: its episodes, and the sources of its facts, procedures and
/// summaries.
pub fn shown(bundle: &Value, turn_of: &HashMap<String, String>) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut add = |id: Option<&str>| {
        if let Some(t) = id.and_then(|i| turn_of.get(i)) {
            out.insert(t.clone());
        }
    };
    for e in bundle["episodes"].as_array().into_iter().flatten() {
        add(e["id"].as_str());
    }
    for key in ["facts", "procedures"] {
        for m in bundle[key].as_array().into_iter().flatten() {
            for s in m["source_episode_ids"].as_array().into_iter().flatten() {
                add(s.as_str());
            }
        }
    }
    out
}
