//! The LoCoMo recall protocol (retrieval only, no LLM): ten long multi-session conversations
//! whose questions name the turns holding their answers. The data is not in the repository
//! (CC BY-NC 4.0): it is read from `../shared/eval/locomo-dev/locomo-dev.json` (or `--data`),
//! and the mode skips with a message when that file is absent. The protocol is the one in that
//! folder's README: one subject per conversation, one episode per turn, every question of
//! categories 1-4 with evidence asked once per budget; a hit is every evidence turn in the
//! bundle (an included episode, or a source episode of an included memory).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

/// Where the dev set sits relative to the repository (the same path from every worktree).
pub const DEFAULT_DATA: &str = "../shared/eval/locomo-dev/locomo-dev.json";

/// Category names, by LoCoMo's category number.
pub const CATEGORIES: [(u64, &str); 4] = [(1, "multi-hop"), (2, "temporal"), (3, "open-domain"), (4, "single-hop")];

/// One turn, as an episode will carry it.
pub struct Turn {
    pub dia_id: String,
    pub speaker: String,
    pub text: String,
    pub session: String,
    pub at: DateTime<Utc>,
}

/// One scored question.
pub struct Question {
    pub text: String,
    pub category: u64,
    pub evidence: Vec<String>,
}

/// One conversation: its turns in order and its questions.
pub struct Conversation {
    pub id: String,
    pub turns: Vec<Turn>,
    pub questions: Vec<Question>,
}

/// Loads the conversations, or None when the file is absent (the caller prints why it skips).
/// The file is read as `mnemo eval` reads LoCoMo ([`mnemo::eval::formats`]).
pub fn load(path: &Path, only: &[String]) -> anyhow::Result<Option<Vec<Conversation>>> {
    use mnemo::eval::formats::{read, Format};
    if !path.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    let mut out = Vec::new();
    for c in read(&text, Some(Format::Locomo)).with_context(|| path.display().to_string())? {
        if !only.is_empty() && !only.contains(&c.id) {
            continue;
        }
        let turns = c
            .turns
            .into_iter()
            .map(|t| Turn {
                dia_id: t.id,
                speaker: t.role,
                text: t.content,
                session: t.session.unwrap_or_default(),
                at: t.at.unwrap_or_default(),
            })
            .collect();
        let questions = c
            .questions
            .into_iter()
            .filter_map(|q| {
                let category = CATEGORIES.iter().find(|(_, name)| *name == q.category)?.0;
                Some(Question { text: q.text, category, evidence: q.evidence })
            })
            .collect();
        out.push(Conversation { id: c.id, turns, questions });
    }
    Ok(Some(out))
}

/// The episode body for a turn, as the protocol sends it.
pub fn episode_json(subject: &str, t: &Turn) -> Value {
    json!({
        "subject_id": subject,
        "source": "chat",
        "type": "message",
        "session_id": t.session,
        "occurred_at": t.at.to_rfc3339(),
        "payload": {"messages": [{"role": t.speaker, "content": t.text}]},
        "metadata": {"dia_id": t.dia_id},
        "idempotency_key": format!("{subject}/{}", t.dia_id),
    })
}

/// The same episode as the service takes it.
pub fn new_episode(subject: &str, t: &Turn) -> mnemo::model::episode::NewEpisode {
    let v = episode_json(subject, t);
    let obj = |k: &str| v[k].as_object().cloned().unwrap_or_else(Map::new);
    mnemo::model::episode::NewEpisode {
        subject_id: subject.to_string(),
        source: "chat".into(),
        kind: "message".into(),
        payload: obj("payload"),
        metadata: obj("metadata"),
        provenance: Map::new(),
        session_id: Some(t.session.clone()),
        occurred_at: Some(t.at),
        idempotency_key: v["idempotency_key"].as_str().map(str::to_string),
    }
}

/// What a bundle showed: the dia_ids of included episodes and of included memories' sources.
pub fn shown(bundle: &Value, dia_of: &HashMap<String, String>) -> HashSet<String> {
    let mut out = HashSet::new();
    for e in bundle["episodes"].as_array().into_iter().flatten() {
        if let Some(d) = e["metadata"]["dia_id"].as_str() {
            out.insert(d.trim().to_string());
        }
    }
    for key in ["facts", "procedures"] {
        for m in bundle[key].as_array().into_iter().flatten() {
            for s in m["source_episode_ids"].as_array().into_iter().flatten() {
                if let Some(d) = s.as_str().and_then(|id| dia_of.get(id)) {
                    out.insert(d.clone());
                }
            }
        }
    }
    out
}

/// Prints a missed question with the evidence turns the bundle lacked (for reading, not scoring).
pub fn print_miss(conv: &Conversation, q: &Question, budget: usize, shown: &HashSet<String>) {
    let cat = CATEGORIES.iter().find(|(c, _)| *c == q.category).map_or("?", |(_, n)| n);
    println!("MISS {} @{budget} [{cat}] {}", conv.id, q.text);
    for e in q.evidence.iter().filter(|e| !shown.contains(*e)) {
        let turn = conv.turns.iter().find(|t| &t.dia_id == e);
        let text = turn.map_or(String::from("?"), |t| format!("{} {}: {}", t.session, t.speaker, t.text));
        println!("    {e} {}", text.chars().take(160).collect::<String>());
    }
}

/// Hits and evidence coverage, per budget and category.
#[derive(Default)]
pub struct Tally {
    /// (budget, category) -> (questions, hits, coverage sum)
    cells: BTreeMap<(usize, u64), (usize, usize, f64)>,
    /// (budget, conversation) -> (questions, hits)
    per_conv: BTreeMap<(usize, String), (usize, usize)>,
    /// Milliseconds per context call.
    pub latencies: Vec<f64>,
    /// Tokens per bundle, per budget (sum, count).
    tokens: BTreeMap<usize, (usize, usize)>,
    /// sha256 over every bundle's text in call order: two runs that print the same digest
    /// showed the agent the same bytes for every question (a check that a speed change kept
    /// the bundles identical). Recency is measured from the call's instant, so compare runs
    /// made close together.
    bundles: sha2::Sha256,
}

impl Tally {
    /// Adds one bundle's text to the digest of the run's bundles.
    pub fn bundle_text(&mut self, text: &str) {
        use sha2::Digest;
        self.bundles.update(text.as_bytes());
        self.bundles.update([0u8]);
    }

    /// Hex sha256 of the bundles recorded so far.
    pub fn bundles_digest(&self) -> String {
        use sha2::Digest;
        hex::encode(self.bundles.clone().finalize())
    }

    /// Records one answer.
    pub fn add(&mut self, conv: &str, budget: usize, q: &Question, shown: &HashSet<String>, tokens: usize) {
        let found = q.evidence.iter().filter(|e| shown.contains(*e)).count();
        let hit = usize::from(found == q.evidence.len());
        let cell = self.cells.entry((budget, q.category)).or_default();
        cell.0 += 1;
        cell.1 += hit;
        cell.2 += found as f64 / q.evidence.len() as f64;
        let c = self.per_conv.entry((budget, conv.to_string())).or_default();
        c.0 += 1;
        c.1 += hit;
        let t = self.tokens.entry(budget).or_default();
        t.0 += tokens;
        t.1 += 1;
    }

    fn total(&self, budget: usize) -> (usize, usize, f64) {
        self.cells
            .iter()
            .filter(|((b, _), _)| *b == budget)
            .fold((0, 0, 0.0), |a, (_, c)| (a.0 + c.0, a.1 + c.1, a.2 + c.2))
    }

    /// All-evidence recall at a budget.
    pub fn recall(&self, budget: usize) -> f64 {
        let (n, h, _) = self.total(budget);
        h as f64 / n.max(1) as f64
    }

    /// Markdown tables: recall and coverage per budget and category, then per conversation.
    pub fn report(&self, budgets: &[usize]) -> String {
        let mut s = String::from("| budget | all: recall | coverage |");
        for (_, name) in CATEGORIES {
            s.push_str(&format!(" {name}: recall | coverage |"));
        }
        s.push_str(" mean tokens |\n|---|---|---|");
        s.push_str(&"---|---|".repeat(CATEGORIES.len()));
        s.push_str("---|\n");
        for &b in budgets {
            let (n, h, c) = self.total(b);
            s.push_str(&format!("| {b} | {:.3} ({h}/{n}) | {:.3} |", h as f64 / n.max(1) as f64, c / n.max(1) as f64));
            for (cat, _) in CATEGORIES {
                let (n, h, c) = self.cells.get(&(b, cat)).copied().unwrap_or_default();
                s.push_str(&format!(" {:.3} ({h}/{n}) | {:.3} |", h as f64 / n.max(1) as f64, c / n.max(1) as f64));
            }
            let (t, k) = self.tokens.get(&b).copied().unwrap_or_default();
            s.push_str(&format!(" {:.0} |\n", t as f64 / k.max(1) as f64));
        }
        s.push_str("\n| budget |");
        let convs: Vec<&String> = self.per_conv.keys().filter(|(b, _)| *b == budgets[0]).map(|(_, c)| c).collect();
        for c in &convs {
            s.push_str(&format!(" {c} |"));
        }
        s.push_str(&format!("\n|---|{}\n", "---|".repeat(convs.len())));
        for &b in budgets {
            s.push_str(&format!("| {b} |"));
            for c in &convs {
                let (n, h) = self.per_conv.get(&(b, (*c).clone())).copied().unwrap_or_default();
                s.push_str(&format!(" {:.3} |", h as f64 / n.max(1) as f64));
            }
            s.push('\n');
        }
        s
    }

    /// One machine-readable line: recall per budget and per (budget, conversation).
    pub fn result_line(&self, label: &str, budgets: &[usize]) -> String {
        let mut per = Map::new();
        for ((b, c), (n, h)) in &self.per_conv {
            per.insert(format!("{b}/{c}"), json!([h, n]));
        }
        let all: Map<String, Value> = budgets.iter().map(|b| (b.to_string(), json!(self.recall(*b)))).collect();
        let digest = self.bundles_digest();
        format!(
            "RESULT {}",
            json!({"variant": label, "recall": all, "per_conversation": per, "bundles_sha256": digest})
        )
    }
}

/// Nearest-rank p50 and p95 of the recorded latencies.
pub fn latency(ms: &[f64]) -> (f64, f64) {
    let mut v = ms.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let at = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    (at(0.5), at(0.95))
}

/// Where each missing evidence turn ranked in an unbounded bundle (its position among the
/// included items, best first), None when no candidate carried it.
pub fn evidence_ranks(
    all: &mnemo::services::context::Bundle,
    dia_of: &HashMap<String, String>,
    shown: &HashSet<String>,
    evidence: &[String],
) -> Vec<Option<usize>> {
    let mut first: HashMap<String, usize> = HashMap::new();
    let sources: HashMap<uuid::Uuid, Vec<uuid::Uuid>> =
        all.facts.iter().chain(&all.procedures).map(|m| (m.id, m.source_episode_ids.clone())).collect();
    for (pos, s) in all.selected.iter().enumerate() {
        let ids = sources.get(&s.id).cloned().unwrap_or_else(|| vec![s.id]);
        for id in ids {
            if let Some(d) = dia_of.get(&id.to_string()) {
                first.entry(d.clone()).or_insert(pos + 1);
            }
        }
    }
    evidence.iter().filter(|e| !shown.contains(*e)).map(|e| first.get(e).copied()).collect()
}

/// Histogram of the worst rank among a missed question's missing evidence.
#[derive(Default)]
pub struct Depth {
    /// (category, bucket) -> questions
    cells: BTreeMap<(u64, usize), usize>,
}

const DEPTH_BUCKETS: [(usize, &str); 6] =
    [(100, "<=100"), (200, "<=200"), (400, "<=400"), (800, "<=800"), (usize::MAX, ">800"), (0, "absent")];

impl Depth {
    /// Records one missed question.
    pub fn add(&mut self, q: &Question, ranks: &[Option<usize>]) {
        let bucket = if ranks.iter().any(Option::is_none) {
            DEPTH_BUCKETS.len() - 1
        } else {
            let worst = ranks.iter().flatten().max().copied().unwrap_or(0);
            DEPTH_BUCKETS.iter().position(|(b, _)| worst <= *b).unwrap_or(DEPTH_BUCKETS.len() - 2)
        };
        *self.cells.entry((q.category, bucket)).or_default() += 1;
    }

    /// One Markdown table: missed questions by category and by the worst rank of their evidence.
    pub fn report(&self, budget: usize) -> String {
        let mut s = format!(
            "misses at {budget} by the worst rank of a missing evidence turn (unbounded bundle)\n\n| category |"
        );
        for (_, name) in DEPTH_BUCKETS {
            s.push_str(&format!(" {name} |"));
        }
        s.push_str(&format!("\n|---|{}\n", "---|".repeat(DEPTH_BUCKETS.len())));
        for (cat, name) in CATEGORIES {
            s.push_str(&format!("| {name} |"));
            for b in 0..DEPTH_BUCKETS.len() {
                s.push_str(&format!(" {} |", self.cells.get(&(cat, b)).copied().unwrap_or(0)));
            }
            s.push('\n');
        }
        s
    }
}
