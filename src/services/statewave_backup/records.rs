//! The records mnemo writes in Statewave's backup document, fields in Statewave's order
//! (serialised from structs: JSON maps here sort their keys).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use super::document::{checksum_of, status_to_statewave, FORMAT_VERSION};
use crate::model::memory::MemoryKind;
use crate::model::time::isoformat;

/// Timestamps as Statewave writes them (`isoformat()` of a UTC value).
fn ts(t: &DateTime<Utc>) -> String {
    isoformat(t)
}

// Deserialize is for tests that read back what was written.
/// An episode record, fields in Statewave's order (mnemo's `session_id` has no field there).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct EpisodeRecord {
    pub id: String,
    pub subject_id: String,
    pub tenant_id: String,
    pub source: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[schema(value_type = Object)]
    pub payload: Value,
    #[schema(value_type = Object)]
    pub metadata: Value,
    #[schema(value_type = Object)]
    pub provenance: Value,
    pub created_at: String,
    pub last_compiled_at: Option<String>,
}

impl EpisodeRecord {
    /// The record of a stored episode. Its `created_at` is mnemo's `occurred_at`: the time
    /// Statewave orders and anchors by (equal to the ingest time unless the caller set it).
    pub fn of(e: crate::model::episode::Episode, tenant_id: &str, last_compiled_at: Option<&DateTime<Utc>>) -> Self {
        EpisodeRecord {
            id: e.id.to_string(),
            subject_id: e.subject_id,
            tenant_id: tenant_id.to_string(),
            source: e.source,
            kind: e.kind,
            payload: e.payload,
            metadata: e.metadata,
            provenance: e.provenance,
            created_at: ts(&e.occurred_at),
            last_compiled_at: last_compiled_at.map(ts),
        }
    }
}

/// A memory record, fields in Statewave's order.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct MemoryRecord {
    pub id: String,
    pub subject_id: String,
    pub tenant_id: String,
    #[schema(inline)]
    pub kind: MemoryKind,
    pub content: String,
    pub summary: String,
    pub confidence: f64,
    pub valid_from: String,
    pub valid_to: Option<String>,
    pub source_episode_ids: Vec<String>,
    #[schema(value_type = Object)]
    pub metadata: Value,
    pub status: String,
    /// Always null: mnemo's vectors come from another model, with another length than 1536.
    pub embedding: Option<Vec<f64>>,
    pub created_at: String,
    pub updated_at: String,
}

impl MemoryRecord {
    /// The record of a stored memory.
    pub fn of(m: crate::model::memory::Memory, tenant_id: &str) -> Self {
        MemoryRecord {
            id: m.id.to_string(),
            tenant_id: tenant_id.to_string(),
            status: status_to_statewave(m.status.as_str()).to_string(),
            valid_from: ts(&m.valid_from),
            valid_to: m.valid_to.as_ref().map(ts),
            source_episode_ids: m.source_episode_ids.iter().map(Uuid::to_string).collect(),
            embedding: None,
            created_at: ts(&m.created_at),
            updated_at: ts(&m.updated_at),
            subject_id: m.subject_id,
            kind: m.kind,
            content: m.content,
            summary: m.summary,
            confidence: m.confidence,
            metadata: m.metadata,
        }
    }
}

/// Record counts.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Counts {
    pub episodes: usize,
    pub memories: usize,
}

// What the streamed export (`super::stream`) writes, byte for byte; built whole only in tests
// and for the OpenAPI schema.
/// The whole document, members in Statewave's order, checksum last.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = BackupDocument)]
pub struct ExportDocument {
    /// Always "1.0".
    pub format_version: &'static str,
    pub exported_at: String,
    pub subject_id: String,
    pub tenant_id: String,
    pub counts: Counts,
    pub episodes: Vec<EpisodeRecord>,
    pub memories: Vec<MemoryRecord>,
    pub checksum: String,
}

impl ExportDocument {
    /// Assembles a document and computes its checksum over the records as they serialise.
    pub fn new(
        subject_id: &str,
        tenant_id: &str,
        exported_at: &DateTime<Utc>,
        episodes: Vec<EpisodeRecord>,
        memories: Vec<MemoryRecord>,
    ) -> serde_json::Result<Self> {
        let sum = checksum_of(&episodes, &memories)?;
        Ok(ExportDocument {
            format_version: FORMAT_VERSION,
            exported_at: ts(exported_at),
            subject_id: subject_id.to_string(),
            tenant_id: tenant_id.to_string(),
            counts: Counts { episodes: episodes.len(), memories: memories.len() },
            episodes,
            memories,
            checksum: sum,
        })
    }
}
