//! Memories: typed facts, procedures and summaries compiled from episodes.

use chrono::{DateTime, Utc};
use serde::Serialize;
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
    #[schema(value_type = MemoryStatus, inline)]
    pub status: String,
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

/// A memory's status (stored as text).
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum MemoryStatus {
    Active,
    Superseded,
    Tombstoned,
}
