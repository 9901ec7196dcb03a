//! Stages 2-4: what must not be shown (suppression, then the policy), and no double spending
//! between a turn and its own summary.

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use uuid::Uuid;

use super::candidates::Candidates;
use crate::compile::digest::is_digest;
use crate::compile::pipeline::is_structured;
use crate::compile::text::episode_text;
use crate::db::context::{EpisodeCandidate, MemoryCandidate};
use crate::model::memory::MemoryKind;
use crate::policy::eval::{apply, evaluate_memories, receipt_policy, redact_text, PolicyMode, PolicyOutcome};
use crate::services::policy::PolicyContext;

/// Episode text up to this many chars fits on one line (the line shows the first 150).
pub const EPISODE_LINE_CHARS: usize = 150;

/// The candidates left to score.
#[derive(Debug, Default)]
pub struct Shown {
    pub memories: Vec<MemoryCandidate>,
    pub episodes: Vec<EpisodeCandidate>,
    /// Lexical and semantic signals of an item that stands for both a turn and its summary:
    /// the better of the two.
    pub joint: HashMap<Uuid, (f64, Option<f64>)>,
    /// Compact bundles: the turns whose line shows their summary's whole text.
    pub full_text: HashMap<Uuid, String>,
    /// Memories and episodes a later statement among the candidates may have changed
    /// ([`revised`]): shown marked as earlier.
    pub earlier: HashSet<Uuid>,
}

impl Shown {
    /// An item's lexical and semantic signals, the joint ones when it stands for two.
    pub fn signals(&self, id: &Uuid, lex: f64, sem: Option<f64>) -> (f64, Option<f64>) {
        self.joint.get(id).copied().unwrap_or((lex, sem))
    }
}

/// Applies suppression, the policy and the one-of-two rule to the candidates; returns what is
/// left and the receipt's `policy` block.
///
/// - an episode (and its summary) that asserted a single-valued claim value later contradicted
///   never reaches the bundle: the old value must not come back through the raw record (nor
///   does a summary, a session's digest included, that quotes it);
/// - an episode whose memories are all superseded or expired is dropped (its newer replacement
///   carries the content), as is an episode compiled from structured candidates (its memories
///   represent it);
/// - in enforce mode, the episodes of denied or redacted memories go too, and a session digest
///   quoting one of them (packing lets a digest stand for the turns it quotes);
/// - an episode and its own summary carry the same words: only one is kept (see [`one_of_two`]).
pub fn suppress(c: Candidates, policy: &PolicyContext, compact: bool) -> (Shown, Value) {
    let contradicted: HashSet<Uuid> = c.backing.iter().filter(|b| b.contradicted).map(|b| b.episode_id).collect();
    let backed: HashMap<Uuid, bool> = c.backing.iter().map(|b| (b.episode_id, b.visible)).collect();
    let mut episodes = c.episodes;
    episodes.retain(|e| {
        let id = e.episode.id;
        !contradicted.contains(&id) && backed.get(&id).copied().unwrap_or(true) && !is_structured(&e.episode.payload)
    });
    let mut memories: Vec<MemoryCandidate> = c
        .memories
        .into_iter()
        .filter(|m| m.memory.kind != MemoryKind::ArtifactRef)
        .filter(|m| {
            !(m.memory.kind == MemoryKind::EpisodeSummary
                && m.memory.source_episode_ids.iter().any(|s| contradicted.contains(s)))
        })
        .collect();
    let (block, hidden) = apply_policy(policy, &mut memories);
    episodes.retain(|e| !hidden.contains(&e.episode.id));
    stand_for_sessions(&mut memories, &hidden);
    let earlier = revised(&memories);
    let mut shown = Shown { memories, episodes, earlier, ..Default::default() };
    one_of_two(&mut shown, compact);
    let mut seen = HashSet::new();
    shown.episodes.retain(|e| seen.insert(e.episode.id));
    (shown, block)
}

/// Session digests (present only for a task about many moments): a digest that quotes a turn
/// the policy hides goes too (it would show what the policy hid).
fn stand_for_sessions(memories: &mut Vec<MemoryCandidate>, hidden: &HashSet<Uuid>) {
    memories
        .retain(|m| !(is_digest(&m.memory.metadata) && m.memory.source_episode_ids.iter().any(|s| hidden.contains(s))));
}

/// The memories and episodes that a candidate memory says its message may change
/// (`metadata.revises`, written by the compiler when it could not say surely, see
/// [`crate::compile::topic::Doubt`]): the bundle marks them as earlier, so the agent sees the
/// newer statement as current.
fn revised(memories: &[MemoryCandidate]) -> HashSet<Uuid> {
    let mut out = HashSet::new();
    // Only the compiler writes `revises`, on memories of the user's own words.
    let evidence = |m: &MemoryCandidate| m.memory.metadata.get("voice").and_then(Value::as_str) == Some("evidence");
    for m in memories.iter().filter(|m| !evidence(m)) {
        let Some(list) = m.memory.metadata.get("revises").and_then(Value::as_array) else { continue };
        for r in list {
            let ids = r.get("episodes").and_then(Value::as_array).into_iter().flatten().chain(r.get("memory"));
            out.extend(ids.filter_map(Value::as_str).filter_map(|s| s.parse::<Uuid>().ok()));
        }
    }
    out
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
        let memory = std::sync::Arc::make_mut(&mut m.memory);
        redact_text(&mut memory.content, &mut memory.summary);
        m.lex = 0.0;
        m.sem = None;
    });
    (receipt_policy(Some(&active.hash), &outcome, policy.mode), hidden)
}

/// A turn and its own (single-turn) summary: one of them stays, with the better signals of
/// the two. In compact bundles that is the turn, in its session group, showing the summary's
/// whole text when the raw text is longer than its line; otherwise the raw line when the whole
/// text fits in it, else the summary.
fn one_of_two(shown: &mut Shown, compact: bool) {
    let summary_of: HashMap<Uuid, usize> = shown
        .memories
        .iter()
        .enumerate()
        .filter(|(_, m)| m.memory.kind == MemoryKind::EpisodeSummary && m.memory.source_episode_ids.len() == 1)
        .map(|(i, m)| (m.memory.source_episode_ids[0], i))
        .collect();
    let mut drop_summaries: HashSet<usize> = HashSet::new();
    let mut drop_episodes: HashSet<Uuid> = HashSet::new();
    for e in &shown.episodes {
        let Some(&i) = summary_of.get(&e.episode.id) else { continue };
        let m = &shown.memories[i];
        let joint = (e.lex.max(m.lex), max_opt(e.sem, m.sem));
        let fits = episode_text(&e.episode.payload).chars().count() <= EPISODE_LINE_CHARS;
        if fits || compact {
            drop_summaries.insert(i);
            shown.joint.insert(e.episode.id, joint);
            if !fits {
                shown.full_text.insert(e.episode.id, m.memory.content.clone());
            }
        } else {
            drop_episodes.insert(e.episode.id);
            shown.joint.insert(m.memory.id, joint);
        }
    }
    let mut idx = 0;
    shown.memories.retain(|_| {
        let keep = !drop_summaries.contains(&idx);
        idx += 1;
        keep
    });
    shown.episodes.retain(|e| !drop_episodes.contains(&e.episode.id));
}

fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::context::Backing;
    use crate::model::episode::Episode;
    use crate::model::memory::Memory;
    use chrono::{TimeZone, Utc};
    use serde_json::json;

    use std::sync::Arc;

    fn turn(n: u128, seq: i64, text: &str) -> EpisodeCandidate {
        let at = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        EpisodeCandidate {
            episode: Arc::new(Episode {
                id: Uuid::from_u128(n),
                subject_id: "s".into(),
                source: "chat".into(),
                kind: "message".into(),
                payload: json!({"messages": [{"role": "user", "content": text}]}),
                metadata: json!({}),
                provenance: json!({}),
                session_id: Some("s1".into()),
                occurred_at: at,
                created_at: at,
            }),
            seq,
            lex: 0.5,
            sem: Some(0.2),
            focus: None,
        }
    }

    fn summary(n: u128, of: u128, content: &str) -> MemoryCandidate {
        let at = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        MemoryCandidate {
            memory: Arc::new(Memory {
                id: Uuid::from_u128(n),
                subject_id: "s".into(),
                kind: MemoryKind::EpisodeSummary,
                content: content.into(),
                summary: String::new(),
                confidence: 1.0,
                valid_from: at,
                valid_to: None,
                source_episode_ids: vec![Uuid::from_u128(of)],
                metadata: json!({}),
                status: crate::model::memory::MemoryStatus::Active,
                sensitivity_labels: vec![],
                suggested_labels: vec![],
                created_at: at,
                updated_at: at,
            }),
            asserted_valid_to: None,
            superseded_at: None,
            claim_single: false,
            lex: 0.9,
            sem: Some(0.1),
        }
    }

    #[test]
    fn contradicted_and_unbacked_turns_go_with_their_summaries() {
        let c = Candidates {
            memories: vec![summary(10, 1, "a"), summary(11, 3, "c")],
            episodes: vec![turn(1, 1, "a"), turn(2, 2, "b"), turn(3, 3, "c"), turn(2, 2, "b")],
            backing: vec![
                Backing { episode_id: Uuid::from_u128(1), visible: true, contradicted: true },
                Backing { episode_id: Uuid::from_u128(2), visible: false, contradicted: false },
            ],
            snapshot: None,
            ..Candidates::default()
        };
        let (s, _) = suppress(c, &PolicyContext::default(), true);
        let ids: Vec<u128> = s.episodes.iter().map(|e| e.episode.id.as_u128()).collect();
        assert_eq!(ids, vec![3], "contradicted turn 1 and unbacked turn 2 are gone, repeats too");
        assert!(s.memories.is_empty(), "summary of 1 is contradicted, summary of 3 is merged into its turn");
        assert_eq!(s.signals(&Uuid::from_u128(3), 0.0, None), (0.9, Some(0.2)), "the better of both signals");
    }

    #[test]
    fn a_long_turn_keeps_its_summary_in_compact_and_loose_bundles() {
        let long = "word ".repeat(60);
        let c = || Candidates {
            memories: vec![summary(10, 1, "the whole summary")],
            episodes: vec![turn(1, 1, &long)],
            backing: vec![],
            snapshot: None,
            ..Candidates::default()
        };
        let (compact, _) = suppress(c(), &PolicyContext::default(), true);
        assert_eq!(compact.episodes.len(), 1);
        assert!(compact.memories.is_empty());
        assert_eq!(compact.full_text.get(&Uuid::from_u128(1)).map(String::as_str), Some("the whole summary"));
        let (loose, _) = suppress(c(), &PolicyContext::default(), false);
        assert!(loose.episodes.is_empty(), "the summary stands for the long turn");
        assert_eq!(loose.memories.len(), 1);
        assert_eq!(loose.signals(&Uuid::from_u128(10), 0.0, None), (0.9, Some(0.2)));
    }

    #[test]
    fn what_a_later_statement_may_have_changed_is_marked_earlier() {
        let mut newer = summary(11, 2, "user: these days it's a matcha latte");
        Arc::make_mut(&mut newer.memory).metadata =
            json!({"revises": [{"memory": Uuid::from_u128(10), "episodes": [Uuid::from_u128(1)]}]});
        let c = Candidates {
            memories: vec![summary(10, 1, "user: usual coffee: flat white"), newer],
            episodes: vec![turn(1, 1, "usual coffee: flat white"), turn(2, 2, "these days it's a matcha latte")],
            ..Candidates::default()
        };
        let (s, _) = suppress(c, &PolicyContext::default(), true);
        let mut earlier: Vec<u128> = s.earlier.iter().map(|id| id.as_u128()).collect();
        earlier.sort_unstable();
        assert_eq!(earlier, [1, 10], "the earlier memory and its turn; the newer is current");
    }
}
