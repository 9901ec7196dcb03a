//! The BEAM recall protocol (Tavakoli et al., "Beyond a Million Tokens: Benchmarking and
//! Enhancing Long-Term Memory in LLMs", arXiv 2510.27246), retrieval only: long user/assistant
//! chats about coding, planning and study projects, whose probing questions name the messages
//! holding their answers. The data is not in the repository (no licence stated): it is read from
//! `../shared/eval/beam-dev/beam-100k-dev.json` (or `--data`), and the mode skips with a message
//! when that file is absent. The protocol is the one in that folder's README: one subject per
//! chat, one episode per message, compile until `has_more` is false with synchronous calls, every
//! question with evidence asked once per budget; a hit is every evidence message in the bundle.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use anyhow::Context as _;
use chrono::{DateTime, NaiveDate, TimeDelta, Utc};
use serde_json::{json, Map, Value};

/// Where the dev set sits relative to the repository (the same path from every worktree).
pub const DEFAULT_DATA: &str = "../shared/eval/beam-dev/beam-100k-dev.json";

/// One message, as an episode will carry it.
pub struct Message {
    pub id: String,
    pub role: String,
    pub content: String,
    pub session: String,
    pub at: DateTime<Utc>,
}

/// One scored question.
pub struct Question {
    pub category: String,
    pub text: String,
    pub evidence: Vec<String>,
    /// knowledge_update: the messages holding the old and the new value.
    pub original: Vec<String>,
    pub updated: Vec<String>,
}

/// One chat: its messages in id order and its questions.
pub struct Chat {
    pub id: String,
    pub messages: Vec<Message>,
    pub questions: Vec<Question>,
}

/// Loads the chats (all, or those whose number is in `only`), or None when the file is absent.
pub fn load(path: &Path, only: &[String]) -> anyhow::Result<Option<Vec<Chat>>> {
    if !path.exists() {
        return Ok(None);
    }
    let data: Value = serde_json::from_slice(&std::fs::read(path)?).with_context(|| path.display().to_string())?;
    let mut out = Vec::new();
    for item in data.as_array().context("top level must be an array")? {
        let id = item["chat"].to_string().trim_matches('"').to_string();
        if !only.is_empty() && !only.contains(&id) {
            continue;
        }
        let mut messages = Vec::new();
        let mut date = NaiveDate::from_ymd_opt(2024, 1, 1).context("date")?;
        for batch in item["batches"].as_array().context("batches")? {
            let n = batch["batch_number"].as_u64().unwrap_or(0);
            let turns: Vec<&Value> = batch["turns"].as_array().into_iter().flatten().flat_map(as_list).collect();
            let anchor = turns
                .first()
                .and_then(|m| m["time_anchor"].as_str())
                .or_else(|| batch["time_anchor"].as_str())
                .and_then(|s| NaiveDate::parse_from_str(s, "%B-%d-%Y").ok());
            date = anchor.unwrap_or(date);
            let start = date.and_hms_opt(9, 0, 0).context("time")?.and_utc();
            for (i, m) in turns.iter().enumerate() {
                messages.push(Message {
                    id: m["id"].to_string().trim_matches('"').to_string(),
                    role: m["role"].as_str().unwrap_or("user").to_string(),
                    content: cut_marker(m["content"].as_str().unwrap_or_default()),
                    session: format!("batch_{n}"),
                    at: start + TimeDelta::minutes(i as i64),
                });
            }
        }
        messages.sort_by_key(|m| m.id.parse::<u64>().unwrap_or(u64::MAX));
        let mut questions = Vec::new();
        for (category, list) in item["probing_questions"].as_object().context("probing_questions")? {
            for q in list.as_array().into_iter().flatten() {
                let ids = python_literal(&q["source_chat_ids"]);
                let (original, updated) = (ids_of(&ids["original_info"]), ids_of(&ids["updated_info"]));
                let evidence = dedup(ids_of(&ids));
                if evidence.is_empty() {
                    continue;
                }
                let text = q["question"].as_str().unwrap_or_default().to_string();
                questions.push(Question { category: category.clone(), text, evidence, original, updated });
            }
        }
        out.push(Chat { id, messages, questions });
    }
    Ok(Some(out))
}

fn as_list(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(a) => a.iter().collect(),
        other => vec![other],
    }
}

/// The generator's trailing `->-> <batch>,<n>` marker cut (a data artifact).
fn cut_marker(s: &str) -> String {
    match s.rfind("->->") {
        Some(i) if s[i + 4..].chars().all(|c| c.is_ascii_digit() || c == ',' || c.is_whitespace()) => {
            s[..i].trim_end().to_string()
        }
        _ => s.to_string(),
    }
}

/// `source_chat_ids` as JSON: the file holds Python literals in strings (`"{'a': [1]}"`).
fn python_literal(v: &Value) -> Value {
    match v.as_str() {
        Some(s) => serde_json::from_str(&s.replace('\'', "\"")).unwrap_or(Value::Null),
        None => v.clone(),
    }
}

/// Every message id in a (possibly nested) list or map, in order.
fn ids_of(v: &Value) -> Vec<String> {
    match v {
        Value::Number(n) => vec![n.to_string()],
        Value::String(s) if s.trim().parse::<u64>().is_ok() => vec![s.trim().to_string()],
        Value::Array(a) => a.iter().flat_map(ids_of).collect(),
        Value::Object(o) => o.values().flat_map(ids_of).collect(),
        _ => Vec::new(),
    }
}

fn dedup(ids: Vec<String>) -> Vec<String> {
    let mut seen = HashSet::new();
    ids.into_iter().filter(|i| seen.insert(i.clone())).collect()
}

/// The same episode as the service takes it.
pub fn new_episode(subject: &str, m: &Message) -> mnemo::model::episode::NewEpisode {
    let obj = |v: Value| v.as_object().cloned().unwrap_or_else(Map::new);
    mnemo::model::episode::NewEpisode {
        subject_id: subject.to_string(),
        source: "chat".into(),
        kind: "message".into(),
        payload: obj(json!({"messages": [{"role": m.role, "content": m.content}]})),
        metadata: obj(json!({"msg_id": m.id})),
        provenance: Map::new(),
        session_id: Some(m.session.clone()),
        occurred_at: Some(m.at),
        idempotency_key: Some(format!("{subject}/{}", m.id)),
    }
}

/// What a bundle showed: the msg_ids of included episodes and of included memories' sources.
pub fn shown(bundle: &Value, msg_of: &HashMap<String, String>) -> HashSet<String> {
    let mut out = HashSet::new();
    for e in bundle["episodes"].as_array().into_iter().flatten() {
        if let Some(id) = e["id"].as_str().and_then(|id| msg_of.get(id)) {
            out.insert(id.clone());
        }
    }
    for key in ["facts", "procedures"] {
        for m in bundle[key].as_array().into_iter().flatten() {
            for s in m["source_episode_ids"].as_array().into_iter().flatten() {
                if let Some(id) = s.as_str().and_then(|id| msg_of.get(id)) {
                    out.insert(id.clone());
                }
            }
        }
    }
    out
}

/// Hits and coverage per budget and category, with the protocol's two extra counts.
#[derive(Default)]
pub struct Tally {
    /// (budget, category) -> (questions, hits, coverage sum)
    cells: BTreeMap<(usize, String), (usize, usize, f64)>,
    /// budget -> knowledge_update bundles with an old value and no new one
    stale_only: BTreeMap<usize, usize>,
    /// budget -> contradiction bundles that show both statements
    both_shown: BTreeMap<usize, usize>,
    pub latencies: Vec<f64>,
}

impl Tally {
    /// Records one answer.
    pub fn add(&mut self, budget: usize, q: &Question, shown: &HashSet<String>) {
        let found = q.evidence.iter().filter(|e| shown.contains(*e)).count();
        let cell = self.cells.entry((budget, q.category.clone())).or_default();
        cell.0 += 1;
        cell.1 += usize::from(found == q.evidence.len());
        cell.2 += found as f64 / q.evidence.len() as f64;
        let any = |ids: &[String]| ids.iter().any(|i| shown.contains(i));
        if q.category == "knowledge_update" && any(&q.original) && !any(&q.updated) {
            *self.stale_only.entry(budget).or_default() += 1;
        }
        if q.category == "contradiction_resolution" && found == q.evidence.len() {
            *self.both_shown.entry(budget).or_default() += 1;
        }
    }

    /// Markdown: all-evidence recall (and coverage) per budget, overall and per category.
    pub fn report(&self, budgets: &[usize]) -> String {
        let cats: Vec<String> = {
            let mut c: Vec<String> = self.cells.keys().map(|(_, c)| c.clone()).collect();
            c.sort();
            c.dedup();
            c
        };
        let mut s = String::from("| budget | all | coverage |");
        for c in &cats {
            s.push_str(&format!(" {c} |"));
        }
        s.push_str(" KU stale-only | contradiction both shown |\n|---|---|---|");
        s.push_str(&"---|".repeat(cats.len() + 2));
        s.push('\n');
        for &b in budgets {
            let (n, h, c) = self
                .cells
                .iter()
                .filter(|((bb, _), _)| *bb == b)
                .fold((0, 0, 0.0), |a, (_, x)| (a.0 + x.0, a.1 + x.1, a.2 + x.2));
            s.push_str(&format!("| {b} | {:.3} ({h}/{n}) | {:.3} |", h as f64 / n.max(1) as f64, c / n.max(1) as f64));
            for cat in &cats {
                let (n, h, _) = self.cells.get(&(b, cat.clone())).copied().unwrap_or_default();
                s.push_str(&format!(" {:.2} ({h}/{n}) |", h as f64 / n.max(1) as f64));
            }
            let stale = self.stale_only.get(&b).copied().unwrap_or(0);
            let both = self.both_shown.get(&b).copied().unwrap_or(0);
            s.push_str(&format!(" {stale} | {both} |\n"));
        }
        s
    }
}
