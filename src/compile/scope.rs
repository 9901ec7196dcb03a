//! Which already-active memories a compile batch must be compared with.
//!
//! Decisions between two old memories were taken by earlier compiles, so only pairs that
//! involve a new memory matter: old rows in a claim bucket that a new memory touches, and old
//! rows of the same kind that could reach the lexical threshold with a new one. The latter uses
//! the prefix filter of set-similarity joins: order tokens by rarity; two sets with Jaccard >= t
//! must share a token among the first `len - ceil(t * len) + 1` rarest of each. Common words
//! (which every summary shares) therefore never make pairs, and supersession cost follows the
//! batch instead of growing with the square of the subject.

use std::collections::{BTreeSet, HashMap, HashSet};

use uuid::Uuid;

use super::supersede::{lexical_tokens, threshold, MemoryView};
use crate::model::memory::MemoryKind;

/// How many of a set's rarest tokens must be checked; one extra for floating-point safety.
fn prefix_len(len: usize, t: f64) -> usize {
    let must_share = (t * len as f64 - 1e-9).ceil().max(0.0) as usize;
    (len + 2).saturating_sub(must_share).min(len)
}

/// Keeps the new views and the old views that could form a decision with one of them.
pub fn related(views: Vec<MemoryView>, new_ids: &HashSet<Uuid>) -> Vec<MemoryView> {
    let buckets: BTreeSet<String> =
        views.iter().filter(|v| new_ids.contains(&v.id)).filter_map(|v| v.claim.as_ref().map(|c| c.bucket())).collect();
    let tokens: Vec<BTreeSet<String>> = views.iter().map(|v| lexical_tokens(&v.content)).collect();
    let mut keep: Vec<bool> = views
        .iter()
        .map(|v| new_ids.contains(&v.id) || v.claim.as_ref().is_some_and(|c| buckets.contains(&c.bucket())))
        .collect();
    let new_kinds: HashSet<MemoryKind> = views.iter().filter(|v| new_ids.contains(&v.id)).map(|v| v.kind).collect();
    for kind in new_kinds {
        let rows: Vec<usize> = (0..views.len()).filter(|&i| views[i].kind == kind).collect();
        let mut df: HashMap<&str, usize> = HashMap::new();
        for &i in &rows {
            for t in &tokens[i] {
                *df.entry(t.as_str()).or_default() += 1;
            }
        }
        let t = threshold(kind);
        let prefix = |i: usize| -> Vec<&str> {
            let mut toks: Vec<&str> = tokens[i].iter().map(String::as_str).collect();
            toks.sort_by_key(|tok| (df.get(tok).copied().unwrap_or(0), *tok));
            toks.truncate(prefix_len(toks.len(), t));
            toks
        };
        let new_prefix_tokens: HashSet<&str> =
            rows.iter().filter(|&&i| new_ids.contains(&views[i].id)).flat_map(|&i| prefix(i)).collect();
        for &i in &rows {
            if !keep[i] && prefix(i).iter().any(|tok| new_prefix_tokens.contains(tok)) {
                keep[i] = true;
            }
        }
    }
    views.into_iter().zip(keep).filter(|(_, k)| *k).map(|(v, _)| v).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::supersede::jaccard;
    use chrono::{DateTime, Utc};
    use proptest::prelude::*;

    fn view(id: u128, kind: MemoryKind, content: &str) -> MemoryView {
        let t: DateTime<Utc> = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        MemoryView {
            id: Uuid::from_u128(id),
            kind,
            content: content.into(),
            valid_from: Some(t),
            valid_to: None,
            order: (t, format!("{id:04}")),
            claim: None,
            replaces: None,
            evidence: false,
        }
    }

    #[test]
    fn keeps_only_old_rows_that_can_pair_with_a_new_one() {
        let views = vec![
            view(1, MemoryKind::ProfileFact, "I use Vim daily"),
            view(2, MemoryKind::ProfileFact, "completely unrelated words"),
            view(3, MemoryKind::EpisodeSummary, "I use Vim daily"),
            view(4, MemoryKind::ProfileFact, "I use Vim"),
        ];
        let new: HashSet<Uuid> = [Uuid::from_u128(4)].into();
        let kept: Vec<u128> = related(views, &new).iter().map(|v| v.id.as_u128()).collect();
        assert_eq!(kept, vec![1, 4]);
    }

    #[test]
    fn shared_common_words_alone_do_not_pair_summaries() {
        let mut views: Vec<MemoryView> = (0..200)
            .map(|i| {
                view(
                    i,
                    MemoryKind::EpisodeSummary,
                    &format!("user: thanks the answer was good topic{i} detail{i} extra{i}"),
                )
            })
            .collect();
        views.push(view(
            1000,
            MemoryKind::EpisodeSummary,
            "user: thanks the answer was good topic1000 detail1000 extra1000",
        ));
        let new: HashSet<Uuid> = [Uuid::from_u128(1000)].into();
        assert_eq!(related(views, &new).len(), 1);
    }

    proptest! {
        // The filter never drops a pair that reaches the threshold.
        #[test]
        fn never_misses_a_pair_over_the_threshold(
            docs in proptest::collection::vec(proptest::collection::vec(0u8..12, 1..9), 2..30),
            kind_fact in any::<bool>(),
        ) {
            let kind = if kind_fact { MemoryKind::ProfileFact } else { MemoryKind::EpisodeSummary };
            let views: Vec<MemoryView> = docs
                .iter()
                .enumerate()
                .map(|(i, d)| view(i as u128, kind, &d.iter().map(|w| format!("w{w}")).collect::<Vec<_>>().join(" ")))
                .collect();
            let new: HashSet<Uuid> = [Uuid::from_u128(0)].into();
            let kept: HashSet<Uuid> = related(views.clone(), &new).iter().map(|v| v.id).collect();
            let a = lexical_tokens(&views[0].content);
            for v in &views[1..] {
                if jaccard(&a, &lexical_tokens(&v.content)) >= threshold(kind) {
                    prop_assert!(kept.contains(&v.id), "dropped {:?} vs {:?}", views[0].content, v.content);
                }
            }
        }
    }
}
