//! A small subject's context call (`mnemo_context_small`): what depends on the
//! call comes every time, the subject's rows only when the server does not hold them already.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::db::context::{EpisodeCandidate, MemoryCandidate};
use crate::db::context_row::{meta, need, Fingerprint, MemoryList, Row};
use crate::db::working_memory::SnapshotRow;
use crate::model::memory::MemoryStatus;

/// A memory of a small subject as the server keeps it, whatever a call's instant.
#[derive(Debug, Clone)]
pub struct SubjectMemory {
    /// The row, with no scores yet.
    pub candidate: MemoryCandidate,
    /// When mnemo recorded it (a call sees it from then on).
    pub recorded_at: DateTime<Utc>,
    /// Its distinct lexemes (`content_tsv`).
    pub lexemes: Lexemes,
    /// A claim contradiction's record names it as the superseded memory (it counts as
    /// contradicted from its `superseded_at` on). Always false in a large subject's pool, whose
    /// backing comes from its citers ([`SmallCall::citers`]).
    pub contradiction: bool,
    /// Its row version (`xmin`): another one once the row changes.
    pub xmin: i64,
}

impl SubjectMemory {
    /// Its entry in the statement's list of memories (part 15): row version and contradiction.
    fn entry(&self) -> String {
        format!("{}:{}", self.xmin, if self.contradiction { 't' } else { 'f' })
    }
}

/// An episode of a small subject as the server keeps it.
#[derive(Debug, Clone)]
pub struct SubjectEpisode {
    /// The row, with no scores yet.
    pub candidate: EpisodeCandidate,
    /// Its distinct lexemes (`search_tsv`).
    pub lexemes: Lexemes,
}

/// A row's distinct lexemes, sorted in Rust's order for binary search (Postgres orders a
/// tsvector's by length first), with a signature of them: a bit array of about eight bits per
/// lexeme (a power of two, at least 128) with two bits set per lexeme, so a term whose bits are
/// not all set is certainly absent and needs no search. A BM25 lane asks every row whether it
/// holds each task term; most rows hold none, and the signature answers those without comparing
/// strings. Sized by the row, it stays sparse for a 3 KB answer of some 300 lexemes as for a
/// short fact (a fixed 128 bits filled up on long turns, and every term then went to a search).
#[derive(Debug, Clone, Default)]
pub struct Lexemes {
    sorted: Vec<String>,
    signature: Box<[u64]>,
}

/// Signature bits per lexeme (as a lower bound: the array is a power of two).
const BITS_PER_LEXEME: usize = 8;

impl Lexemes {
    pub fn new(mut lexemes: Vec<String>) -> Self {
        lexemes.sort_unstable();
        let words = (lexemes.len() * BITS_PER_LEXEME).next_power_of_two().max(128) / 64;
        let mut signature = vec![0u64; words].into_boxed_slice();
        for l in &lexemes {
            for bit in Self::positions(Self::hash(l), words * 64) {
                signature[bit / 64] |= 1 << (bit % 64);
            }
        }
        Lexemes { sorted: lexemes, signature }
    }

    /// A lexeme's hash (FNV-1a), computed once per task term and tried against every row.
    pub fn hash(lexeme: &str) -> u64 {
        lexeme.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
    }

    /// The two signature bits of a hash in an array of `bits` bits (a power of two).
    fn positions(hash: u64, bits: usize) -> [usize; 2] {
        let mask = bits as u64 - 1;
        [(hash & mask) as usize, ((hash >> 32) & mask) as usize]
    }

    /// Whether the signature lets a term of this `hash` through (false: certainly absent).
    fn may_hold(&self, hash: u64) -> bool {
        let sig = &self.signature;
        !sig.is_empty() && Self::positions(hash, sig.len() * 64).iter().all(|&b| sig[b / 64] & (1 << (b % 64)) != 0)
    }

    /// Whether `term`, whose [`Self::hash`] is `hash`, is one of them.
    pub fn holds(&self, term: &str, hash: u64) -> bool {
        self.may_hold(hash) && self.sorted.binary_search_by(|l| l.as_str().cmp(term)).is_ok()
    }

    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// The bytes its signature takes.
    pub fn signature_bytes(&self) -> usize {
        8 * self.signature.len()
    }

    pub fn as_slice(&self) -> &[String] {
        &self.sorted
    }
}

/// Every row of a small subject, of one state of it (the one its fingerprint names). Shared
/// with the copies made from it: a call that brings only new episodes keeps the memories and
/// the earlier episodes of the copy it had.
#[derive(Debug, Default, Clone)]
pub struct SubjectRows {
    pub memories: Vec<Arc<SubjectMemory>>,
    /// In seq order.
    pub episodes: Vec<Arc<SubjectEpisode>>,
}

/// Which of a subject's rows of one kind a call's statement sent (see [`SmallCall::rows`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// Every row.
    #[default]
    All,
    /// None: the copy the call named holds them.
    Kept,
    /// The episodes after the copy's latest one (the copy holds the others).
    After,
    /// The memories changed after the copy's, with the list of every memory's id and entry.
    Changed,
}

/// What a small subject's call returned.
#[derive(Debug, Default)]
pub struct SmallCall {
    /// The subject's fingerprint: its memory version, its number of episodes and its latest
    /// episode's id. Equal fingerprints mean equal rows.
    pub fingerprint: String,
    /// Which memories and which episodes were sent, and those sent.
    pub memories_sent: Sent,
    pub episodes_sent: Sent,
    pub memories: Vec<SubjectMemory>,
    pub episodes: Vec<SubjectEpisode>,
    /// With [`Sent::Changed`]: every memory's id, in order, and its entry (`xmin:t` or `xmin:f`).
    pub memory_list: (Vec<Uuid>, Vec<String>),
    /// The task's lexemes per source, without the subject's common terms of that source.
    pub memory_terms: Vec<String>,
    pub episode_terms: Vec<String>,
    /// The cosine distance to the task vector of every memory with an embedding of its model
    /// (None: the distance is NULL).
    pub memory_dists: HashMap<Uuid, Option<f64>>,
    /// Likewise for episodes, with an embedding recorded by the call's instant (an episode's
    /// nearest vector: its opening's or a passage's).
    pub episode_dists: HashMap<Uuid, Option<f64>>,
    /// The episodes whose nearest vector is a passage's: where it starts (a char of the text).
    pub episode_focus: HashMap<Uuid, usize>,
    /// The session's snapshot as of the call.
    pub snapshot: Option<SnapshotRow>,
    /// For a large subject's pool (whose memories are not all the subject's): the memories
    /// recorded by the call's instant that cite the pool's turns or its summaries' sources, which
    /// decide whether a turn is backed. None for a small subject: its memories are all there.
    pub citers: Option<Vec<Citer>>,
}

/// A memory citing a turn, as far as the turn's backing goes.
#[derive(Debug, Clone)]
pub struct Citer {
    pub sources: Vec<Uuid>,
    pub superseded_at: Option<DateTime<Utc>>,
    pub tombstoned: bool,
    pub asserted_valid_to: Option<DateTime<Utc>>,
    /// A claim contradiction's record names it as the superseded memory.
    pub contradiction: bool,
}

impl SmallCall {
    /// Takes one row of parts 10-16; false for a row of another part.
    pub(super) fn take(&mut self, mut r: Row, subject_id: &str) -> sqlx::Result<bool> {
        match r.part {
            10 => {
                let dist = (r.embedded == Some(true)).then_some(r.distance);
                let lexemes = Lexemes::new(r.lexemes.take().unwrap_or_default());
                let recorded_at = need(r.recorded_at, "recorded_at")?;
                // A pool's memories come without it: its citers decide the backing.
                let contradiction = r.contradicted.take().unwrap_or(false);
                let xmin = need(r.row_version.take(), "row_version")?;
                let candidate = r.memory(subject_id)?;
                if let Some(dist) = dist {
                    self.memory_dists.insert(candidate.memory.id, dist);
                }
                self.memories.push(SubjectMemory { candidate, recorded_at, lexemes, contradiction, xmin });
            }
            11 => {
                let dist = (r.embedded == Some(true)).then_some(r.distance);
                let lexemes = Lexemes::new(r.lexemes.take().unwrap_or_default());
                let focus = r.terms.take().and_then(|t| t.first().copied());
                let candidate = r.episode(subject_id)?;
                if let Some(dist) = dist {
                    self.episode_dists.insert(candidate.episode.id, dist);
                }
                if let Some(at) = focus.and_then(|f| usize::try_from(f).ok()) {
                    self.episode_focus.insert(candidate.episode.id, at);
                }
                self.episodes.push(SubjectEpisode { candidate, lexemes });
            }
            12 => {
                let terms = r.lexemes.unwrap_or_default();
                match r.source.as_deref() {
                    Some("memory") => self.memory_terms = terms,
                    _ => self.episode_terms = terms,
                }
            }
            13 => {
                let (ids, dists) = (need(r.ids, "ids")?, need(r.floats, "floats")?);
                if ids.len() != dists.len() {
                    return Err(sqlx::Error::Protocol("the distances' arrays differ in length".into()));
                }
                if r.source.as_deref() == Some("memory") {
                    self.memory_dists.extend(ids.into_iter().zip(dists));
                } else {
                    // Where each episode's nearest passage starts (-1: its opening is nearest).
                    let starts = r.terms.unwrap_or_default();
                    for (id, start) in ids.iter().zip(starts) {
                        if let Ok(at) = usize::try_from(start) {
                            self.episode_focus.insert(*id, at);
                        }
                    }
                    self.episode_dists.extend(ids.into_iter().zip(dists));
                }
            }
            15 => {
                let list: MemoryList = meta(r.meta)?;
                self.memory_list = (need(r.ids, "ids")?, list.entries);
            }
            16 => self.citers.get_or_insert_with(Vec::new).push(Citer {
                sources: need(r.source_episode_ids, "source_episode_ids")?,
                superseded_at: r.superseded_at,
                tombstoned: need(r.status.as_deref().and_then(MemoryStatus::parse), "status")?
                    == MemoryStatus::Tombstoned,
                asserted_valid_to: r.asserted_valid_to,
                contradiction: need(r.contradicted, "contradicted")?,
            }),
            14 => {
                let print: Fingerprint = meta(r.meta)?;
                self.fingerprint = print.fingerprint;
                self.memories_sent = sent(Some(&print.memories))?;
                self.episodes_sent = sent(Some(&print.episodes))?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The subject's rows: those sent, with the rows `kept` holds where the statement sent
    /// none (the copy whose fingerprint the call sent), only the episodes after its latest, or
    /// only the memories changed after the copy's. None when a listed memory is neither sent
    /// nor in the copy as listed: the call must ask again without a fingerprint.
    pub fn rows(&mut self, kept: Option<&SubjectRows>) -> sqlx::Result<Option<SubjectRows>> {
        let copy = || {
            kept.ok_or_else(|| {
                sqlx::Error::Protocol("the context statement left out rows the server does not hold".into())
            })
        };
        let memories: Vec<Arc<SubjectMemory>> = match self.memories_sent {
            Sent::All => std::mem::take(&mut self.memories).into_iter().map(Arc::new).collect(),
            Sent::Kept => copy()?.memories.clone(),
            Sent::Changed => {
                let (ids, entries) = std::mem::take(&mut self.memory_list);
                let mut sent: HashMap<Uuid, SubjectMemory> =
                    std::mem::take(&mut self.memories).into_iter().map(|m| (m.candidate.memory.id, m)).collect();
                let held: HashMap<Uuid, &Arc<SubjectMemory>> =
                    copy()?.memories.iter().map(|m| (m.candidate.memory.id, m)).collect();
                let mut out = Vec::with_capacity(ids.len());
                for (id, entry) in ids.iter().zip(&entries) {
                    if let Some(m) = sent.remove(id) {
                        out.push(Arc::new(m));
                    } else if let Some(m) = held.get(id).filter(|m| m.entry() == *entry) {
                        out.push(Arc::clone(m));
                    } else {
                        return Ok(None);
                    }
                }
                out
            }
            Sent::After => return Err(sqlx::Error::Protocol("the context statement sent some memories".into())),
        };
        let sent = std::mem::take(&mut self.episodes).into_iter().map(Arc::new);
        let mut episodes: Vec<Arc<SubjectEpisode>> = match self.episodes_sent {
            Sent::All => sent.collect(),
            Sent::Kept | Sent::After => copy()?.episodes.iter().cloned().chain(sent).collect(),
            Sent::Changed => return Err(sqlx::Error::Protocol("the context statement sent changed episodes".into())),
        };
        episodes.sort_by_key(|e| e.candidate.seq);
        // A subject's seqs are unique: a repeated one means the copy and the rows sent overlap.
        if episodes.windows(2).any(|w| w[0].candidate.seq == w[1].candidate.seq) {
            return Err(sqlx::Error::Protocol("the context statement sent an episode the server holds".into()));
        }
        Ok(Some(SubjectRows { memories, episodes }))
    }
}

/// The statement's word for which rows it sent.
fn sent(word: Option<&str>) -> sqlx::Result<Sent> {
    match word {
        Some("all") => Ok(Sent::All),
        Some("kept") => Ok(Sent::Kept),
        Some("after") => Ok(Sent::After),
        Some("changed") => Ok(Sent::Changed),
        other => Err(sqlx::Error::Protocol(format!("the context statement sent rows as {other:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_never_hides_a_lexeme_and_turns_most_absent_terms_away() {
        let probes = ["kafka", "deploy", "w40001", "", "ünïcode", "pipelin", "budget"];
        // Rows of 20 lexemes (a fact) and of 300 (a long answer): the signature grows with them.
        for size in [20, 300] {
            let words: Vec<String> = (0..size * 50).map(|i| format!("w{i}")).collect();
            let (mut turned_away, mut asked) = (0, 0);
            for row in words.chunks(size) {
                let lexemes = Lexemes::new(row.iter().rev().cloned().collect());
                assert_eq!(lexemes.len(), size);
                for w in row {
                    assert!(lexemes.holds(w, Lexemes::hash(w)), "{w} is held");
                }
                for probe in probes {
                    let hash = Lexemes::hash(probe);
                    assert!(!lexemes.holds(probe, hash));
                    turned_away += usize::from(!lexemes.may_hold(hash));
                    asked += 1;
                }
            }
            // About eight bits a lexeme, two set each: some 19 absent terms in 20 need no search.
            assert!(turned_away * 10 > asked * 8, "{size} lexemes: {turned_away} of {asked} turned away");
        }
        assert!(!Lexemes::new(Vec::new()).holds("x", Lexemes::hash("x")));
    }
}
