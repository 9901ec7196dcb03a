//! Large subjects' lexemes indexed in process, so a context call's two BM25 lanes are ranked by
//! the server before the call instead of by Postgres in it (migration 0036).
//!
//! On a large subject a task word held by hundreds of turns and memories made Postgres visit each
//! of those rows for its length and rank them all, about 7 ms of a 100k-memory subject's call
//! for one such word. The index holds, per source, each row's length, what its visibility at an
//! instant depends on, and the rows holding each lexeme, so ranking a lane reads only the rows
//! holding a task term. It is kept under the subject's state (`mnemo_lexical_state`: memory
//! version, latest seq, latest episode id). The call sends the lanes with that state and the
//! task's lexemes (`context::english`); `mnemo_context` uses them only when the state is the
//! subject's and the lexemes are its own, and otherwise ranks the lanes itself, so the call's
//! rows never depend on the index. A call that finds the index missing or of another state has
//! it brought up to date in the background (one refresh per subject at a time): only what
//! changed comes when the memories are unchanged or only episodes were added.
//!
//! The index holds lexemes and ids, no content; it lives in this process only and is never
//! logged.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use quick_cache::sync::Cache;
use quick_cache::Weighter;
use sqlx::PgPool;
use uuid::Uuid;

use super::lanes::ranked;
use crate::context::english;
use crate::db::context::LexicalLanes;
use crate::db::lexical::{self, LexicalRows};

/// Subjects whose latest episode has a seq below this are not indexed: `mnemo_context` ranks
/// their lanes quickly enough, and indexing every mid-sized subject a tenant touches once would
/// cost more than it saves.
pub const INDEX_FROM_SEQ: i64 = 2000;

/// Bytes the indexes may take, in all, by default (an estimate; 0 keeps none).
pub const DEFAULT_BYTES: u64 = 256 << 20;

#[derive(Debug)]
struct MemoryEntry {
    id: Uuid,
    dl: u32,
    recorded_at: DateTime<Utc>,
    superseded_at: Option<DateTime<Utc>>,
    asserted_valid_to: Option<DateTime<Utc>>,
    tombstoned: bool,
}

impl MemoryEntry {
    /// Its lane's filter (`mnemo_memory_bm25`): recorded, not superseded, not tombstoned, its
    /// asserted validity not ended, all as of `as_of`.
    fn visible(&self, as_of: DateTime<Utc>) -> bool {
        self.recorded_at <= as_of
            && self.superseded_at.is_none_or(|t| t > as_of)
            && !self.tombstoned
            && self.asserted_valid_to.is_none_or(|t| t > as_of)
    }
}

#[derive(Debug, Clone)]
struct EpisodeEntry {
    id: Uuid,
    seq: i64,
    created_at: DateTime<Utc>,
    dl: u32,
}

/// One source's rows and, per lexeme, the indexes of the rows holding it (ascending).
#[derive(Debug, Clone)]
struct Postings<T> {
    rows: Vec<T>,
    holding: HashMap<Box<str>, Vec<u32>>,
}

impl<T> Default for Postings<T> {
    fn default() -> Self {
        Postings { rows: Vec::new(), holding: HashMap::new() }
    }
}

impl<T> Postings<T> {
    fn add(&mut self, row: T, lexemes: Vec<String>) {
        let at = u32::try_from(self.rows.len()).unwrap_or(u32::MAX);
        self.rows.push(row);
        for l in lexemes {
            self.holding.entry(l.into_boxed_str()).or_default().push(at);
        }
    }

    fn bytes(&self) -> usize {
        let postings: usize = self.holding.iter().map(|(l, v)| 48 + l.len() + 4 * v.len()).sum();
        self.rows.len() * std::mem::size_of::<T>() + postings
    }

    /// The BM25 hits of `terms` among the rows `visible` admits: (id, length, terms held).
    fn hits(
        &self,
        terms: &[String],
        visible: impl Fn(&T) -> bool,
        id_len: impl Fn(&T) -> (Uuid, u32),
    ) -> Vec<(Uuid, f64, Vec<usize>)> {
        let mut at: HashMap<u32, usize> = HashMap::new();
        let mut hits: Vec<(Uuid, f64, Vec<usize>)> = Vec::new();
        for (t, term) in terms.iter().enumerate() {
            for &i in self.holding.get(term.as_str()).map(Vec::as_slice).unwrap_or_default() {
                let row = &self.rows[i as usize];
                if !visible(row) {
                    continue;
                }
                let h = *at.entry(i).or_insert_with(|| {
                    let (id, dl) = id_len(row);
                    hits.push((id, f64::from(dl), Vec::new()));
                    hits.len() - 1
                });
                hits[h].2.push(t);
            }
        }
        hits
    }
}

/// A subject's lexemes, of one state of it.
#[derive(Debug)]
pub struct Index {
    /// The state it is of (`mnemo_lexical_state`).
    pub state: String,
    memories: Arc<Postings<MemoryEntry>>,
    /// In seq order.
    episodes: Arc<Postings<EpisodeEntry>>,
    /// Common terms per source, with the instant each became common.
    common_memory: HashMap<String, DateTime<Utc>>,
    common_episode: HashMap<String, DateTime<Utc>>,
}

impl Index {
    /// The index of the state `rows` is of, taking from `known` (the index the rows were asked
    /// against) what they left out.
    pub fn build(rows: LexicalRows, known: Option<&Index>) -> Option<Index> {
        let memories = match rows.memories {
            Some(list) => {
                let mut p = Postings::default();
                for m in list {
                    let entry = MemoryEntry {
                        id: m.id,
                        dl: u32::try_from(m.lexemes.len()).unwrap_or(u32::MAX),
                        recorded_at: m.recorded_at,
                        superseded_at: m.superseded_at,
                        asserted_valid_to: m.asserted_valid_to,
                        tombstoned: m.tombstoned,
                    };
                    p.add(entry, m.lexemes);
                }
                Arc::new(p)
            }
            None => Arc::clone(&known?.memories),
        };
        let mut episodes = if rows.episodes_after { (*known?.episodes).clone() } else { Postings::default() };
        let mut new = rows.episodes;
        new.sort_by_key(|e| e.seq);
        for e in new {
            let dl = u32::try_from(e.lexemes.len()).unwrap_or(u32::MAX);
            episodes.add(EpisodeEntry { id: e.id, seq: e.seq, created_at: e.created_at, dl }, e.lexemes);
        }
        let (mut common_memory, mut common_episode) = (HashMap::new(), HashMap::new());
        for c in rows.common {
            if c.memory { &mut common_memory } else { &mut common_episode }.insert(c.lexeme, c.since);
        }
        Some(Index { state: rows.state, memories, episodes: Arc::new(episodes), common_memory, common_episode })
    }

    /// The lanes `mnemo_context` would rank for a task of content `words` at `as_of`, each of
    /// `limit` items; None when the task's lexemes cannot be told in process.
    pub fn lanes(&self, words: &[String], as_of: DateTime<Utc>, limit: usize) -> Option<LexicalLanes> {
        let lexemes = english::lexemes(words)?;
        let without = |common: &HashMap<String, DateTime<Utc>>| -> Vec<String> {
            lexemes.iter().filter(|l| common.get(l.as_str()).is_none_or(|since| *since > as_of)).cloned().collect()
        };
        let (memory_terms, episode_terms) = (without(&self.common_memory), without(&self.common_episode));
        // The subject's size as BM25 counts it: the seq of its latest episode recorded by then.
        let size = self.episodes.rows.iter().rev().find(|e| e.created_at <= as_of).map_or(0, |e| e.seq) as f64;
        let lane = |hits: Vec<(Uuid, f64, Vec<usize>)>, terms: usize| -> (Vec<Uuid>, Vec<f64>) {
            ranked(&hits, terms, size, limit).into_iter().unzip()
        };
        let mem_hits = self.memories.hits(&memory_terms, |m| m.visible(as_of), |m| (m.id, m.dl));
        let ep_hits = self.episodes.hits(&episode_terms, |e| e.created_at <= as_of, |e| (e.id, e.dl));
        Some(LexicalLanes {
            state: self.state.clone(),
            memories: lane(mem_hits, memory_terms.len()),
            episodes: lane(ep_hits, episode_terms.len()),
            memory_terms,
            episode_terms,
        })
    }

    fn bytes(&self) -> usize {
        let common: usize = self.common_memory.keys().chain(self.common_episode.keys()).map(|k| 64 + k.len()).sum();
        self.memories.bytes() + self.episodes.bytes() + common
    }
}

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
    refreshing: Mutex<HashSet<(String, String)>>,
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
        LexicalCache { cache, refreshing: Mutex::new(HashSet::new()), counts: Counts::default() }
    }

    /// The index kept of the subject, if any.
    pub fn get(&self, tenant: &str, subject: &str) -> Option<Arc<Index>> {
        self.cache.as_ref()?.get(&(tenant.to_string(), subject.to_string()))
    }

    /// Counts how a call's lanes were ranked, and brings the subject's index up to date in the
    /// background when the call found it missing or of another state than `state` (the
    /// subject's as the call saw it), for a subject large enough to index.
    pub fn after_call(self: &Arc<Self>, pool: &PgPool, tenant: &str, subject: &str, state: &str, used: bool) {
        use std::sync::atomic::Ordering::Relaxed;
        let ranked_by = if used { "server" } else { "database" };
        if used { &self.counts.server } else { &self.counts.database }.fetch_add(1, Relaxed);
        crate::metrics::record_context_lexical(ranked_by);
        if used || self.cache.is_none() || latest_seq(state) < INDEX_FROM_SEQ {
            return;
        }
        if self.get(tenant, subject).is_some_and(|i| i.state == state) {
            return;
        }
        let key = (tenant.to_string(), subject.to_string());
        {
            let Ok(mut refreshing) = self.refreshing.lock() else { return };
            if !refreshing.insert(key.clone()) {
                return;
            }
        }
        let (cache, pool) = (Arc::clone(self), pool.clone());
        tokio::spawn(async move {
            if let Err(e) = cache.refresh(&pool, &key.0, &key.1).await {
                tracing::warn!(error = %format!("{e:#}"), "lexical index refresh failed");
            }
            if let Ok(mut refreshing) = cache.refreshing.lock() {
                refreshing.remove(&key);
            }
        });
    }

    /// Reads what changed since the kept index (all of it without one) and keeps the new index.
    pub async fn refresh(&self, pool: &PgPool, tenant: &str, subject: &str) -> anyhow::Result<()> {
        let Some(cache) = &self.cache else { return Ok(()) };
        let known = self.get(tenant, subject);
        let rows = lexical::rows(pool, tenant, subject, known.as_ref().map(|k| k.state.as_str())).await?;
        let built = tokio::task::spawn_blocking(move || Index::build(rows, known.as_deref())).await?;
        match built {
            Some(index) => cache.insert((tenant.to_string(), subject.to_string()), Arc::new(index)),
            None => anyhow::bail!("the lexical rows left out rows no index holds"),
        }
        Ok(())
    }
}

/// The latest seq a state names (`version/seq/id`), 0 when it names none.
fn latest_seq(state: &str) -> i64 {
    state.split('/').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::lexical::{CommonTerm, EpisodeRow, MemoryRow};

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap_or_default()
    }

    fn lex(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    fn rows(state: &str, episodes: &[(i64, &[&str])], memories: Option<&[(&[&str], bool)]>) -> LexicalRows {
        LexicalRows {
            state: state.into(),
            memories: memories.map(|ms| {
                ms.iter()
                    .enumerate()
                    .map(|(i, (l, superseded))| MemoryRow {
                        id: Uuid::from_u128(1000 + i as u128),
                        recorded_at: at(i as i64),
                        superseded_at: superseded.then(|| at(50)),
                        asserted_valid_to: None,
                        tombstoned: false,
                        lexemes: lex(l),
                    })
                    .collect()
            }),
            episodes: episodes
                .iter()
                .map(|(seq, l)| EpisodeRow { id: Uuid::from_u128(*seq as u128), seq: *seq, created_at: at(*seq), lexemes: lex(l) })
                .collect(),
            episodes_after: false,
            common: vec![CommonTerm { memory: false, lexeme: "team".into(), since: at(3) }],
        }
    }

    #[test]
    fn lanes_rank_the_visible_rows_holding_the_task_terms_as_the_lanes_module_does() {
        let eps: [(i64, &[&str]); 4] =
            [(1, &["deploy", "kafka"]), (2, &["kafka", "lag", "consum"]), (3, &["budget", "team"]), (4, &["kafka"])];
        let mems: [(&[&str], bool); 3] = [(&["kafka", "lag"], false), (&["kafka"], true), (&["budget"], false)];
        let index = Index::build(rows("1/4/x", &eps, Some(&mems)), None).unwrap();
        let words = lex(&["kafka", "lagging", "team"]);
        // At 10: every episode is recorded; the second memory is still current.
        let lanes = index.lanes(&words, at(10), 10).unwrap();
        assert_eq!(lanes.memory_terms, ["kafka", "lag", "team"]);
        assert_eq!(lanes.episode_terms, ["kafka", "lag"], "team is common among episodes since 3");
        assert_eq!(lanes.episodes.0.len(), 3);
        let expect = ranked(
            &[
                (Uuid::from_u128(1), 2.0, vec![0]),
                (Uuid::from_u128(2), 3.0, vec![0, 1]),
                (Uuid::from_u128(4), 1.0, vec![0]),
            ],
            2,
            4.0,
            10,
        );
        assert_eq!(lanes.episodes.0, expect.iter().map(|e| e.0).collect::<Vec<_>>());
        assert_eq!(lanes.episodes.1, expect.iter().map(|e| e.1).collect::<Vec<_>>());
        assert_eq!(lanes.memories.0.len(), 2);
        // At 2: episodes 3 and 4 are not yet recorded, team not yet common; at 60 the second
        // memory is superseded.
        let early = index.lanes(&words, at(2), 10).unwrap();
        assert_eq!(early.episode_terms, ["kafka", "lag", "team"]);
        assert_eq!(early.episodes.0, [Uuid::from_u128(2), Uuid::from_u128(1)]);
        assert_eq!(index.lanes(&words, at(60), 10).unwrap().memories.0, [Uuid::from_u128(1000)]);
        assert_eq!(index.lanes(&words, at(10), 1).unwrap().episodes.0.len(), 1, "cut at the limit");
        assert!(index.lanes(&lex(&["café"]), at(10), 10).is_none(), "no guess for a word it cannot tell");
    }

    #[test]
    fn a_refresh_adds_the_new_episodes_and_keeps_unchanged_memories() {
        let mems: [(&[&str], bool); 1] = [(&["kafka"], false)];
        let first = Index::build(rows("1/1/a", &[(1, &["kafka"])], Some(&mems)), None).unwrap();
        let mut more = rows("1/2/b", &[(2, &["kafka", "lag"])], None);
        more.episodes_after = true;
        let second = Index::build(more, Some(&first)).unwrap();
        assert_eq!(second.state, "1/2/b");
        let lanes = second.lanes(&lex(&["kafka"]), at(10), 10).unwrap();
        assert_eq!(lanes.episodes.0.len(), 2);
        assert_eq!(lanes.memories.0, [Uuid::from_u128(1000)]);
        assert!(Index::build(rows("1/2/b", &[], None), None).is_none(), "kept memories need an index");
        assert_eq!(latest_seq("7/2500/x"), 2500);
        assert_eq!(latest_seq("7/0/-"), 0);
    }
}
