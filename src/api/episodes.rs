//! `POST /v1/episodes` (single and batch): request and response bodies (REST and MCP).

use crate::input::rules::{chars, datetime, list_len, no_nul};
use crate::model::episode::{Episode, MAX_IDEMPOTENCY_KEY};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// Maximum episodes in one batch (`EpisodeBatchRequest::episodes`).
pub const MAX_BATCH: usize = 100;

/// One episode (`POST /v1/episodes`, and each item of a batch). Unknown fields are ignored;
/// optional fields may be `null`, which is the same as absent.
#[derive(Debug, Deserialize, ToSchema, garde::Validate)]
pub struct CreateEpisode {
    #[garde(custom(chars(1, 256)), custom(no_nul))]
    #[schema(min_length = 1, max_length = 256)]
    pub subject_id: String,
    #[garde(custom(chars(1, 256)), custom(no_nul))]
    #[schema(min_length = 1, max_length = 256)]
    pub source: String,
    // a raw identifier, so limit errors name the wire field
    #[garde(custom(chars(1, 128)), custom(no_nul))]
    #[schema(min_length = 1, max_length = 128)]
    pub r#type: String,
    #[garde(custom(no_nul))]
    #[schema(value_type = Object)]
    pub payload: Map<String, Value>,
    #[serde(default)]
    #[garde(custom(no_nul))]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default)]
    #[garde(custom(no_nul))]
    #[schema(value_type = Option<Object>)]
    pub provenance: Option<Map<String, Value>>,
    #[serde(default)]
    #[garde(custom(chars(0, 256)), custom(no_nul))]
    #[schema(max_length = 256)]
    pub session_id: Option<String>,
    /// When it happened (ISO-8601; without an offset, UTC); default now.
    #[serde(default, deserialize_with = "datetime")]
    #[garde(skip)]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub occurred_at: Option<DateTime<Utc>>,
    /// Replays with the same key return the stored episode (an empty key is no key).
    #[serde(default)]
    #[garde(custom(chars(0, MAX_IDEMPOTENCY_KEY)), custom(no_nul))]
    #[schema(max_length = 512)]
    pub idempotency_key: Option<String>,
}

/// `POST /v1/episodes/batch`.
#[derive(Debug, Deserialize, ToSchema, garde::Validate)]
pub struct EpisodeBatchRequest {
    #[garde(custom(list_len(1, MAX_BATCH)), dive)]
    #[schema(min_items = 1, max_items = 100)]
    pub episodes: Vec<CreateEpisode>,
}

/// The episodes a batch recorded.
#[derive(Debug, Serialize, ToSchema)]
pub struct EpisodeBatch {
    pub episodes_created: usize,
    pub episodes: Vec<Episode>,
}
