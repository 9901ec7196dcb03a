//! The lexical pass: within a kind, an older row whose token set is close enough to a newer
//! row's is superseded, unless the newer text says strictly less (the widening guard).

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};

use serde_json::json;
use uuid::Uuid;

use super::decision::{clamp_to_start, single_claim, threshold, Decision, MemoryView, Pending, Rule};
use crate::compile::stop_words::is_stop_word;
use crate::model::memory::MemoryKind;

/// Lexical decisions among `rows`, skipping the rows the claim passes already retired.
pub(super) fn lexical_pass<'a>(rows: &[&'a MemoryView], claim_losers: &BTreeSet<Uuid>) -> Vec<Pending<'a>> {
    // Group order does not matter: `resolve` sorts the decisions.
    let mut by_kind: HashMap<MemoryKind, Vec<&'a MemoryView>> = HashMap::new();
    for &m in rows {
        by_kind.entry(m.kind).or_default().push(m);
    }
    let mut out = Vec::new();
    for (kind, group) in by_kind {
        let threshold = threshold(kind);
        let tokens: Vec<BTreeSet<String>> = group.iter().map(|m| lexical_tokens(&m.content)).collect();
        let ids = interned(&tokens);
        for (i, &older) in group.iter().enumerate() {
            if claim_losers.contains(&older.id) {
                continue;
            }
            for (j, &newer) in group.iter().enumerate().skip(i + 1) {
                if single_claim(older).is_some() && single_claim(newer).is_some() {
                    continue;
                }
                // A document's words never retire what the user or the agent said.
                if newer.evidence && !older.evidence {
                    continue;
                }
                let score = jaccard_ids(&ids[i], &ids[j]);
                if score < threshold {
                    continue;
                }
                let base = Decision {
                    superseded: older.id,
                    superseding: newer.id,
                    rule: Rule::Lexical,
                    claim_key: None,
                    score: Some(round4(score)),
                    threshold: Some(threshold),
                    new_valid_to: None,
                    details: json!({}),
                };
                let (older_view, newer_view) = (GuardView::new(&tokens[i]), GuardView::new(&tokens[j]));
                if newer_view.narrows(&older_view) {
                    let details = json!({
                        "older_sizes": [older_view.words.len(), older_view.numbers.len()],
                        "newer_sizes": [newer_view.words.len(), newer_view.numbers.len()],
                    });
                    let decision = Decision { rule: Rule::WideningSkipped, details, ..base };
                    out.push(Pending { pass: 1, loser: older, winner: newer, decision });
                    continue;
                }
                let end = newer.valid_from.unwrap_or(newer.order.0);
                let decision = Decision { new_valid_to: Some(clamp_to_start(end, older)), ..base };
                out.push(Pending { pass: 1, loser: older, winner: newer, decision });
                break;
            }
        }
    }
    out
}

/// The token sets as sorted ids (ids follow the tokens' order), so that comparing every pair
/// of a group compares integers rather than strings.
fn interned(tokens: &[BTreeSet<String>]) -> Vec<Vec<u32>> {
    let all: BTreeSet<&str> = tokens.iter().flatten().map(String::as_str).collect();
    let id: HashMap<&str, u32> = all.into_iter().zip(0u32..).collect();
    tokens.iter().map(|t| t.iter().map(|tok| id[tok.as_str()]).collect()).collect()
}

/// [`jaccard`] of two sets given as sorted, distinct ids: the same counts, so the same value.
fn jaccard_ids(a: &[u32], b: &[u32]) -> f64 {
    let (mut i, mut j, mut inter) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        let order = a[i].cmp(&b[j]);
        inter += usize::from(order == Ordering::Equal);
        i += usize::from(order != Ordering::Greater);
        j += usize::from(order != Ordering::Less);
    }
    ratio(inter, a.len() + b.len() - inter)
}

/// `inter / union`, 0 for two empty sets.
fn ratio(inter: usize, union: usize) -> f64 {
    if union == 0 {
        return 0.0;
    }
    inter as f64 / union as f64
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

const EDGE_PUNCTUATION: &[char] = &['?', '.', ',', ':', ';', '(', ')', '[', ']', '{', '}', '\'', '"', '!'];

/// Token set used by the lexical rule (lower-case, whitespace split, edge punctuation ?.,:;()[]{}'"! stripped, empties dropped).
pub fn lexical_tokens(s: &str) -> BTreeSet<String> {
    s.to_lowercase()
        .split_whitespace()
        .map(|t| t.trim_matches(EDGE_PUNCTUATION))
        .filter(|t| !t.is_empty())
        .map(String::from)
        .collect()
}

/// Jaccard similarity |a ∩ b| / |a ∪ b|; 0 when both sets are empty.
pub fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let inter = a.intersection(b).count();
    ratio(inter, a.len() + b.len() - inter)
}

// Month names count as date detail, like numbers, for the widening guard.
#[rustfmt::skip]
const MONTHS: &[&str] = &[
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec",
];

/// The two token views used by the widening guard.
struct GuardView<'a> {
    words: BTreeSet<&'a str>,
    numbers: BTreeSet<&'a str>,
}

impl<'a> GuardView<'a> {
    fn new(tokens: &'a BTreeSet<String>) -> Self {
        let words = tokens.iter().map(String::as_str).filter(|t| t.chars().count() >= 3 && !is_stop_word(t)).collect();
        let numbers = tokens
            .iter()
            .map(String::as_str)
            .filter(|t| t.bytes().any(|b| b.is_ascii_digit()) || MONTHS.contains(t))
            .collect();
        GuardView { words, numbers }
    }

    /// True when self (the newer side) is contained in `older` on both views and strictly on one.
    fn narrows(&self, older: &GuardView<'_>) -> bool {
        self.words.is_subset(&older.words)
            && self.numbers.is_subset(&older.numbers)
            && (self.words.len() < older.words.len() || self.numbers.len() < older.numbers.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interned_jaccard_is_jaccard() {
        let sets: Vec<BTreeSet<String>> =
            ["I use Vim daily", "i use vim", "", "completely unrelated words", "vim, Vim! daily? use I"]
                .iter()
                .map(|s| lexical_tokens(s))
                .collect();
        let ids = interned(&sets);
        for i in 0..sets.len() {
            for j in 0..sets.len() {
                assert_eq!(jaccard_ids(&ids[i], &ids[j]).to_bits(), jaccard(&sets[i], &sets[j]).to_bits());
            }
        }
    }

    #[test]
    fn tokens_and_jaccard() {
        let t = lexical_tokens("  Hello, WORLD! (it's) \"quoted\" -- [x] ... ");
        let expected: BTreeSet<String> =
            ["hello", "world", "it's", "quoted", "--", "x"].iter().map(|s| s.to_string()).collect();
        assert_eq!(t, expected);
        let a = lexical_tokens("a b c d");
        let b = lexical_tokens("c d e");
        assert!((jaccard(&a, &b) - 0.4).abs() < 1e-12);
        assert_eq!(jaccard(&a, &a), 1.0);
        assert_eq!(jaccard(&BTreeSet::new(), &BTreeSet::new()), 0.0);
        assert_eq!(jaccard(&a, &BTreeSet::new()), 0.0);
    }
}
