//! Small subjects' rows kept between context calls, each under the fingerprint of the state it
//! is a copy of (`db::context_small`).
//!
//! A call sends the fingerprint of the copy it holds; the statement returns the subject's rows
//! only when the subject's fingerprint is another one. Fingerprints change with every committed
//! change of the rows, so a copy is used only while it equals the subject's
//! rows as the call's own statement sees them, through whichever process or replica the change
//! came. The copy holds memory content and episode payloads: it lives in this process only and
//! is never logged.

use std::collections::HashSet;
use std::sync::Arc;

use quick_cache::sync::Cache;
use quick_cache::Weighter;
use serde_json::Value;

use super::lexical::LexicalCache;
use crate::db::context::SubjectRows;
use crate::receipts::certificate::subject_digest;

/// A subject's rows and the fingerprint of their state.
#[derive(Debug)]
pub struct Kept {
    pub fingerprint: String,
    pub rows: SubjectRows,
    /// The highest row version among the memories (what a call sends with the fingerprint).
    pub highest_version: i64,
}

/// A (tenant, subject) key borrowed: hashes as the owned pair does, so a lookup allocates nothing.
#[derive(Hash)]
pub(super) struct KeyRef<'a>(pub(super) &'a str, pub(super) &'a str);

impl quick_cache::Equivalent<(String, String)> for KeyRef<'_> {
    fn equivalent(&self, key: &(String, String)) -> bool {
        self.0 == key.0 && self.1 == key.1
    }
}

/// Kept subjects by (tenant, subject), bounded by an estimate of their size in bytes and
/// evicting the least useful (S3-FIFO), so a burst of one-off subjects does not flush the hot
/// ones; with the indexes of large subjects' lexemes ([`LexicalCache`]).
pub struct SubjectCache {
    small: Option<Cache<(String, String), Arc<Kept>, Bytes>>,
    pub lexical: Arc<LexicalCache>,
}

/// Weight of a kept subject: an estimate of its bytes.
#[derive(Clone)]
pub struct Bytes;

impl Weighter<(String, String), Arc<Kept>> for Bytes {
    fn weight(&self, key: &(String, String), val: &Arc<Kept>) -> u64 {
        (key.0.len() + key.1.len() + size_of(&val.rows)) as u64
    }
}

/// Bytes the kept subjects may take, in all (an estimate; 0 keeps none).
pub const DEFAULT_BYTES: u64 = 64 << 20;
/// About how many bytes a kept small subject takes (for the cache's sizing).
const TYPICAL_SUBJECT_BYTES: u64 = 64 << 10;

impl Default for SubjectCache {
    fn default() -> Self {
        SubjectCache::with_capacities(DEFAULT_BYTES, super::lexical::DEFAULT_BYTES)
    }
}

impl SubjectCache {
    /// A cache of about `bytes` bytes of small subjects' rows and `index_bytes` of large
    /// subjects' lexical indexes (0: none are kept).
    pub fn with_capacities(bytes: u64, index_bytes: u64) -> Self {
        let small = (bytes > 0).then(|| {
            let items = usize::try_from((bytes / TYPICAL_SUBJECT_BYTES).max(1)).unwrap_or(usize::MAX);
            Cache::with_weighter(items, bytes, Bytes)
        });
        SubjectCache { small, lexical: Arc::new(LexicalCache::with_capacity(index_bytes)) }
    }

    /// The copy kept of the subject, if any.
    pub fn get(&self, tenant: &str, subject: &str) -> Option<Arc<Kept>> {
        self.small.as_ref()?.get(&KeyRef(tenant, subject))
    }

    /// Drops what is kept of the subject (its rows and its lexical index), as after an erasure,
    /// and every text's excerpt analysis (kept by text, not by subject).
    pub fn forget(&self, tenant: &str, subject: &str) {
        crate::bundle::excerpt::forget_texts();
        if let Some(cache) = &self.small {
            cache.remove(&KeyRef(tenant, subject));
        }
        self.lexical.forget(tenant, subject);
    }

    /// Whether nothing is kept: no small subject's rows, no index and no text's excerpt analysis.
    pub fn is_empty(&self) -> bool {
        self.small.as_ref().is_none_or(|c| c.is_empty())
            && self.lexical.is_empty()
            && crate::bundle::excerpt::no_texts_kept()
    }

    /// Drops what is kept of every subject whose (tenant, subject digest) is in `erased` (as
    /// [`crate::receipts::certificate::subject_digest`] makes it: what erasure certificates name);
    /// returns how many copies and indexes went.
    pub fn forget_erased(&self, erased: &HashSet<(String, String)>) -> usize {
        let tenants: HashSet<&str> = erased.iter().map(|(t, _)| t.as_str()).collect();
        let gone = |(tenant, subject): &(String, String)| {
            tenants.contains(tenant.as_str()) && erased.contains(&(tenant.clone(), subject_digest(tenant, subject)))
        };
        if !erased.is_empty() {
            crate::bundle::excerpt::forget_texts();
        }
        let mut dropped = 0;
        if let Some(cache) = &self.small {
            let before = cache.len();
            cache.retain(|key, _| !gone(key));
            dropped += before.saturating_sub(cache.len());
        }
        dropped + self.lexical.forget_where(gone)
    }

    /// Keeps `rows` as the subject's copy in the state `fingerprint` names; returns it.
    pub fn keep(&self, tenant: &str, subject: &str, fingerprint: String, rows: SubjectRows) -> Arc<Kept> {
        let highest_version = rows.memories.iter().map(|m| m.xmin).max().unwrap_or(0);
        let kept = Arc::new(Kept { fingerprint, rows, highest_version });
        if let Some(cache) = &self.small {
            cache.insert((tenant.to_string(), subject.to_string()), Arc::clone(&kept));
        }
        kept
    }
}

/// An estimate of the bytes `rows` take: their text, JSON and lexemes plus a fixed cost a row.
fn size_of(rows: &SubjectRows) -> usize {
    const ROW: usize = 512;
    let strings = |v: &[String]| v.iter().map(|s| s.len() + 24).sum::<usize>();
    let memories: usize = rows
        .memories
        .iter()
        .map(|m| {
            let c = &m.candidate.memory;
            ROW + c.content.len()
                + c.summary.len()
                + json_size(&c.metadata)
                + strings(m.lexemes.as_slice())
                + m.lexemes.signature_bytes()
                + strings(&c.sensitivity_labels)
                + strings(&c.suggested_labels)
                + 16 * c.source_episode_ids.len()
        })
        .sum();
    let episodes: usize = rows
        .episodes
        .iter()
        .map(|e| {
            let c = &e.candidate.episode;
            ROW + json_size(&c.payload)
                + json_size(&c.metadata)
                + json_size(&c.provenance)
                + strings(e.lexemes.as_slice())
                + e.lexemes.signature_bytes()
        })
        .sum();
    memories + episodes
}

/// About the bytes a JSON value takes in memory.
fn json_size(v: &Value) -> usize {
    match v {
        Value::String(s) => 32 + s.len(),
        Value::Array(a) => 32 + a.iter().map(json_size).sum::<usize>(),
        Value::Object(o) => 32 + o.iter().map(|(k, v)| 32 + k.len() + json_size(v)).sum::<usize>(),
        _ => 32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_of_no_bytes_keeps_nothing_and_a_kept_copy_comes_back_under_its_key() {
        let none = SubjectCache::with_capacities(0, 0);
        let kept = none.keep("t", "s", "1/0/-".into(), SubjectRows::default());
        assert_eq!(kept.fingerprint, "1/0/-");
        assert!(none.get("t", "s").is_none());

        let cache = SubjectCache::with_capacities(1 << 20, 0);
        cache.keep("t", "s", "1/0/-".into(), SubjectRows::default());
        assert_eq!(cache.get("t", "s").map(|k| k.fingerprint.clone()).as_deref(), Some("1/0/-"));
        assert!(cache.get("t", "other").is_none());
        assert!(cache.get("other", "s").is_none(), "tenants are kept apart");
        cache.keep("t", "s", "2/0/-".into(), SubjectRows::default());
        assert_eq!(cache.get("t", "s").map(|k| k.fingerprint.clone()).as_deref(), Some("2/0/-"), "replaced");
    }

    #[test]
    fn json_sizes_grow_with_their_text() {
        let small = serde_json::json!({"messages": [{"role": "user", "content": "hi"}]});
        let large = serde_json::json!({"messages": [{"role": "user", "content": "hi ".repeat(100)}]});
        assert!(json_size(&large) >= json_size(&small) + 298);
    }
}
