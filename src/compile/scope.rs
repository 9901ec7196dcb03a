//! Which already-active memories a compile batch must be compared with.
//!
//! Decisions between two old memories were taken by earlier compiles, so only pairs that
//! involve a new memory matter: old rows in a claim bucket that a new memory touches, and old
//! rows of the same kind that share at least one lexical token with a new memory (Jaccard is 0
//! otherwise). This keeps supersession cost proportional to the batch, not the subject.

use std::collections::{BTreeSet, HashSet};

use uuid::Uuid;

use super::supersede::{lexical_tokens, MemoryView};

/// Keeps the new views and the old views that could form a decision with one of them.
pub fn related(views: Vec<MemoryView>, new_ids: &HashSet<Uuid>) -> Vec<MemoryView> {
    let mut buckets = BTreeSet::new();
    let mut tokens_by_kind: std::collections::HashMap<String, HashSet<String>> = Default::default();
    for v in views.iter().filter(|v| new_ids.contains(&v.id)) {
        if let Some(c) = &v.claim {
            buckets.insert(c.bucket());
        }
        tokens_by_kind.entry(v.kind.clone()).or_default().extend(lexical_tokens(&v.content));
    }
    views
        .into_iter()
        .filter(|v| {
            if new_ids.contains(&v.id) {
                return true;
            }
            if v.claim.as_ref().is_some_and(|c| buckets.contains(&c.bucket())) {
                return true;
            }
            match tokens_by_kind.get(&v.kind) {
                Some(toks) => lexical_tokens(&v.content).iter().any(|t| toks.contains(t)),
                None => false,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};

    fn view(id: u128, kind: &str, content: &str) -> MemoryView {
        let t: DateTime<Utc> = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        MemoryView {
            id: Uuid::from_u128(id),
            kind: kind.into(),
            content: content.into(),
            valid_from: Some(t),
            valid_to: None,
            order: (t, format!("{id:04}")),
            claim: None,
        }
    }

    #[test]
    fn keeps_only_old_rows_that_can_pair_with_a_new_one() {
        let views = vec![
            view(1, "profile_fact", "I use Vim daily"),
            view(2, "profile_fact", "completely unrelated words"),
            view(3, "episode_summary", "I use Vim daily"),
            view(4, "profile_fact", "I use Vim"),
        ];
        let new: HashSet<Uuid> = [Uuid::from_u128(4)].into();
        let kept: Vec<u128> = related(views, &new).iter().map(|v| v.id.as_u128()).collect();
        assert_eq!(kept, vec![1, 4]);
    }
}
