//! The indexes a server keeps, and when they are brought up to date.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use quick_cache::sync::Cache;
use quick_cache::Weighter;
use sqlx::PgPool;

use super::index::{Builder, Index};
use crate::db::lexical;
use crate::services::context::subjects::KeyRef;

/// Subjects whose latest episode has a seq below this are not indexed: `mnemo_context` ranks
/// their lanes quickly enough, and indexing every mid-sized subject a tenant touches once would
/// cost more than it saves.
pub const INDEX_FROM_SEQ: i64 = 2000;

/// The least time between the starts of two refreshes of one subject's index.
const REFRESH_INTERVAL: std::time::Duration = std::time::Duration::from_millis(250);

/// Bytes the indexes may take, in all, by default (an estimate; 0 keeps none).
pub const DEFAULT_BYTES: u64 = 256 << 20;

/// Weight of an index: an estimate of its bytes.
#[derive(Clone)]
struct Bytes;

impl Weighter<(String, String), Arc<Index>> for Bytes {
    fn weight(&self, key: &(String, String), val: &Arc<Index>) -> u64 {
        (key.0.len() + key.1.len() + val.bytes()) as u64
    }
}

/// How often calls used the server's lanes, and how often Postgres ranked them.
#[derive(Debug, Default)]
pub struct Counts {
    pub server: std::sync::atomic::AtomicU64,
    pub database: std::sync::atomic::AtomicU64,
}

/// The indexes of large subjects by (tenant, subject), bounded by an estimate of their bytes.
pub struct LexicalCache {
    cache: Option<Cache<(String, String), Arc<Index>, Bytes>>,
    /// Subjects being refreshed, each with whether to refresh once more after.
    refreshing: Mutex<HashMap<(String, String), bool>>,
    /// Writes of turns this server made, by indexed subject.
    writes: Mutex<HashMap<(String, String), u64>>,
    pub counts: Counts,
}

impl LexicalCache {
    /// A cache of about `bytes` bytes of indexes (0: none are kept, every lane is ranked by Postgres).
    pub fn with_capacity(bytes: u64) -> Self {
        const TYPICAL_INDEX_BYTES: u64 = 4 << 20;
        let cache = (bytes > 0).then(|| {
            let items = usize::try_from((bytes / TYPICAL_INDEX_BYTES).max(1)).unwrap_or(usize::MAX);
            Cache::with_weighter(items, bytes, Bytes)
        });
        LexicalCache {
            cache,
            refreshing: Mutex::new(HashMap::new()),
            writes: Mutex::new(HashMap::new()),
            counts: Counts::default(),
        }
    }

    /// The index kept of the subject, if any.
    pub fn get(&self, tenant: &str, subject: &str) -> Option<Arc<Index>> {
        self.cache.as_ref()?.get(&KeyRef(tenant, subject))
    }

    /// Drops the subject's index (erased, or small again).
    pub fn forget(&self, tenant: &str, subject: &str) {
        if let Some(cache) = &self.cache {
            cache.remove(&KeyRef(tenant, subject));
        }
        if let Ok(mut writes) = self.writes.lock() {
            writes.remove(&(tenant.to_string(), subject.to_string()));
        }
    }

    /// The subject's index for a context call. When this server wrote turns of the subject after
    /// the kept index's rows were read (an agent's loop: its turn, then its call), and the
    /// subject's memories are still the index's, the index is first brought up to date with the
    /// new turns: one read of the subject's state and one of the turns after the index's latest,
    /// and a copy of the index's recent turns only. The call is then ranked on the index instead
    /// of by Postgres. Any other staleness is left to the statement's check (Postgres ranks,
    /// and the index is refreshed in the background).
    pub async fn for_call(&self, pool: &PgPool, tenant: &str, subject: &str) -> Option<Arc<Index>> {
        let index = self.get(tenant, subject)?;
        if index.writes >= self.writes_of(tenant, subject) {
            return Some(index);
        }
        match self.catch_up(pool, tenant, subject, &index).await {
            Ok(Some(newer)) => Some(newer),
            Ok(None) => Some(index),
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "lexical index catch-up failed");
                Some(index)
            }
        }
    }

    async fn catch_up(
        &self,
        pool: &PgPool,
        tenant: &str,
        subject: &str,
        index: &Index,
    ) -> anyhow::Result<Option<Arc<Index>>> {
        let now = lexical::state(pool, tenant, subject).await?;
        if memory_version(&now) != memory_version(&index.state) {
            return Ok(None);
        }
        self.refresh(pool, tenant, subject).await
    }

    fn writes_of(&self, tenant: &str, subject: &str) -> u64 {
        let Ok(writes) = self.writes.lock() else { return 0 };
        writes.get(&(tenant.to_string(), subject.to_string())).copied().unwrap_or(0)
    }

    /// Whether no index is kept.
    pub fn is_empty(&self) -> bool {
        self.cache.as_ref().is_none_or(|c| c.is_empty())
    }

    /// Drops the index of every subject `gone` names (by its (tenant, subject) key); returns how
    /// many went.
    pub fn forget_where(&self, gone: impl Fn(&(String, String)) -> bool) -> usize {
        let Some(cache) = &self.cache else { return 0 };
        let before = cache.len();
        cache.retain(|key, _| !gone(key));
        if let Ok(mut writes) = self.writes.lock() {
            writes.retain(|key, _| !gone(key));
        }
        before.saturating_sub(cache.len())
    }

    /// Counts how a call's lanes were ranked (when it had any: `ranks`), and brings the
    /// subject's index up to date in the background when the call found it missing or of
    /// another state than `state` (the subject's as the call saw it), for a subject large enough
    /// to index.
    pub fn after_call(
        self: &Arc<Self>,
        pool: &PgPool,
        (tenant, subject): (&str, &str),
        state: &str,
        ranks: bool,
        used: bool,
    ) {
        use std::sync::atomic::Ordering::Relaxed;
        if ranks {
            if used { &self.counts.server } else { &self.counts.database }.fetch_add(1, Relaxed);
            crate::metrics::record_context_lexical(if used { "server" } else { "database" });
        }
        if used || self.cache.is_none() || latest_seq(state) < INDEX_FROM_SEQ {
            return;
        }
        if self.get(tenant, subject).is_some_and(|i| i.state == state) {
            return;
        }
        self.refresh_later(pool, tenant, subject);
    }

    /// After this server wrote episodes of a subject it keeps an index of: brings the index up
    /// to date in the background (only the new turns come), so the subject's next context call
    /// finds it current. A subject that keeps changing between calls otherwise always would
    /// find it stale.
    pub fn episodes_written(self: &Arc<Self>, pool: &PgPool, tenant: &str, subject: &str) {
        let Some(cache) = &self.cache else { return };
        if cache.get(&KeyRef(tenant, subject)).is_some() {
            if let Ok(mut writes) = self.writes.lock() {
                *writes.entry((tenant.to_string(), subject.to_string())).or_insert(0) += 1;
            }
            self.refresh_later(pool, tenant, subject);
        }
    }

    /// Refreshes the subject's index in the background, one refresh per subject at a time; asked
    /// while one runs, it runs once more after it (the rows it read may already be old), at least
    /// [`REFRESH_INTERVAL`] after the last one began: a subject written to without pause costs a
    /// few refreshes a second, each copying its turns' postings, not one after the other.
    fn refresh_later(self: &Arc<Self>, pool: &PgPool, tenant: &str, subject: &str) {
        let key = (tenant.to_string(), subject.to_string());
        {
            let Ok(mut refreshing) = self.refreshing.lock() else { return };
            if let Some(again) = refreshing.get_mut(&key) {
                *again = true;
                return;
            }
            refreshing.insert(key.clone(), false);
        }
        let (cache, pool) = (Arc::clone(self), pool.clone());
        tokio::spawn(async move {
            loop {
                let began = tokio::time::Instant::now();
                if let Err(e) = cache.refresh(&pool, &key.0, &key.1).await {
                    tracing::warn!(error = %format!("{e:#}"), "lexical index refresh failed");
                }
                tokio::time::sleep_until(began + REFRESH_INTERVAL).await;
                let Ok(mut refreshing) = cache.refreshing.lock() else { return };
                if refreshing.get(&key) == Some(&true) {
                    refreshing.insert(key.clone(), false);
                } else {
                    refreshing.remove(&key);
                    return;
                }
            }
        });
    }

    /// Reads what changed since the kept index (all of it without one), keeps the new index and
    /// returns it.
    pub async fn refresh(&self, pool: &PgPool, tenant: &str, subject: &str) -> anyhow::Result<Option<Arc<Index>>> {
        let Some(cache) = &self.cache else { return Ok(None) };
        let started = std::time::Instant::now();
        // Counted before the rows are read: a write made meanwhile may be in them or not.
        let writes = self.writes_of(tenant, subject);
        let known = self.get(tenant, subject);
        let mut builder = Builder::new(known.as_deref());
        lexical::rows(pool, tenant, subject, known.as_ref().map(|k| k.state.as_str()), |row| builder.add(row)).await?;
        let mut index = builder.finish().map_err(|why| anyhow::anyhow!("the lexical rows make no index: {why}"))?;
        index.writes = writes;
        tracing::debug!(
            memories = index.rows().0,
            episodes = index.rows().1,
            bytes = index.bytes(),
            build_ms = started.elapsed().as_millis() as u64,
            "lexical index refreshed"
        );
        let index = Arc::new(index);
        cache.insert((tenant.to_string(), subject.to_string()), Arc::clone(&index));
        Ok(Some(index))
    }
}

/// The memory version a state names (`version/seq/id`).
fn memory_version(state: &str) -> &str {
    state.split('/').next().unwrap_or_default()
}

/// The latest seq a state names (`version/seq/id`), 0 when it names none.
fn latest_seq(state: &str) -> i64 {
    state.split('/').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_names_its_latest_seq() {
        assert_eq!(latest_seq("7/2500/x"), 2500);
        assert_eq!(latest_seq("7/0/-"), 0);
        assert_eq!(latest_seq("garbled"), 0);
    }
}
