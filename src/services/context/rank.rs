//! Stage 5: one deterministic score per item, then the total order.
//!
//! Episode relevance before context: BM25 as a share of the best episode's, the cosine smoothed
//! over the session's neighbouring turns, fused; then context: the neighbours of the best
//! matches, sessions holding several of them, days and months the task names, speakers it
//! names or the user's own words it asks about (`mnemo-rank-7`, formula in README.md and `context::score`).

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, NaiveDate, Utc};
use uuid::Uuid;

use super::options::{RetrievalOptions, Tuning};
use super::signals::{asks_own_words, by_user, smooth, speaker_named, task_words};
use super::suppress::Shown;
use crate::bundle::score::{rank, score_with, Kind, Signals};
use crate::bundle::terms::task_months;
use crate::compile::text::message_roles;
use crate::db::context::{EpisodeCandidate, MemoryCandidate};
use crate::model::memory::MemoryKind;

/// Cosine at or above which an item counts as related to the task (for the caveat).
const RELATED_COSINE: f64 = 0.35;

/// A candidate that reached scoring.
#[derive(Debug)]
pub enum Item {
    Memory(MemoryCandidate),
    Episode(EpisodeCandidate),
}

/// What the score needs from the request.
pub struct Task<'a> {
    pub text: &'a str,
    pub as_of: DateTime<Utc>,
    pub session_id: Option<&'a str>,
    /// The days the task names.
    pub days: &'a HashSet<NaiveDate>,
}

/// The ranked items, best first, and whether the bundle needs the "nothing related" caveat.
pub struct Ranked {
    pub items: Vec<(f64, Uuid, Item)>,
    pub caveat: bool,
    /// Compact bundles: the turns whose line shows their summary's whole text.
    pub full_text: HashMap<Uuid, String>,
    /// Items shown marked as earlier ([`Shown::earlier`]).
    pub earlier: HashSet<Uuid>,
}

/// Scores every item of `shown` and sorts them (score desc, then id).
pub fn score_all(shown: Shown, task: &Task<'_>, opts: &RetrievalOptions) -> Ranked {
    let caveat = needs_caveat(&shown, task.text);
    let t = &opts.tuning;
    let by_seq: BySeq<'_> = shown.episodes.iter().map(|e| (e.seq, (e.episode.session_id.as_deref(), e.sem))).collect();
    let ep_signals = episode_signals(&shown, &by_seq, opts);
    let strong = strongest(&shown.episodes, &ep_signals, t);
    let lent = if opts.neighbours { lent_relevance(&shown.episodes, &by_seq, &strong, t) } else { BTreeMap::new() };
    drop(by_seq);
    let session_hits = if opts.session_matches { session_hits(&shown.episodes, &strong, t) } else { BTreeMap::new() };
    let words = task_words(task.text);
    let own_words = opts.speakers && asks_own_words(task.text);
    let months = if opts.dates { task_months(task.text) } else { Vec::new() };
    let date_boost = |at: DateTime<Utc>| {
        let day = at.date_naive();
        if task.days.contains(&day) {
            t.date_boost
        } else if months.iter().any(|m| m.contains(day)) {
            t.month_boost
        } else {
            0.0
        }
    };

    let max_mem_lex = shown.memories.iter().map(|m| shown.signals(&m.memory.id, m.lex, m.sem).0).fold(0.0, f64::max);
    let Shown { memories, episodes, joint, full_text, earlier } = shown;
    let mut items: Vec<(f64, Uuid, Item)> = Vec::with_capacity(memories.len() + episodes.len());
    for m in memories {
        let (lex, sem) = joint.get(&m.memory.id).copied().unwrap_or((m.lex, m.sem));
        let kind = match m.memory.kind {
            MemoryKind::ProfileFact => Kind::Fact,
            MemoryKind::Procedure => Kind::Procedure,
            MemoryKind::EpisodeSummary | MemoryKind::ArtifactRef => Kind::Summary,
        };
        let signals = Signals {
            kind,
            lexical: normalised(lex, max_mem_lex),
            semantic: sem,
            at: m.memory.valid_from,
            as_of: task.as_of,
            confidence: m.memory.confidence,
            in_current_session: false,
            context_boost: date_boost(m.memory.valid_from),
            outcome: None,
            current_claim: m.claim_single,
        };
        items.push((score_with(&signals, &t.weights), m.memory.id, Item::Memory(m)));
    }
    for (e, (lex, sem)) in episodes.into_iter().zip(ep_signals) {
        let mut boost = lent.get(&e.seq).copied().unwrap_or(0.0);
        if e.episode.session_id.as_deref().and_then(|s| session_hits.get(s)).is_some_and(|n| *n >= 2) {
            boost += t.session_boost;
        }
        boost += date_boost(e.episode.occurred_at);
        if opts.speakers {
            let roles = message_roles(&e.episode.payload);
            // The speaker of a turn is named by a task that names them, and the user too by a
            // task about their own words: one signal.
            if roles.iter().any(|r| speaker_named(&words, r)) || (own_words && by_user(&roles)) {
                boost += t.speaker_boost;
            }
        }
        let signals = Signals {
            kind: Kind::Episode,
            lexical: lex,
            semantic: sem,
            at: e.episode.occurred_at,
            as_of: task.as_of,
            confidence: 1.0,
            in_current_session: task.session_id.is_some() && e.episode.session_id.as_deref() == task.session_id,
            context_boost: boost.min(1.0),
            outcome: outcome(&e),
            current_claim: false,
        };
        items.push((score_with(&signals, &t.weights), e.episode.id, Item::Episode(e)));
    }
    rank(&mut items, |(s, id, _)| (*s, *id));
    Ranked { items, caveat, full_text, earlier }
}

/// True when the task has words, something was found, and nothing matches it: no word in
/// common and no cosine of a related pair.
fn needs_caveat(shown: &Shown, task: &str) -> bool {
    let lex = shown.memories.iter().map(|m| m.lex).chain(shown.episodes.iter().map(|e| e.lex));
    let sem = shown.memories.iter().map(|m| m.sem).chain(shown.episodes.iter().map(|e| e.sem));
    !task.trim().is_empty()
        && (!shown.memories.is_empty() || !shown.episodes.is_empty())
        && lex.into_iter().all(|l| l <= 0.0)
        && !sem.into_iter().any(|s| s.is_some_and(|c| c >= RELATED_COSINE))
}

/// Each candidate turn's session and cosine, by seq.
type BySeq<'a> = HashMap<i64, (Option<&'a str>, Option<f64>)>;

/// Each episode's (normalised BM25, smoothed cosine), in the order of `shown.episodes`.
fn episode_signals(shown: &Shown, by_seq: &BySeq<'_>, opts: &RetrievalOptions) -> Vec<(f64, Option<f64>)> {
    let t = &opts.tuning;
    let neighbour_sem = |e: &EpisodeCandidate, seq: i64| {
        by_seq.get(&seq).filter(|(sid, _)| *sid == e.episode.session_id.as_deref()).and_then(|(_, c)| *c)
    };
    let max_lex = shown.episodes.iter().map(|e| shown.signals(&e.episode.id, e.lex, e.sem).0).fold(0.0, f64::max);
    shown
        .episodes
        .iter()
        .map(|e| {
            let (lex, sem) = shown.signals(&e.episode.id, e.lex, e.sem);
            let sem = if opts.smoothing {
                smooth(sem, neighbour_sem(e, e.seq - 1), neighbour_sem(e, e.seq + 1), t.smooth_prev, t.smooth_next)
            } else {
                sem
            };
            (normalised(lex, max_lex), sem)
        })
        .collect()
}

/// The episodes with any relevance, as (fused relevance, index), strongest first, ties by id.
fn strongest(episodes: &[EpisodeCandidate], signals: &[(f64, Option<f64>)], t: &Tuning) -> Vec<(f64, usize)> {
    let fused = |(lex, sem): (f64, Option<f64>)| match sem {
        Some(c) => t.weights.semantic * c.max(0.0) + t.weights.lexical * lex,
        None => lex,
    };
    let mut strong: Vec<(f64, usize)> = signals.iter().enumerate().map(|(i, s)| (fused(*s), i)).collect();
    strong.retain(|(r, _)| *r > 0.0);
    strong.sort_by(|a, b| b.0.total_cmp(&a.0).then(episodes[a.1].episode.id.cmp(&episodes[b.1].episode.id)));
    strong
}

/// The relevance the turns next to the strongest matches inherit, by seq (same session only).
fn lent_relevance(
    episodes: &[EpisodeCandidate],
    by_seq: &BySeq<'_>,
    strong: &[(f64, usize)],
    t: &Tuning,
) -> BTreeMap<i64, f64> {
    let max_rel = strong.first().map_or(0.0, |s| s.0);
    let mut lent = BTreeMap::new();
    for &(r, i) in strong.iter().take(t.neighbour_sources) {
        let e = &episodes[i];
        for s in [e.seq - 1, e.seq + 1] {
            if by_seq.get(&s).is_some_and(|(sid, _)| *sid == e.episode.session_id.as_deref()) {
                let v = lent.entry(s).or_insert(0.0);
                *v = f64::max(*v, t.neighbour_share * r / max_rel);
            }
        }
    }
    lent
}

/// How many of the strongest matches each session holds.
fn session_hits(episodes: &[EpisodeCandidate], strong: &[(f64, usize)], t: &Tuning) -> BTreeMap<String, usize> {
    let mut hits = BTreeMap::new();
    for &(_, i) in strong.iter().take(t.session_top) {
        if let Some(s) = &episodes[i].episode.session_id {
            *hits.entry(s.clone()).or_default() += 1;
        }
    }
    hits
}

/// The episode's recorded outcome: Some(true) succeeded, Some(false) failed.
fn outcome(e: &EpisodeCandidate) -> Option<bool> {
    match e.episode.metadata.get("outcome")?.get("status")?.as_str()? {
        "succeeded" => Some(true),
        "failed" => Some(false),
        _ => None,
    }
}

/// `x` as a share of the best score, 0 when nothing scored.
fn normalised(x: f64, max: f64) -> f64 {
    if max > 0.0 {
        x / max
    } else {
        0.0
    }
}
