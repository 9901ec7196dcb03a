//! What the resolver reads and writes: its view of a memory, the rules and their decisions, and
//! the validity-window arithmetic both passes share.

use std::cmp::Ordering;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::compile::claims::{Cardinality, Claim};
use crate::model::memory::MemoryKind;

/// Lexical threshold for `profile_fact` memories, which restate facts in short sentences.
pub const PROFILE_FACT_THRESHOLD: f64 = 0.6;
/// Lexical threshold for every other kind.
pub const DEFAULT_THRESHOLD: f64 = 0.8;

/// The lexical threshold of a kind.
pub fn threshold(kind: MemoryKind) -> f64 {
    if kind == MemoryKind::ProfileFact {
        PROFILE_FACT_THRESHOLD
    } else {
        DEFAULT_THRESHOLD
    }
}

/// The resolver's view of one active memory.
#[derive(Debug, Clone)]
pub struct MemoryView {
    /// Memory id.
    pub id: Uuid,
    /// Memory kind.
    pub kind: MemoryKind,
    /// Memory text (only used for token sets; never copied into decisions).
    pub content: String,
    /// Row validity start.
    pub valid_from: Option<DateTime<Utc>>,
    /// Row validity end (exclusive).
    pub valid_to: Option<DateTime<Utc>>,
    /// Stable order among memories: (time anchor, tiebreak string), e.g. (episode time, "<episode id>:<index>"). Never the insert time,
    /// so that compiling the same episodes in any batch split yields the same decisions.
    pub order: (DateTime<Utc>, String),
    /// Parsed claim, if the memory carries one.
    pub claim: Option<Claim>,
    /// Normalised value of an accumulating claim (same bucket) that this memory replaces:
    /// "switched from Vim to Helix" retires `tools.used = vim` without touching other tools.
    pub replaces: Option<String>,
    /// Made from evidence (`metadata.voice`): it never supersedes a memory that is not.
    pub evidence: bool,
}

/// Which rule produced a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Same single-valued bucket, different value, overlapping windows.
    ClaimContradiction,
    /// Same bucket, same value, overlapping windows.
    ClaimDuplicate,
    /// Token-set similarity at or above the kind's threshold.
    Lexical,
    /// A lexical match skipped because the newer text says strictly less.
    WideningSkipped,
    /// A later user statement about the same thing with another value ([`crate::compile::topic`]).
    TopicChange,
    /// A later user statement that ends the value with none after it ([`crate::compile::topic`]).
    Retraction,
    /// The user asked to forget the value (`services::forget`).
    Forgotten,
}

impl Rule {
    /// The stable wire name of the rule.
    pub fn as_str(&self) -> &'static str {
        match self {
            Rule::ClaimContradiction => "claim_contradiction",
            Rule::ClaimDuplicate => "claim_duplicate",
            Rule::Lexical => "lexical",
            Rule::WideningSkipped => "widening_skipped",
            Rule::TopicChange => "topic_change",
            Rule::Retraction => "retraction",
            Rule::Forgotten => "forgotten",
        }
    }
}

/// One supersession (or recorded skip) between two memories.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The older memory that loses (or would have lost, for `WideningSkipped`).
    pub superseded: Uuid,
    /// The newer memory that wins.
    pub superseding: Uuid,
    /// The rule that decided.
    pub rule: Rule,
    /// Canonical claim key for claim rules.
    pub claim_key: Option<String>,
    /// Jaccard score (4 decimals) for lexical rules.
    pub score: Option<f64>,
    /// Threshold applied for lexical rules.
    pub threshold: Option<f64>,
    /// New valid_to for the loser (None for WideningSkipped, which supersedes nothing).
    pub new_valid_to: Option<DateTime<Utc>>,
    /// Non-textual details (sizes only; never memory text or claim values).
    pub details: serde_json::Value,
}

/// One end of a validity window; None is unbounded.
pub(super) type Bound = Option<DateTime<Utc>>;

/// Half-open [from, to) with None meaning unbounded; empty windows overlap nothing.
pub(super) fn overlaps(a: (Bound, Bound), b: (Bound, Bound)) -> bool {
    let starts_before_end = |from: Bound, to: Bound| match (from, to) {
        (Some(f), Some(t)) => f < t,
        _ => true,
    };
    starts_before_end(a.0, a.1)
        && starts_before_end(b.0, b.1)
        && starts_before_end(a.0, b.1)
        && starts_before_end(b.0, a.1)
}

/// A claim's validity window, the row's where the claim has none.
pub(super) fn window(m: &MemoryView, c: &Claim) -> (Bound, Bound) {
    (c.valid_from.or(m.valid_from), c.valid_to.or(m.valid_to))
}

/// Latest known start of the loser, so its new valid_to never precedes it.
pub(super) fn clamp_to_start(t: DateTime<Utc>, loser: &MemoryView) -> DateTime<Utc> {
    let claim_from = loser.claim.as_ref().and_then(|c| c.valid_from);
    [Some(t), loser.valid_from, claim_from].into_iter().flatten().max().unwrap_or(t)
}

/// Order among memories: (time anchor, tiebreak), then id.
pub(super) fn order_cmp(a: &MemoryView, b: &MemoryView) -> Ordering {
    a.order.cmp(&b.order).then(a.id.cmp(&b.id))
}

/// The memory's claim when it is single-valued.
pub(super) fn single_claim(m: &MemoryView) -> Option<&Claim> {
    m.claim.as_ref().filter(|c| c.cardinality == Cardinality::Single)
}

/// A decision with its two rows, before `resolve` orders and filters them.
pub(super) struct Pending<'a> {
    pub(super) pass: u8,
    pub(super) loser: &'a MemoryView,
    pub(super) winner: &'a MemoryView,
    pub(super) decision: Decision,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_names() {
        assert_eq!(Rule::ClaimContradiction.as_str(), "claim_contradiction");
        assert_eq!(Rule::ClaimDuplicate.as_str(), "claim_duplicate");
        assert_eq!(Rule::Lexical.as_str(), "lexical");
        assert_eq!(Rule::WideningSkipped.as_str(), "widening_skipped");
        assert_eq!(Rule::TopicChange.as_str(), "topic_change");
        assert_eq!(Rule::Retraction.as_str(), "retraction");
        assert_eq!(Rule::Forgotten.as_str(), "forgotten");
    }
}
