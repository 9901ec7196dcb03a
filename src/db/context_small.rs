//! A small subject's context call (`mnemo_context_small`, migration 0032): what depends on the
//! call comes every time, the subject's rows only when the server does not hold them already.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::db::context::{EpisodeCandidate, MemoryCandidate};
use crate::db::context_row::{need, Row};
use crate::db::working_memory::SnapshotRow;

/// A memory of a small subject as the server keeps it, whatever a call's instant.
#[derive(Debug, Clone)]
pub struct SubjectMemory {
    /// The row, with no scores yet.
    pub candidate: MemoryCandidate,
    /// When mnemo recorded it (a call sees it from then on).
    pub recorded_at: DateTime<Utc>,
    /// Its distinct lexemes (`content_tsv`), sorted.
    pub lexemes: Vec<String>,
    /// A claim contradiction's record names it as the superseded memory (it counts as
    /// contradicted from its `superseded_at` on).
    pub contradiction: bool,
}

/// An episode of a small subject as the server keeps it.
#[derive(Debug, Clone)]
pub struct SubjectEpisode {
    /// The row, with no scores yet.
    pub candidate: EpisodeCandidate,
    /// Its distinct lexemes (`search_tsv`), sorted.
    pub lexemes: Vec<String>,
}

/// Every row of a small subject, of one state of it (the one its fingerprint names).
#[derive(Debug, Default, Clone)]
pub struct SubjectRows {
    pub memories: Vec<SubjectMemory>,
    pub episodes: Vec<SubjectEpisode>,
}

/// What a small subject's call returned.
#[derive(Debug, Default)]
pub struct SmallCall {
    /// The subject's fingerprint: its memory version, its number of episodes and its latest
    /// episode's id. Equal fingerprints mean equal rows.
    pub fingerprint: String,
    /// The subject's rows, when the fingerprint the call sent was not this one.
    pub rows: Option<SubjectRows>,
    /// The task's lexemes per source, without the subject's common terms of that source.
    pub memory_terms: Vec<String>,
    pub episode_terms: Vec<String>,
    /// The cosine distance to the task vector of every memory with an embedding of its model
    /// (None: the distance is NULL).
    pub memory_dists: HashMap<Uuid, Option<f64>>,
    /// Likewise for episodes, with an embedding recorded by the call's instant.
    pub episode_dists: HashMap<Uuid, Option<f64>>,
    /// The session's snapshot as of the call.
    pub snapshot: Option<SnapshotRow>,
}

impl SmallCall {
    /// Takes one row of parts 10-14; false for a row of another part.
    pub(super) fn take(&mut self, mut r: Row, subject_id: &str) -> sqlx::Result<bool> {
        match r.part {
            10 => {
                let lexemes = sorted(r.lexemes.take().unwrap_or_default());
                let recorded_at = need(r.recorded_at, "recorded_at")?;
                let contradiction = need(r.contradicted.take(), "contradicted")?;
                r.lex = Some(0.0);
                let candidate = r.memory(subject_id)?;
                let rows = self.rows.get_or_insert_with(SubjectRows::default);
                rows.memories.push(SubjectMemory { candidate, recorded_at, lexemes, contradiction });
            }
            11 => {
                let lexemes = sorted(r.lexemes.take().unwrap_or_default());
                r.lex = Some(0.0);
                let candidate = r.episode(subject_id)?;
                self.rows.get_or_insert_with(SubjectRows::default).episodes.push(SubjectEpisode { candidate, lexemes });
            }
            12 => {
                let terms = r.lexemes.unwrap_or_default();
                match r.kind.as_deref() {
                    Some("memory") => self.memory_terms = terms,
                    _ => self.episode_terms = terms,
                }
            }
            13 => {
                let id = need(r.id, "id")?;
                match r.kind.as_deref() {
                    Some("memory") => self.memory_dists.insert(id, r.dist),
                    _ => self.episode_dists.insert(id, r.dist),
                };
            }
            14 => self.fingerprint = need(r.kind, "kind")?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// Lexemes in Rust's order, for binary search (Postgres orders a tsvector's by length first).
fn sorted(mut lexemes: Vec<String>) -> Vec<String> {
    lexemes.sort_unstable();
    lexemes
}
