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
    #[schema(inline)]
    pub kind: MemoryKind,
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

/// A memory's kind: one type in rows (a `text` column), services and on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, sqlx::Type, ToSchema)]
#[serde(rename_all = "snake_case")]
#[sqlx(type_name = "text", rename_all = "snake_case")]
pub enum MemoryKind {
    /// One fact about the subject, usually with a claim (`employment.current_employer = globex`).
    ProfileFact,
    /// What one episode was about.
    EpisodeSummary,
    /// How something is done (steps, a routine).
    Procedure,
    /// A pointer to an artifact (only imports bring these; context never shows them).
    ArtifactRef,
}

impl std::fmt::Display for MemoryKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl MemoryKind {
    /// Every kind, in the order the API documents them.
    pub const ALL: [MemoryKind; 4] =
        [MemoryKind::ProfileFact, MemoryKind::EpisodeSummary, MemoryKind::Procedure, MemoryKind::ArtifactRef];

    /// The stored and wire text.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::ProfileFact => "profile_fact",
            MemoryKind::EpisodeSummary => "episode_summary",
            MemoryKind::Procedure => "procedure",
            MemoryKind::ArtifactRef => "artifact_ref",
        }
    }

    /// The kind of stored or wire text; None for text that names no kind.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "profile_fact" => Some(MemoryKind::ProfileFact),
            "episode_summary" => Some(MemoryKind::EpisodeSummary),
            "procedure" => Some(MemoryKind::Procedure),
            "artifact_ref" => Some(MemoryKind::ArtifactRef),
            _ => None,
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_have_one_spelling_in_text_and_json() {
        for k in MemoryKind::ALL {
            assert_eq!(MemoryKind::parse(k.as_str()), Some(k));
            assert_eq!(serde_json::json!(k), k.as_str());
            assert_eq!(serde_json::from_value::<MemoryKind>(serde_json::json!(k.to_string())).ok(), Some(k));
        }
        assert_eq!(MemoryKind::parse("fact"), None);
        assert_eq!(MemoryKind::parse("Profile_Fact"), None);
    }
}
