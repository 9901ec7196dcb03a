//! The BEAM recall protocol (Tavakoli et al., "Beyond a Million Tokens: Benchmarking and
//! Enhancing Long-Term Memory in LLMs", arXiv 2510.27246), retrieval only: long user/assistant
//! chats about coding, planning and study projects, whose probing questions name the messages
//! holding their answers. The data is not in the repository (no licence stated): it is read from
//! `../shared/eval/beam-dev/beam-100k-dev.json` (or `--data`), and the mode skips with a message
//! when that file is absent. The protocol is the one in that folder's README: one subject per
//! chat, one episode per message, compile until `has_more` is false with synchronous calls, every
//! question with evidence asked once per budget; a hit is every evidence message in the bundle.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use anyhow::Context as _;
use chrono::{DateTime, Utc};
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
/// The file is read as `mnemo eval` reads BEAM ([`mnemo::eval::formats`]).
pub fn load(path: &Path, only: &[String]) -> anyhow::Result<Option<Vec<Chat>>> {
    use mnemo::eval::formats::{read, Format};
    if !path.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    let mut out = Vec::new();
    for c in read(&text, Some(Format::Beam)).with_context(|| path.display().to_string())? {
        if !only.is_empty() && !only.contains(&c.id) {
            continue;
        }
        let messages = c
            .turns
            .into_iter()
            .map(|t| Message {
                id: t.id,
                role: t.role,
                content: t.content,
                session: t.session.unwrap_or_default(),
                at: t.at.unwrap_or_default(),
            })
            .collect();
        let questions = c
            .questions
            .into_iter()
            .map(|q| {
                let updated = if q.stale.is_empty() { Vec::new() } else { q.current };
                Question { category: q.category, text: q.text, evidence: q.evidence, original: q.stale, updated }
            })
            .collect();
        out.push(Chat { id: c.id, messages, questions });
    }
    Ok(Some(out))
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

/// Where the missing evidence of missed questions ranks in an unbounded bundle (`--depth`): a
/// message that is no candidate at all needs retrieval; one ranked just past the cut needs room.
#[derive(Default)]
pub struct Depth {
    /// (budget, category) -> (missed questions, missing messages, of which no candidate,
    /// ranked within 2x the items the bundle held, ranked deeper, items held summed)
    cells: BTreeMap<(usize, String), [usize; 6]>,
}

impl Depth {
    /// Records one missed question: `held` items were in its bundle, `ranks` are its missing
    /// messages' first ranks in the unbounded one.
    pub fn add(&mut self, budget: usize, category: &str, held: usize, ranks: &[Option<usize>]) {
        let c = self.cells.entry((budget, category.to_string())).or_default();
        c[0] += 1;
        c[1] += ranks.len();
        c[5] += held;
        for r in ranks {
            match r {
                None => c[2] += 1,
                Some(r) if *r <= 2 * held => c[3] += 1,
                Some(_) => c[4] += 1,
            }
        }
    }

    /// A Markdown table of the cells.
    pub fn report(&self) -> String {
        let mut s = String::from(
            "| budget | category | missed questions | missing messages | no candidate | within 2x held | deeper | mean items held |\n|---|---|---|---|---|---|---|---|\n",
        );
        for ((b, cat), c) in &self.cells {
            s.push_str(&format!(
                "| {b} | {cat} | {} | {} | {} | {} | {} | {:.0} |\n",
                c[0],
                c[1],
                c[2],
                c[3],
                c[4],
                c[5] as f64 / c[0].max(1) as f64
            ));
        }
        s
    }
}
