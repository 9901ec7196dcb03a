//! A subject's lexemes of one state, how it is built from that state's rows, and what a call
//! ranks on it (its BM25 lanes, and the memories citing the turns a call fetched).

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::bm25::ranked;
use super::postings::{Postings, Turns};
use crate::db::context::{Citer, LexicalLanes};
use crate::db::lexical::LexicalRow;
use crate::lexemes::english;
use crate::services::context::lanes::shown_at;

/// The most task terms a lane is ranked for here (one bit each); longer tasks are ranked by Postgres.
const MAX_TERMS: usize = 128;

#[derive(Debug)]
struct MemoryEntry {
    id: Uuid,
    dl: u32,
    recorded_at: DateTime<Utc>,
    superseded_at: Option<DateTime<Utc>>,
    asserted_valid_to: Option<DateTime<Utc>>,
    tombstoned: bool,
    /// A claim contradiction's record names it as the superseded memory.
    contradiction: bool,
}

impl MemoryEntry {
    /// Its lane's filter (`mnemo_memory_hits`): recorded, not superseded, not tombstoned, its
    /// asserted validity not ended, all as of `as_of`.
    fn visible(&self, as_of: DateTime<Utc>) -> bool {
        self.recorded_at <= as_of && shown_at(self.superseded_at, self.tombstoned, self.asserted_valid_to, as_of)
    }
}

/// The memories, with the memories compiled from each episode.
#[derive(Debug, Default)]
struct Memories {
    postings: Postings<MemoryEntry>,
    by_source: HashMap<Uuid, Vec<u32>>,
}

#[derive(Debug, Clone)]
struct EpisodeEntry {
    id: Uuid,
    seq: i64,
    created_at: DateTime<Utc>,
    dl: u32,
}

/// A subject's lexemes, of one state of it.
#[derive(Debug)]
pub struct Index {
    /// The state it is of (`mnemo_lexical_state`).
    pub state: String,
    memories: Arc<Memories>,
    episodes: Turns<EpisodeEntry>,
    /// How many writes of the subject's turns this server had made when the rows were read
    /// (see `LexicalCache::for_call`).
    pub(super) writes: u64,
    /// Common terms per source, with the instant each became common.
    common_memory: HashMap<String, DateTime<Utc>>,
    common_episode: HashMap<String, DateTime<Utc>>,
}

/// An index being built from the rows of one state (`db::lexical::rows`), on the index they
/// were asked against (`known`), which holds what they leave out.
pub struct Builder<'a> {
    known: Option<&'a Index>,
    state: Option<String>,
    /// None: the known index's memories are the state's.
    memories: Option<Memories>,
    /// The turns this state keeps of the known index's (none: all come).
    base: Arc<Postings<EpisodeEntry>>,
    episodes: Postings<EpisodeEntry>,
    common_memory: HashMap<String, DateTime<Utc>>,
    common_episode: HashMap<String, DateTime<Utc>>,
    /// A row that did not fit (rows out of order, or left out without a known index).
    broken: Option<&'static str>,
}

impl<'a> Builder<'a> {
    pub fn new(known: Option<&'a Index>) -> Self {
        Builder {
            known,
            state: None,
            memories: None,
            base: Arc::default(),
            episodes: Postings::default(),
            common_memory: HashMap::new(),
            common_episode: HashMap::new(),
            broken: None,
        }
    }

    pub fn add(&mut self, row: LexicalRow) {
        match row {
            LexicalRow::State { state, memories, episodes_after } => {
                self.state = Some(state);
                self.memories = memories.then(Memories::default);
                if episodes_after {
                    match self.known {
                        Some(k) => {
                            self.base = Arc::clone(&k.episodes.base);
                            self.episodes = k.episodes.tail.clone();
                        }
                        None => self.broken = Some("episodes after an index that is not there"),
                    }
                }
            }
            LexicalRow::Memory(m) => {
                let Some(p) = self.memories.as_mut() else {
                    self.broken = Some("a memory the state said was kept");
                    return;
                };
                let at = u32::try_from(p.postings.rows.len()).unwrap_or(u32::MAX);
                for source in m.sources {
                    p.by_source.entry(source).or_default().push(at);
                }
                let entry = MemoryEntry {
                    id: m.id,
                    dl: u32::try_from(m.lexemes.len()).unwrap_or(u32::MAX),
                    recorded_at: m.recorded_at,
                    superseded_at: m.superseded_at,
                    asserted_valid_to: m.asserted_valid_to,
                    tombstoned: m.tombstoned,
                    contradiction: m.contradiction,
                };
                p.postings.add(entry, m.lexemes);
            }
            LexicalRow::Episode(e) => {
                let last = self.episodes.rows.last().or_else(|| self.base.rows.last());
                if last.is_some_and(|last| last.seq >= e.seq) {
                    self.broken = Some("episodes out of seq order");
                }
                let dl = u32::try_from(e.lexemes.len()).unwrap_or(u32::MAX);
                self.episodes.add(EpisodeEntry { id: e.id, seq: e.seq, created_at: e.created_at, dl }, e.lexemes);
            }
            LexicalRow::Common(c) => {
                if c.memory { &mut self.common_memory } else { &mut self.common_episode }.insert(c.lexeme, c.since);
            }
        }
    }

    /// The index, or why the rows do not make one.
    pub fn finish(self) -> Result<Index, &'static str> {
        if let Some(why) = self.broken {
            return Err(why);
        }
        let state = self.state.ok_or("no state")?;
        let memories = match self.memories {
            Some(mut p) => {
                p.postings.holding.values_mut().chain(p.by_source.values_mut()).for_each(Vec::shrink_to_fit);
                Arc::new(p)
            }
            None => Arc::clone(&self.known.ok_or("memories kept without an index")?.memories),
        };
        let mut tail = self.episodes;
        tail.holding.values_mut().for_each(Vec::shrink_to_fit);
        Ok(Index {
            state,
            memories,
            episodes: Turns { base: self.base, tail }.settled(),
            writes: 0,
            common_memory: self.common_memory,
            common_episode: self.common_episode,
        })
    }
}

impl Index {
    /// How many memories and episodes it holds.
    pub fn rows(&self) -> (usize, usize) {
        (self.memories.postings.rows.len(), self.episodes.len())
    }

    /// The lanes `mnemo_context` would rank for a task of content `words` at `as_of`, each of
    /// `limit` items; None when the task's lexemes cannot be told in process.
    pub fn lanes(&self, words: &[String], as_of: DateTime<Utc>, limit: usize) -> Option<LexicalLanes> {
        let lexemes = english::lexemes(words).filter(|l| l.len() <= MAX_TERMS)?;
        let without = |common: &HashMap<String, DateTime<Utc>>| -> Vec<String> {
            lexemes.iter().filter(|l| common.get(l.as_str()).is_none_or(|since| *since > as_of)).cloned().collect()
        };
        let (memory_terms, episode_terms) = (without(&self.common_memory), without(&self.common_episode));
        // The subject's size as BM25 counts it: the seq of its latest episode recorded by then.
        let size = self.episodes.latest_first().find(|e| e.created_at <= as_of).map_or(0, |e| e.seq) as f64;
        let lane = |hits: Vec<(Uuid, f64, u128)>, terms: usize| -> (Vec<Uuid>, Vec<f64>) {
            ranked(&hits, terms, size, limit).into_iter().unzip()
        };
        let mem_hits = self.memories.postings.hits(&memory_terms, |m| m.visible(as_of), |m| (m.id, m.dl));
        // A turn is in one part or the other, so its hit is whole in either; the ranking does
        // not depend on the hits' order.
        let recorded = |e: &EpisodeEntry| e.created_at <= as_of;
        let mut ep_hits = self.episodes.base.hits(&episode_terms, recorded, |e| (e.id, e.dl));
        ep_hits.extend(self.episodes.tail.hits(&episode_terms, recorded, |e| (e.id, e.dl)));
        Some(LexicalLanes {
            state: Some(self.state.clone()),
            memories: lane(mem_hits, memory_terms.len()),
            episodes: lane(ep_hits, episode_terms.len()),
            memory_terms,
            episode_terms,
        })
    }

    /// The memories recorded by `as_of` that cite any of the `asked` episodes, each with the
    /// asked episodes it cites (what `mnemo_episode_citers` returns, for the lanes' backing),
    /// in the order they were added.
    pub fn citers(&self, asked: impl IntoIterator<Item = Uuid>, as_of: DateTime<Utc>) -> Vec<Citer> {
        let rows = &self.memories.postings.rows;
        let mut asked: Vec<Uuid> = asked.into_iter().collect();
        asked.sort_unstable();
        asked.dedup();
        // (memory, episode) pairs, then one citer a memory: plain sorts, no tree per call.
        let mut cited: Vec<(u32, Uuid)> = Vec::new();
        for e in asked {
            for &i in self.memories.by_source.get(&e).into_iter().flatten() {
                if rows[i as usize].recorded_at <= as_of {
                    cited.push((i, e));
                }
            }
        }
        cited.sort_unstable();
        cited
            .chunk_by(|a, b| a.0 == b.0)
            .map(|run| {
                let m = &rows[run[0].0 as usize];
                Citer {
                    sources: run.iter().map(|&(_, e)| e).collect(),
                    superseded_at: m.superseded_at,
                    tombstoned: m.tombstoned,
                    asserted_valid_to: m.asserted_valid_to,
                    contradiction: m.contradiction,
                }
            })
            .collect()
    }

    /// An estimate of its bytes.
    pub(super) fn bytes(&self) -> usize {
        let common: usize = self.common_memory.keys().chain(self.common_episode.keys()).map(|k| 64 + k.len()).sum();
        let sources: usize = self.memories.by_source.values().map(|v| 48 + 4 * v.len()).sum();
        self.memories.postings.bytes() + sources + self.episodes.base.bytes() + self.episodes.tail.bytes() + common
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::lexical::{CommonTerm, EpisodeRow, MemoryRow};

    /// What `db::lexical::rows` would send for a state.
    struct LexicalRows {
        state: String,
        memories: Option<Vec<MemoryRow>>,
        episodes: Vec<EpisodeRow>,
        episodes_after: bool,
        common: Vec<CommonTerm>,
    }

    fn build(rows: LexicalRows, known: Option<&Index>) -> Result<Index, &'static str> {
        let mut b = Builder::new(known);
        let memories = rows.memories.is_some();
        b.add(LexicalRow::State { state: rows.state, memories, episodes_after: rows.episodes_after });
        rows.memories.into_iter().flatten().for_each(|m| b.add(LexicalRow::Memory(m)));
        rows.episodes.into_iter().for_each(|e| b.add(LexicalRow::Episode(e)));
        rows.common.into_iter().for_each(|c| b.add(LexicalRow::Common(c)));
        b.finish()
    }

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
                        sources: vec![Uuid::from_u128(1 + i as u128)],
                        contradiction: *superseded,
                    })
                    .collect()
            }),
            episodes: episodes
                .iter()
                .map(|(seq, l)| EpisodeRow {
                    id: Uuid::from_u128(*seq as u128),
                    seq: *seq,
                    created_at: at(*seq),
                    lexemes: lex(l),
                })
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
        let index = build(rows("1/4/x", &eps, Some(&mems)), None).unwrap();
        let words = lex(&["kafka", "lagging", "team"]);
        // At 10: every episode is recorded; the second memory is still current.
        let lanes = index.lanes(&words, at(10), 10).unwrap();
        assert_eq!(lanes.memory_terms, ["kafka", "lag", "team"]);
        assert_eq!(lanes.episode_terms, ["kafka", "lag"], "team is common among episodes since 3");
        assert_eq!(lanes.episodes.0.len(), 3);
        let expect = ranked(
            &[
                (Uuid::from_u128(1), 2.0, vec![0usize]),
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

        // Memory 1000 cites episode 1, 1001 (superseded at 50 through a contradiction) episode 2;
        // episode 4 has none; 1001 is recorded at 1.
        let asked = [4, 2, 1, 2].map(Uuid::from_u128);
        let c = |as_of| -> Vec<(Vec<u128>, bool)> {
            index
                .citers(asked, at(as_of))
                .iter()
                .map(|c| (c.sources.iter().map(|s| s.as_u128()).collect(), c.contradiction))
                .collect()
        };
        assert_eq!(c(10), [(vec![1], false), (vec![2], true)]);
        assert_eq!(c(0), [(vec![1], false)], "the second memory is recorded at 1");
        assert!(index.citers([Uuid::from_u128(4)], at(10)).is_empty());
    }

    #[test]
    fn a_refresh_adds_the_new_episodes_and_keeps_unchanged_memories() {
        let mems: [(&[&str], bool); 1] = [(&["kafka"], false)];
        let first = build(rows("1/1/a", &[(1, &["kafka"])], Some(&mems)), None).unwrap();
        let mut more = rows("1/2/b", &[(2, &["kafka", "lag"])], None);
        more.episodes_after = true;
        let second = build(more, Some(&first)).unwrap();
        assert_eq!(second.state, "1/2/b");
        let lanes = second.lanes(&lex(&["kafka"]), at(10), 10).unwrap();
        assert_eq!(lanes.episodes.0.len(), 2);
        assert_eq!(lanes.memories.0, [Uuid::from_u128(1000)]);
        assert!(build(rows("1/2/b", &[], None), None).is_err(), "kept memories need an index");
        let mut after = rows("1/2/b", &[(2, &["kafka"])], None);
        after.episodes_after = true;
        assert!(build(after, None).is_err(), "episodes after an index need the index");
        let shuffled = rows("1/2/b", &[(2, &["kafka"]), (1, &["lag"])], Some(&mems));
        assert!(build(shuffled, None).is_err(), "episodes must come in seq order");
        let mut behind = rows("1/3/c", &[(1, &["kafka"])], None);
        behind.episodes_after = true;
        assert!(build(behind, Some(&second)).is_err(), "new turns come after the known ones");
    }

    /// Turns added by refreshes (kept apart from the base, then folded into it) rank as the same
    /// turns indexed at once.
    #[test]
    fn turns_added_by_refreshes_rank_as_turns_indexed_at_once() {
        const WORDS: [&str; 6] = ["kafka", "lag", "deploy", "budget", "team", "garden"];
        let lexemes = |seq: i64| -> Vec<&'static str> {
            let n = (seq % 4 + 1) as usize;
            (0..n).map(|i| WORDS[(seq as usize * 7 + i * 3) % WORDS.len()]).collect()
        };
        let total = super::super::postings::TAIL_ROWS as i64 + 700;
        let all: Vec<(i64, Vec<&str>)> = (1..=total).map(|s| (s, lexemes(s))).collect();
        let slice = |from: i64, to: i64| -> Vec<(i64, &[&str])> {
            all.iter().filter(|(s, _)| (from..=to).contains(s)).map(|(s, l)| (*s, l.as_slice())).collect()
        };
        let mems: [(&[&str], bool); 1] = [(&["kafka"], false)];
        let at_once = build(rows("1/x/a", &slice(1, total), Some(&mems)), None).unwrap();

        let mut index = build(rows("1/x/a", &slice(1, 600), Some(&mems)), None).unwrap();
        let mut from = 601;
        // Small refreshes stay in the tail; the large one folds it into the base.
        for to in [610, 611, 700, total] {
            let mut more = rows("1/x/a", &slice(from, to), None);
            more.episodes_after = true;
            index = build(more, Some(&index)).unwrap();
            from = to + 1;
            let folded = index.episodes.tail.rows.is_empty();
            assert_eq!(folded, to == total, "after {to}: {} turns in the tail", index.episodes.tail.rows.len());
        }
        assert_eq!(index.rows(), at_once.rows());
        for words in [&["kafka"][..], &["lag", "team"], &["garden", "deploy", "budget"]] {
            for as_of in [300, 605, 650, total] {
                let (a, b) = (index.lanes(&lex(words), at(as_of), 40), at_once.lanes(&lex(words), at(as_of), 40));
                let (a, b) = (a.unwrap(), b.unwrap());
                assert_eq!((a.episodes, a.episode_terms), (b.episodes, b.episode_terms), "{words:?} at {as_of}");
            }
        }
    }
}
