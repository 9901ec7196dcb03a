//! The row of a context call's statement (`db::context::candidates`) and its decoding into
//! candidates.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use crate::db::context::{EpisodeCandidate, MemoryCandidate};
use crate::db::working_memory::SnapshotRow;
use crate::model::episode::Episode;
use crate::model::memory::{Memory, MemoryKind, MemoryStatus};

/// A row of the call's statement: part 0 the header, 4 the session's snapshot, 5 a source's
/// lexical hits (`mnemo_context` only), 10 a memory, 11 an episode, 12 the task's lexemes of one
/// source (`mnemo_context_small` only), 13 one source's distances to the task vector, 14 the
/// subject's fingerprint and 15 its list of memories (`mnemo_context_small` only), 16 a memory
/// citing a turn of the pool (`mnemo_context` only). Memories and episodes fill their own
/// columns; the per-call records (parts 0, 4, 14, 15) are the named fields of `meta`.
pub(super) struct Row {
    pub(super) part: i16,
    pub(super) id: Option<Uuid>,
    /// A memory's kind or an episode's type (parsed per part).
    pub(super) kind: Option<String>,
    pub(super) content: Option<String>,
    pub(super) summary: Option<String>,
    pub(super) confidence: Option<f64>,
    pub(super) valid_from: Option<DateTime<Utc>>,
    pub(super) valid_to: Option<DateTime<Utc>>,
    pub(super) asserted_valid_to: Option<DateTime<Utc>>,
    pub(super) superseded_at: Option<DateTime<Utc>>,
    pub(super) source_episode_ids: Option<Vec<Uuid>>,
    pub(super) metadata: Option<Value>,
    pub(super) status: Option<String>,
    pub(super) sensitivity_labels: Option<Vec<String>>,
    pub(super) suggested_labels: Option<Vec<String>>,
    pub(super) created_at: Option<DateTime<Utc>>,
    pub(super) updated_at: Option<DateTime<Utc>>,
    pub(super) claim_single: Option<bool>,
    /// An episode's source; in parts 5, 12 and 13 the source (`memory` or `episode`) the row is
    /// about.
    pub(super) source: Option<String>,
    pub(super) payload: Option<Value>,
    pub(super) provenance: Option<Value>,
    pub(super) session_id: Option<String>,
    pub(super) occurred_at: Option<DateTime<Utc>>,
    pub(super) seq: Option<i64>,
    /// A memory's: when mnemo recorded it, its row version (`xmin`), whether a claim
    /// contradiction's record names it as the superseded memory.
    pub(super) recorded_at: Option<DateTime<Utc>>,
    pub(super) row_version: Option<i64>,
    pub(super) contradicted: Option<bool>,
    /// A row's lexemes (a small subject's), or the task's (part 12).
    pub(super) lexemes: Option<Vec<String>>,
    /// A pool's row: its cosine distance to the task vector, where `embedded` says it has an
    /// embedding of the vector's model.
    pub(super) distance: Option<f64>,
    pub(super) embedded: Option<bool>,
    /// Parts 5 and 13: one source's items, one element an item: its id, and in part 5 (lexical
    /// hits) the term's place and the item's length, in part 13 its cosine distance to the task
    /// vector (NULL when that is NULL). Part 15: the subject's memories.
    pub(super) ids: Option<Vec<Uuid>>,
    pub(super) terms: Option<Vec<i32>>,
    pub(super) floats: Option<Vec<Option<f64>>>,
    /// The per-call record of parts 0, 4, 14 and 15.
    pub(super) meta: Option<Value>,
}

/// Part 0 of `mnemo_context` (`mnemo_context_small`'s has only the version).
#[derive(serde::Deserialize)]
pub(super) struct Header {
    pub(super) version: i64,
    /// The subject's state for an index of its lexemes.
    pub(super) state: Option<String>,
    #[serde(default)]
    pub(super) memory_terms: Vec<String>,
    #[serde(default)]
    pub(super) episode_terms: Vec<String>,
    #[serde(default)]
    pub(super) lexical_used: bool,
    pub(super) index_used: Option<bool>,
    #[serde(default)]
    pub(super) hits_follow: bool,
    /// The subject's size as BM25 counts it.
    #[serde(default)]
    pub(super) size: f64,
}

/// Part 14: the subject's fingerprint and which rows were sent.
#[derive(serde::Deserialize)]
pub(super) struct Fingerprint {
    pub(super) fingerprint: String,
    pub(super) memories: String,
    pub(super) episodes: String,
}

/// Part 15: each listed memory's entry (`xmin:t` or `xmin:f`), in the order of `ids`.
#[derive(serde::Deserialize)]
pub(super) struct MemoryList {
    pub(super) entries: Vec<String>,
}

/// The named fields of a row's `meta`.
pub(super) fn meta<T: serde::de::DeserializeOwned>(meta: Option<Value>) -> sqlx::Result<T> {
    serde_json::from_value(need(meta, "meta")?)
        .map_err(|e| sqlx::Error::ColumnDecode { index: "meta".into(), source: Box::new(e) })
}

impl Row {
    pub(super) fn memory(self, subject_id: &str) -> sqlx::Result<MemoryCandidate> {
        Ok(MemoryCandidate {
            memory: std::sync::Arc::new(Memory {
                id: need(self.id, "id")?,
                subject_id: subject_id.to_string(),
                kind: need(self.kind.as_deref().and_then(MemoryKind::parse), "kind")?,
                content: need(self.content, "content")?,
                summary: need(self.summary, "summary")?,
                confidence: need(self.confidence, "confidence")?,
                valid_from: need(self.valid_from, "valid_from")?,
                valid_to: self.valid_to,
                source_episode_ids: need(self.source_episode_ids, "source_episode_ids")?,
                metadata: need(self.metadata, "metadata")?,
                status: need(self.status.as_deref().and_then(MemoryStatus::parse), "status")?,
                sensitivity_labels: need(self.sensitivity_labels, "sensitivity_labels")?,
                suggested_labels: need(self.suggested_labels, "suggested_labels")?,
                created_at: need(self.created_at, "created_at")?,
                updated_at: need(self.updated_at, "updated_at")?,
            }),
            asserted_valid_to: self.asserted_valid_to,
            superseded_at: self.superseded_at,
            claim_single: need(self.claim_single, "claim_single")?,
            lex: 0.0,
            sem: None,
        })
    }

    pub(super) fn episode(self, subject_id: &str) -> sqlx::Result<EpisodeCandidate> {
        Ok(EpisodeCandidate {
            episode: std::sync::Arc::new(Episode {
                id: need(self.id, "id")?,
                subject_id: subject_id.to_string(),
                source: need(self.source, "source")?,
                kind: need(self.kind, "type")?,
                payload: need(self.payload, "payload")?,
                metadata: need(self.metadata, "metadata")?,
                provenance: need(self.provenance, "provenance")?,
                session_id: self.session_id,
                occurred_at: need(self.occurred_at, "occurred_at")?,
                created_at: need(self.created_at, "created_at")?,
            }),
            seq: need(self.seq, "seq")?,
            lex: 0.0,
            sem: None,
            focus: None,
        })
    }

    pub(super) fn snapshot(self) -> sqlx::Result<SnapshotRow> {
        meta(self.meta)
    }
}

/// A column the row's part always fills.
pub(super) fn need<T>(v: Option<T>, column: &str) -> sqlx::Result<T> {
    v.ok_or_else(|| missing(column))
}

pub(super) fn missing(column: &str) -> sqlx::Error {
    sqlx::Error::ColumnDecode {
        index: column.to_string(),
        source: "the context statement returned NULL for a column its part always fills".into(),
    }
}
