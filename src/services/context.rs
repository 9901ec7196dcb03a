//! Assembling a context bundle: retrieve candidates from every lane, suppress what must not be
//! shown, score, rank, pack under the exact token budget.
//!
//! Suppression, before scoring:
//! - an episode (and its summary) that asserted a single-valued claim value later contradicted
//!   never reaches the bundle: the old value must not come back through the raw record;
//! - an episode whose memories are all superseded or expired is dropped (its newer
//!   replacement carries the content), as is an episode compiled from structured candidates
//!   (its memories represent it);
//! - an episode and its own summary carry the same words: only one of them is kept. In compact
//!   bundles (the default) that is the turn, in its session group, showing the summary's whole
//!   text when the raw text is longer than its line; otherwise the raw line when the whole text
//!   fits in it, else the summary.
//!
//! Ranking (`mnemo-rank-4`, formula in README.md and `context::score`): BM25 and the cosine
//! smoothed over the turns before and after in the same session, fused; then context: the
//! neighbours of the best matches, sessions holding several of them, days and months the task
//! names, speakers it names. Constants in [`Tuning::DEFAULT`].

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use crate::compile::pipeline::is_structured;
use crate::compile::text::{episode_text, message_roles};
use crate::context::pack::pack;
use crate::context::render::{episode_line, memory_line, turn_line, Line, Section};
use crate::context::score::{rank, score_with, Kind, Signals, Weights, WEIGHTS};
use crate::db;
use crate::db::context::{EpisodeCandidate, MemoryCandidate, Probe};
use crate::embed::Embedder;
use crate::model::episode::Episode;
use crate::model::memory::Memory;
use crate::policy::eval::{apply, evaluate_memories, receipt_policy, redact_text, PolicyMode, PolicyOutcome};
use crate::services::context_signals::{smooth, speaker_named, task_words};
pub use crate::services::policy::PolicyContext;
use crate::services::query_terms::{task_dates, task_months, tsquery_for};
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
    /// Neighbouring turns of the strongest matches inherit part of their relevance.
    pub neighbours: bool,
    pub session_matches: bool,
    pub dates: bool,
    /// Each turn's cosine is blended with its neighbours' in the same session.
    pub smoothing: bool,
    /// Turns by a speaker the task names get a boost.
    pub speakers: bool,
    /// Chat turns render without the repeated `[source/type]` label.
    pub compact: bool,
    /// Subject size (episodes) from which vector candidates come from the HNSW indexes.
    pub approx_vectors_from: i64,
    /// The constants of the ranking (the benchmark varies them; calls use [`Tuning::DEFAULT`]).
    pub tuning: Tuning,
}

impl Default for RetrievalOptions {
    fn default() -> Self {
        RetrievalOptions {
            lexical: true,
            semantic: true,
            neighbours: true,
            session_matches: true,
            dates: true,
            smoothing: true,
            speakers: true,
            compact: true,
            approx_vectors_from: db::context::APPROX_VECTORS_FROM,
            tuning: Tuning::DEFAULT,
        }
    }
}

/// The ranking's constants, in one place so the benchmark can cross-validate them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// Fusion weights of the score.
    pub weights: Weights,
    /// Weight of the previous turn's cosine in a turn's smoothed cosine (its own counts 1).
    pub smooth_prev: f64,
    /// Weight of the next turn's cosine.
    pub smooth_next: f64,
    /// Relevance a neighbouring turn inherits from a strong match (the answer often sits next to the question).
    pub neighbour_share: f64,
    /// How many of the best-matching episodes lend relevance to their neighbours.
    pub neighbour_sources: usize,
    /// Extra relevance for turns of a session holding several of the best matches.
    pub session_boost: f64,
    /// How many of the best-matching episodes count towards a session's matches.
    pub session_top: usize,
    /// Extra relevance for turns by a speaker the task names.
    pub speaker_boost: f64,
    /// Extra relevance for items dated on a day the task names.
    pub date_boost: f64,
    /// Extra relevance for items dated in a month the task names (without a day).
    pub month_boost: f64,
}

impl Tuning {
    /// The constants every context call uses.
    pub const DEFAULT: Tuning = Tuning {
        weights: WEIGHTS,
        smooth_prev: 0.5,
        smooth_next: 0.5,
        neighbour_share: 0.5,
        neighbour_sources: 5,
        session_boost: 0.2,
        session_top: 20,
        speaker_boost: 0.6,
        date_boost: 0.5,
        month_boost: 0.25,
    };
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

    // The turns next to every candidate: smoothing reads their cosines, and the turn answering
    // a matching question is one of them. At most two per candidate, so the cost stays bounded.
    // Compact bundles also show a turn's summary as the turn, in its session: those turns too.
    let have: HashSet<i64> = episodes.iter().map(|e| e.seq).collect();
    let mut seqs: Vec<i64> = if opts.smoothing || opts.neighbours {
        episodes.iter().flat_map(|e| [e.seq - 1, e.seq + 1]).filter(|s| *s > 0 && !have.contains(s)).collect()
    } else {
        Vec::new()
    };
    seqs.sort_unstable();
    seqs.dedup();
    let have_ids: HashSet<Uuid> = episodes.iter().map(|e| e.episode.id).collect();
    let mut sources: Vec<Uuid> = if opts.compact {
        memories
            .iter()
            .filter(|m| m.memory.kind == "episode_summary" && m.memory.source_episode_ids.len() == 1)
            .map(|m| m.memory.source_episode_ids[0])
            .filter(|id| !have_ids.contains(id))
            .collect()
    } else {
        Vec::new()
    };
    sources.sort_unstable();
    sources.dedup();
    episodes.extend(db::context::episodes_at(&mut conn, &probe, &seqs, &sources).await?);

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
    // Compact: a long turn shows its summary's full text in its own line, in its session group.
    let mut full_text: HashMap<Uuid, String> = HashMap::new();
    for e in &episodes {
        if let Some(&i) = summary_of.get(&e.episode.id) {
            let m = &memories[i];
            let joint = (e.lex.max(m.lex), max_opt(e.sem, m.sem));
            let fits = episode_text(&e.episode.payload).chars().count() <= EPISODE_LINE_CHARS;
            if fits || opts.compact {
                drop_summaries.insert(i);
                best_lex.insert(e.episode.id, joint);
                if !fits {
                    full_text.insert(e.episode.id, m.memory.content.clone());
                }
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

    let t = &opts.tuning;
    let caveat = !req.task.trim().is_empty()
        && (!memories.is_empty() || !episodes.is_empty())
        && memories.iter().map(|m| m.lex).chain(episodes.iter().map(|e| e.lex)).all(|l| l <= 0.0)
        && !memories
            .iter()
            .map(|m| m.sem)
            .chain(episodes.iter().map(|e| e.sem))
            .any(|s| s.is_some_and(|c| c >= RELATED_COSINE));

    // Episode relevance before context: BM25 normalised by the best episode's, the cosine
    // smoothed over the session's neighbouring turns.
    let joint = |id: &Uuid, lex: f64, sem: Option<f64>| best_lex.get(id).copied().unwrap_or((lex, sem));
    let by_seq: HashMap<i64, (Option<&str>, Option<f64>)> =
        episodes.iter().map(|e| (e.seq, (e.episode.session_id.as_deref(), e.sem))).collect();
    let neighbour_sem = |e: &EpisodeCandidate, seq: i64| {
        by_seq.get(&seq).filter(|(sid, _)| *sid == e.episode.session_id.as_deref()).and_then(|(_, c)| *c)
    };
    let max_ep_lex = episodes.iter().map(|e| joint(&e.episode.id, e.lex, e.sem).0).fold(0.0, f64::max);
    let ep_signals: Vec<(f64, Option<f64>)> = episodes
        .iter()
        .map(|e| {
            let (lex, sem) = joint(&e.episode.id, e.lex, e.sem);
            let sem = if opts.smoothing {
                smooth(sem, neighbour_sem(e, e.seq - 1), neighbour_sem(e, e.seq + 1), t.smooth_prev, t.smooth_next)
            } else {
                sem
            };
            (normalised(lex, max_ep_lex), sem)
        })
        .collect();
    let fused = |(lex, sem): (f64, Option<f64>)| match sem {
        Some(c) => t.weights.semantic * c.max(0.0) + t.weights.lexical * lex,
        None => lex,
    };
    // The best matches, strongest first (ties by id), lend to neighbours and mark sessions.
    let mut strong: Vec<(f64, usize)> = ep_signals.iter().enumerate().map(|(i, s)| (fused(*s), i)).collect();
    strong.retain(|(r, _)| *r > 0.0);
    strong.sort_by(|a, b| b.0.total_cmp(&a.0).then(episodes[a.1].episode.id.cmp(&episodes[b.1].episode.id)));
    let max_rel = strong.first().map_or(0.0, |s| s.0);
    let mut lent: BTreeMap<i64, f64> = BTreeMap::new();
    for &(r, i) in strong.iter().take(if opts.neighbours { t.neighbour_sources } else { 0 }) {
        let e = &episodes[i];
        for s in [e.seq - 1, e.seq + 1] {
            if by_seq.get(&s).is_some_and(|(sid, _)| *sid == e.episode.session_id.as_deref()) {
                let v = lent.entry(s).or_insert(0.0);
                *v = v.max(t.neighbour_share * r / max_rel);
            }
        }
    }
    let mut session_hits: BTreeMap<String, usize> = BTreeMap::new();
    for &(_, i) in strong.iter().take(if opts.session_matches { t.session_top } else { 0 }) {
        if let Some(s) = &episodes[i].episode.session_id {
            *session_hits.entry(s.clone()).or_default() += 1;
        }
    }
    let words = task_words(&req.task);
    let named_months = if opts.dates { task_months(&req.task) } else { Vec::new() };
    let date_boost = |at: DateTime<Utc>| {
        let day = at.date_naive();
        if named_days.contains(&day) {
            t.date_boost
        } else if named_months.iter().any(|m| m.contains(day)) {
            t.month_boost
        } else {
            0.0
        }
    };

    let max_mem_lex = memories.iter().map(|m| joint(&m.memory.id, m.lex, m.sem).0).fold(0.0, f64::max);
    let mut scored: Vec<(f64, Uuid, Item)> = Vec::new();
    for m in memories {
        let (lex, sem) = joint(&m.memory.id, m.lex, m.sem);
        let kind = match m.memory.kind.as_str() {
            "profile_fact" => Kind::Fact,
            "procedure" => Kind::Procedure,
            _ => Kind::Summary,
        };
        let s = score_with(
            &Signals {
                kind,
                lexical: normalised(lex, max_mem_lex),
                semantic: sem,
                at: m.memory.valid_from,
                as_of,
                confidence: m.memory.confidence,
                in_current_session: false,
                context_boost: date_boost(m.memory.valid_from),
                outcome: None,
                current_claim: m.claim_single,
            },
            &t.weights,
        );
        scored.push((s, m.memory.id, Item::Memory(m)));
    }
    for (e, (lex, sem)) in episodes.into_iter().zip(ep_signals) {
        let mut boost = lent.get(&e.seq).copied().unwrap_or(0.0);
        if e.episode.session_id.as_deref().and_then(|s| session_hits.get(s)).is_some_and(|n| *n >= 2) {
            boost += t.session_boost;
        }
        boost += date_boost(e.episode.occurred_at);
        if opts.speakers && message_roles(&e.episode.payload).iter().any(|r| speaker_named(&words, r)) {
            boost += t.speaker_boost;
        }
        let outcome =
            e.episode.metadata.get("outcome").and_then(|o| o.get("status")).and_then(|s| s.as_str()).and_then(|s| {
                match s {
                    "succeeded" => Some(true),
                    "failed" => Some(false),
                    _ => None,
                }
            });
        let s = score_with(
            &Signals {
                kind: Kind::Episode,
                lexical: lex,
                semantic: sem,
                at: e.episode.occurred_at,
                as_of,
                confidence: 1.0,
                in_current_session: req.session_id.is_some() && e.episode.session_id == req.session_id,
                context_boost: boost.min(1.0),
                outcome,
                current_claim: false,
            },
            &t.weights,
        );
        scored.push((s, e.episode.id, Item::Episode(e)));
    }
    rank(&mut scored, |(s, id, _)| (*s, *id));

    let lines: Vec<Line> = scored.iter().map(|(_, _, item)| line_for(item, opts.compact, &full_text)).collect();
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

/// `x` as a share of the best score, 0 when nothing scored.
fn normalised(x: f64, max: f64) -> f64 {
    if max > 0.0 {
        x / max
    } else {
        0.0
    }
}

fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// The bundle line of an item; with `compact`, a chat turn shows only its speakers and text
/// (its session and date head the group it sits in), the whole text when `full_text` holds it.
fn line_for(item: &Item, compact: bool, full_text: &HashMap<Uuid, String>) -> Line {
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
            text: if let Some(full) = full_text.get(&e.id) {
                turn_line(full, e.metadata.get("outcome"), usize::MAX)
            } else if compact && e.payload.get("messages").is_some_and(Value::is_array) {
                turn_line(&episode_text(&e.payload), e.metadata.get("outcome"), EPISODE_LINE_CHARS)
            } else {
                episode_line(&e.source, &e.kind, &episode_text(&e.payload), e.metadata.get("outcome"))
            },
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
