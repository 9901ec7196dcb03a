//! Assembling a context bundle: retrieve candidates from every lane, suppress what must not be
//! shown, score, rank, pack under the exact token budget.
//!
//! Suppression, before scoring:
//! - an episode (and its summary) that asserted a single-valued claim value later contradicted
//!   never reaches the bundle: the old value must not come back through the raw record;
//! - an episode whose memories are all superseded or expired is dropped (its newer
//!   replacement carries the content), as is an episode compiled from structured candidates
//!   (its memories represent it);
//! - an episode and its own summary carry the same words: only one of them is kept, the raw
//!   line when the whole text fits in it (it also shows source and session), else the summary.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use crate::compile::pipeline::is_structured;
use crate::compile::text::episode_text;
use crate::context::pack::pack;
use crate::context::render::{episode_line, memory_line, Line, Section};
use crate::context::score::{rank, score, Kind, Signals};
use crate::db;
use crate::db::context::{EpisodeCandidate, MemoryCandidate, Probe};
use crate::embed::Embedder;
use crate::model::episode::Episode;
use crate::model::memory::Memory;
use crate::policy::eval::{apply, evaluate_memories, receipt_policy, redact_text, PolicyMode, PolicyOutcome};
pub use crate::services::policy::PolicyContext;
use crate::services::query_terms::{task_dates, tsquery_for};
pub use crate::services::task_vectors::TaskVectorCache;

/// A validated context request.
#[derive(Debug, Clone)]
pub struct ContextRequest {
    pub subject_id: String,
    pub task: String,
    pub max_tokens: usize,
    pub session_id: Option<String>,
    pub as_of: Option<DateTime<Utc>>,
    /// Which retrieval techniques run (all by default; the benchmark switches them off one by one).
    pub options: RetrievalOptions,
    /// The tenant's policy bundle, mode and the caller it is evaluated for.
    pub policy: PolicyContext,
}

/// Switches for each retrieval technique.
#[derive(Debug, Clone, Copy)]
pub struct RetrievalOptions {
    pub lexical: bool,
    pub semantic: bool,
    pub neighbours: bool,
    pub session_matches: bool,
    pub dates: bool,
    /// Subject size (episodes) from which vector candidates come from the HNSW indexes.
    pub approx_vectors_from: i64,
}

impl Default for RetrievalOptions {
    fn default() -> Self {
        RetrievalOptions {
            lexical: true,
            semantic: true,
            neighbours: true,
            session_matches: true,
            dates: true,
            approx_vectors_from: db::context::APPROX_VECTORS_FROM,
        }
    }
}

/// One session among the included episodes.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SessionInfo {
    pub session_id: String,
    pub episode_count: usize,
    #[serde(serialize_with = "crate::model::time::serialize")]
    pub first_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::model::time::serialize")]
    pub last_at: DateTime<Utc>,
}

/// An included item with its rank and score (for receipts).
#[derive(Debug, Clone)]
pub struct Selected {
    pub id: Uuid,
    pub is_memory: bool,
    pub score: f64,
}

/// The assembled bundle.
#[derive(Debug, Clone)]
pub struct Bundle {
    pub facts: Vec<Memory>,
    pub procedures: Vec<Memory>,
    pub episodes: Vec<Episode>,
    pub assembled_context: String,
    pub token_estimate: usize,
    pub sessions: Vec<SessionInfo>,
    pub as_of: DateTime<Utc>,
    pub selected: Vec<Selected>,
    /// The receipt's `policy` block: bundle hash, filters applied and skipped, mode.
    pub policy: Value,
}

/// Relevance a neighbouring turn inherits from a strong match (the answer often sits next to the question).
const NEIGHBOUR_SHARE: f64 = 0.5;
/// How many of the best-matching episodes lend relevance to their neighbours.
const NEIGHBOUR_SOURCES: usize = 5;
/// Extra relevance for items dated on a day the task names.
const DATE_BOOST: f64 = 0.5;
/// Extra relevance for items of a session in which several items matched.
const SESSION_MATCH_BOOST: f64 = 0.2;
/// Cosine at or above which an item counts as related to the task (for the caveat).
const RELATED_COSINE: f64 = 0.35;
/// Episode text up to this many chars fits on one line (the line shows the first 150).
const EPISODE_LINE_CHARS: usize = 150;

enum Item {
    Memory(MemoryCandidate),
    Episode(EpisodeCandidate),
}

/// The memory as believed at `as_of` (a row superseded later was still active then).
fn as_believed(c: &MemoryCandidate, as_of: DateTime<Utc>) -> Memory {
    let mut m = c.memory.clone();
    let superseded_then = c.superseded_at.is_some_and(|t| t <= as_of);
    if m.status == "superseded" && !superseded_then {
        m.status = "active".to_string();
        m.valid_to = c.asserted_valid_to;
    }
    m
}

/// Evaluates the policy on the candidates before scoring: in enforce mode denied memories go
/// and redacted ones lose their text and their text-derived scores (so hidden words cannot
/// rank them). Returns the receipt's `policy` block and, in enforce mode, the episodes the
/// denied or redacted memories came from: showing those raw would undo the policy.
fn apply_policy(policy: &PolicyContext, memories: &mut Vec<MemoryCandidate>) -> (Value, HashSet<Uuid>) {
    let Some(active) = &policy.active else {
        return (receipt_policy(None, &PolicyOutcome::default(), policy.mode), HashSet::new());
    };
    let outcome = evaluate_memories(
        &active.bundle,
        memories.iter().map(|m| (m.memory.id, &m.memory.sensitivity_labels)),
        policy.caller_type.as_deref(),
        policy.caller_id.as_deref(),
    );
    let mut hidden = HashSet::new();
    if policy.mode == PolicyMode::Enforce {
        for (m, d) in memories.iter().zip(&outcome.decisions) {
            if d.is_some() {
                hidden.extend(m.memory.source_episode_ids.iter().copied());
            }
        }
    }
    *memories = apply(policy.mode, std::mem::take(memories), &outcome.decisions, |m: &mut MemoryCandidate| {
        redact_text(&mut m.memory.content, &mut m.memory.summary);
        m.lex = 0.0;
        m.sem = None;
    });
    (receipt_policy(Some(&active.hash), &outcome, policy.mode), hidden)
}

/// Assembles the bundle for a request.
pub async fn assemble(
    pool: &PgPool,
    embedder: &Arc<dyn Embedder>,
    cache: &TaskVectorCache,
    tenant: &str,
    req: &ContextRequest,
) -> anyhow::Result<Bundle> {
    let as_of = req.as_of.unwrap_or_else(crate::model::time::now_micros);
    let opts = req.options;
    let vector = if opts.semantic && embedder.is_semantic() {
        Some((cache.get(embedder, &req.task).await?, embedder.model_id().to_string()))
    } else {
        None
    };
    let probe = Probe {
        tenant,
        subject_id: &req.subject_id,
        as_of,
        tsquery: if opts.lexical { tsquery_for(&req.task) } else { None },
        vector,
        session_id: req.session_id.as_deref(),
        days: if opts.dates { day_starts(&req.task, as_of) } else { Vec::new() },
        approx_from: opts.approx_vectors_from,
    };
    let named_days: HashSet<chrono::NaiveDate> = probe.days.iter().map(|d| d.date_naive()).collect();
    let mut conn = db::scope::begin(pool, tenant).await?;
    if probe.vector.is_some() {
        db::context::prepare_vector_search(&mut conn).await?;
    }
    let memories = db::context::memory_candidates(&mut conn, &probe).await?;
    let mut episodes = db::context::episode_candidates(&mut conn, &probe).await?;

    // Neighbouring turns of the strongest episode matches.
    let max_ep_lex = episodes.iter().map(|e| e.lex).fold(0.0, f64::max);
    let mut strong: Vec<&EpisodeCandidate> = episodes.iter().filter(|e| e.lex > 0.0).collect();
    strong.sort_by(|a, b| b.lex.total_cmp(&a.lex).then(a.episode.id.cmp(&b.episode.id)));
    let have: HashSet<i64> = episodes.iter().map(|e| e.seq).collect();
    let mut lent: BTreeMap<i64, f64> = BTreeMap::new();
    let sources = if opts.neighbours { NEIGHBOUR_SOURCES } else { 0 };
    for e in strong.iter().take(sources) {
        let share = NEIGHBOUR_SHARE * e.lex / max_ep_lex.max(f64::EPSILON);
        for s in [e.seq - 1, e.seq + 1] {
            let v = lent.entry(s).or_insert(0.0);
            *v = v.max(share);
        }
    }
    let missing: Vec<i64> = lent.keys().copied().filter(|s| !have.contains(s)).collect();
    episodes.extend(db::context::neighbours(&mut conn, &probe, &missing).await?);

    // Suppression (see the module doc), asked for the candidate episodes and the sources of the
    // candidate episode summaries only.
    let mut asked: Vec<Uuid> = episodes.iter().map(|e| e.episode.id).collect();
    asked.extend(
        memories
            .iter()
            .filter(|m| m.memory.kind == "episode_summary")
            .flat_map(|m| m.memory.source_episode_ids.iter().copied()),
    );
    asked.sort_unstable();
    asked.dedup();
    let backing = db::context::episode_backing(&mut conn, &probe, &asked).await?;
    drop(conn);
    let contradicted: HashSet<Uuid> = backing.iter().filter(|b| b.contradicted).map(|b| b.episode_id).collect();
    let backed: HashMap<Uuid, bool> = backing.iter().map(|b| (b.episode_id, b.visible)).collect();
    episodes.retain(|e| {
        let id = e.episode.id;
        !contradicted.contains(&id) && backed.get(&id).copied().unwrap_or(true) && !is_structured(&e.episode.payload)
    });
    let mut memories: Vec<MemoryCandidate> = memories
        .into_iter()
        .filter(|m| m.memory.kind != "artifact_ref")
        .filter(|m| {
            !(m.memory.kind == "episode_summary"
                && m.memory.source_episode_ids.iter().any(|s| contradicted.contains(s)))
        })
        .collect();
    let (policy_block, hidden_sources) = apply_policy(&req.policy, &mut memories);
    episodes.retain(|e| !hidden_sources.contains(&e.episode.id));

    // No double spending between an episode and its own summary.
    let summary_of: HashMap<Uuid, usize> = memories
        .iter()
        .enumerate()
        .filter(|(_, m)| m.memory.kind == "episode_summary" && m.memory.source_episode_ids.len() == 1)
        .map(|(i, m)| (m.memory.source_episode_ids[0], i))
        .collect();
    let mut drop_summaries: HashSet<usize> = HashSet::new();
    let mut drop_episodes: HashSet<Uuid> = HashSet::new();
    let mut best_lex: HashMap<Uuid, (f64, Option<f64>)> = HashMap::new();
    for e in &episodes {
        if let Some(&i) = summary_of.get(&e.episode.id) {
            let m = &memories[i];
            let joint = (e.lex.max(m.lex), max_opt(e.sem, m.sem));
            if episode_text(&e.episode.payload).chars().count() <= EPISODE_LINE_CHARS {
                drop_summaries.insert(i);
                best_lex.insert(e.episode.id, joint);
            } else {
                drop_episodes.insert(e.episode.id);
                best_lex.insert(m.memory.id, joint);
            }
        }
    }
    let mut idx = 0;
    memories.retain(|_| {
        let keep = !drop_summaries.contains(&idx);
        idx += 1;
        keep
    });
    episodes.retain(|e| !drop_episodes.contains(&e.episode.id));
    let mut seen = HashSet::new();
    episodes.retain(|e| seen.insert(e.episode.id));

    // Sessions in which several items matched.
    let mut session_hits: BTreeMap<String, usize> = BTreeMap::new();
    for e in &episodes {
        if let Some(s) = &e.episode.session_id {
            if e.lex > 0.0 || e.sem.is_some_and(|c| c >= RELATED_COSINE) {
                *session_hits.entry(s.clone()).or_default() += 1;
            }
        }
    }

    let max_lex = memories.iter().map(|m| m.lex).chain(episodes.iter().map(|e| e.lex)).fold(0.0, f64::max);
    let norm = |x: f64| if max_lex > 0.0 { x / max_lex } else { 0.0 };
    // The caveat speaks about "the items below": without candidates there are none.
    let caveat = !req.task.trim().is_empty()
        && (!memories.is_empty() || !episodes.is_empty())
        && max_lex <= 0.0
        && !memories
            .iter()
            .map(|m| m.sem)
            .chain(episodes.iter().map(|e| e.sem))
            .any(|s| s.is_some_and(|c| c >= RELATED_COSINE));

    let mut scored: Vec<(f64, Uuid, Item)> = Vec::new();
    for m in memories {
        let (lex, sem) = best_lex.get(&m.memory.id).copied().unwrap_or((m.lex, m.sem));
        let kind = match m.memory.kind.as_str() {
            "profile_fact" => Kind::Fact,
            "procedure" => Kind::Procedure,
            _ => Kind::Summary,
        };
        let s = score(&Signals {
            kind,
            lexical: norm(lex),
            semantic: sem,
            at: m.memory.valid_from,
            as_of,
            confidence: m.memory.confidence,
            in_current_session: false,
            context_boost: if named_days.contains(&m.memory.valid_from.date_naive()) { DATE_BOOST } else { 0.0 },
            outcome: None,
            current_claim: m.claim_single,
        });
        scored.push((s, m.memory.id, Item::Memory(m)));
    }
    for e in episodes {
        let (lex, sem) = best_lex.get(&e.episode.id).copied().unwrap_or((e.lex, e.sem));
        let mut boost = lent.get(&e.seq).copied().unwrap_or(0.0);
        if opts.session_matches
            && e.episode.session_id.as_ref().and_then(|s| session_hits.get(s)).is_some_and(|n| *n >= 2)
        {
            boost += SESSION_MATCH_BOOST;
        }
        if named_days.contains(&e.episode.occurred_at.date_naive()) {
            boost += DATE_BOOST;
        }
        let outcome =
            e.episode.metadata.get("outcome").and_then(|o| o.get("status")).and_then(|s| s.as_str()).and_then(|s| {
                match s {
                    "succeeded" => Some(true),
                    "failed" => Some(false),
                    _ => None,
                }
            });
        let s = score(&Signals {
            kind: Kind::Episode,
            lexical: norm(lex),
            semantic: sem,
            at: e.episode.occurred_at,
            as_of,
            confidence: 1.0,
            in_current_session: req.session_id.is_some() && e.episode.session_id == req.session_id,
            context_boost: boost.min(1.0),
            outcome,
            current_claim: false,
        });
        scored.push((s, e.episode.id, Item::Episode(e)));
    }
    rank(&mut scored, |(s, id, _)| (*s, *id));

    let lines: Vec<Line> = scored.iter().map(|(_, _, item)| line_for(item)).collect();
    let packed = pack(&req.task, caveat, req.session_id.as_deref(), &lines, req.max_tokens);
    let included: HashSet<Uuid> = packed.included.iter().copied().collect();
    let mut by_id: HashMap<Uuid, (f64, Item)> = scored.into_iter().map(|(s, id, it)| (id, (s, it))).collect();

    let mut bundle = Bundle {
        facts: Vec::new(),
        procedures: Vec::new(),
        episodes: Vec::new(),
        assembled_context: packed.text,
        token_estimate: packed.token_estimate,
        sessions: Vec::new(),
        as_of,
        selected: Vec::new(),
        policy: policy_block,
    };
    let mut summaries = Vec::new();
    let mut sessions: BTreeMap<String, SessionInfo> = BTreeMap::new();
    for id in &packed.included {
        let Some((s, item)) = by_id.remove(id) else { continue };
        bundle.selected.push(Selected { id: *id, is_memory: matches!(item, Item::Memory(_)), score: s });
        match item {
            Item::Memory(m) => match m.memory.kind.as_str() {
                "profile_fact" => bundle.facts.push(as_believed(&m, as_of)),
                "procedure" => bundle.procedures.push(as_believed(&m, as_of)),
                _ => summaries.push(as_believed(&m, as_of)),
            },
            Item::Episode(EpisodeCandidate { episode: e, .. }) => {
                if let Some(sid) = &e.session_id {
                    let info = sessions.entry(sid.clone()).or_insert(SessionInfo {
                        session_id: sid.clone(),
                        episode_count: 0,
                        first_at: e.created_at,
                        last_at: e.created_at,
                    });
                    info.episode_count += 1;
                    info.first_at = info.first_at.min(e.created_at);
                    info.last_at = info.last_at.max(e.created_at);
                }
                bundle.episodes.push(e);
            }
        }
    }
    debug_assert!(included.len() == bundle.selected.len());
    bundle.facts.extend(summaries);
    bundle.episodes.sort_by_key(|a| (a.occurred_at, a.created_at, a.id));
    bundle.sessions = sessions.into_values().collect();
    Ok(bundle)
}

fn day_starts(task: &str, as_of: DateTime<Utc>) -> Vec<DateTime<Utc>> {
    task_dates(task, as_of).into_iter().filter_map(|d| d.and_hms_opt(0, 0, 0)).map(|t| t.and_utc()).collect()
}

fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn line_for(item: &Item) -> Line {
    match item {
        Item::Memory(MemoryCandidate { memory: m, .. }) => Line {
            id: m.id,
            section: match m.kind.as_str() {
                "profile_fact" => Section::Facts,
                "procedure" => Section::Procedures,
                _ => Section::History,
            },
            text: memory_line(&m.kind, &m.content, Some(m.valid_from)),
            session_id: None,
            date: None,
            order: m.valid_from.timestamp_micros(),
        },
        Item::Episode(EpisodeCandidate { episode: e, .. }) => Line {
            id: e.id,
            section: Section::Interactions,
            text: episode_line(&e.source, &e.kind, &episode_text(&e.payload), e.metadata.get("outcome")),
            session_id: e.session_id.clone(),
            date: Some(e.occurred_at.format("%Y-%m-%d").to_string()),
            order: e.occurred_at.timestamp_micros(),
        },
    }
}

/// Ids of included items, by kind, for the response's `provenance`.
pub fn provenance(bundle: &Bundle) -> serde_json::Value {
    let ids = |v: &[Memory], kind: &str| -> Vec<String> {
        v.iter().filter(|m| m.kind == kind).map(|m| m.id.to_string()).collect()
    };
    let episode_ids: BTreeSet<String> = bundle.episodes.iter().map(|e| e.id.to_string()).collect();
    serde_json::json!({
        "fact_ids": ids(&bundle.facts, "profile_fact"),
        "summary_ids": ids(&bundle.facts, "episode_summary"),
        "procedure_ids": ids(&bundle.procedures, "procedure"),
        "episode_ids": bundle.episodes.iter().map(|e| e.id.to_string()).filter(|i| episode_ids.contains(i)).collect::<Vec<_>>(),
    })
}
