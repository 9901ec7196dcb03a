//! Memories: typed facts, procedures and summaries compiled from episodes.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

/// A memory as returned on the wire.
#[derive(Debug, Clone, Serialize, sqlx::FromRow, ToSchema)]
pub struct Memory {
    pub id: Uuid,
    pub subject_id: String,
    #[schema(value_type = MemoryKind, inline)]
    pub kind: String,
    pub content: String,
    pub summary: String,
    pub confidence: f64,
    #[serde(serialize_with = "crate::model::time::serialize")]
    pub valid_from: DateTime<Utc>,
    #[serde(serialize_with = "crate::model::time::option::serialize")]
    pub valid_to: Option<DateTime<Utc>>,
    pub source_episode_ids: Vec<Uuid>,
    #[schema(value_type = Object)]
    pub metadata: Value,
    #[schema(inline)]
    pub status: MemoryStatus,
    pub sensitivity_labels: Vec<String>,
    /// Labels the suggester proposed, awaiting review (mnemo addition; ignored by the SDK).
    pub suggested_labels: Vec<String>,
    #[serde(serialize_with = "crate::model::time::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::model::time::serialize")]
    pub updated_at: DateTime<Utc>,
}

/// A memory's kind (stored as text).
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum MemoryKind {
    ProfileFact,
    EpisodeSummary,
    Procedure,
    ArtifactRef,
}

/// A memory's status: one type in rows (a `text` column), services and on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, sqlx::Type, ToSchema)]
#[serde(rename_all = "snake_case")]
#[sqlx(type_name = "text", rename_all = "snake_case")]
pub enum MemoryStatus {
    /// Current: retrieved and shown.
    Active,
    /// Replaced by a newer memory with the same claim (kept for history and as-of reads).
    Superseded,
    /// Forgotten or erased by an operator (kept as a row without effect).
    Tombstoned,
}

impl std::fmt::Display for MemoryStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl MemoryStatus {
    /// The stored and wire text.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryStatus::Active => "active",
            MemoryStatus::Superseded => "superseded",
            MemoryStatus::Tombstoned => "tombstoned",
        }
    }

    /// The status of stored text; None for text no mnemo version writes.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "active" => Some(MemoryStatus::Active),
            "superseded" => Some(MemoryStatus::Superseded),
            "tombstoned" => Some(MemoryStatus::Tombstoned),
            _ => None,
        }
    }
}
