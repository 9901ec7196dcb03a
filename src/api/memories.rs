//! `GET /v1/memories/search` and labels: parameters and results (REST and MCP).

use crate::api::query::{int, length, yes};
use crate::input::rules::{between, chars, list_len, no_nul};
use crate::model::memory::Memory;
use crate::services::memories::SearchMode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Search results and the mode that produced them.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResults {
    pub memories: Vec<Memory>,
    #[schema(inline)]
    pub search_mode: SearchMode,
}

/// `GET /v1/memories/search`.
#[derive(Debug, Deserialize, IntoParams, garde::Validate)]
#[into_params(parameter_in = Query)]
pub struct SearchParams {
    /// Subject id (1-256 chars).
    #[garde(custom(length(1, 256)))]
    #[param(min_length = 1, max_length = 256)]
    pub subject_id: String,
    /// Query text.
    #[garde(custom(length(0, crate::model::limits::MAX_QUERY_CHARS)))]
    #[param(max_length = 4000)]
    pub q: Option<String>,
    /// Memory kind.
    #[garde(custom(length(0, 64)))]
    #[param(max_length = 64)]
    pub kind: Option<String>,
    /// Semantic search.
    #[serde(default)]
    #[garde(skip)]
    #[param(default = false)]
    pub semantic: bool,
    /// Blend semantic and full-text.
    #[serde(default = "yes")]
    #[garde(skip)]
    #[param(default = true)]
    pub hybrid: bool,
    /// Page size.
    #[serde(default = "int::<20>")]
    #[garde(custom(between(1, 500)))]
    #[param(minimum = 1, maximum = 500, default = int::<20>)]
    pub limit: i64,
    // Accepted for SDK compatibility and checked, but ignored (no entity lane or LLM reranker
    // yet), so left out of the document.
    #[garde(custom(length(0, 32)))]
    #[param(ignore)]
    pub entity_weight: Option<String>,
    #[garde(custom(length(0, 32)))]
    #[param(ignore)]
    pub entity_max_distance: Option<String>,
    #[serde(default)]
    #[garde(skip)]
    #[param(ignore)]
    pub rerank: bool,
    #[serde(default = "int::<60>")]
    #[garde(custom(between(1, 1000)))]
    #[param(ignore)]
    pub rerank_pool: i64,
}

/// `PATCH /v1/memories/{id}/labels`. Unknown fields are ignored.
#[derive(Debug, Deserialize, ToSchema, garde::Validate)]
pub struct SetLabels {
    /// Normalised and de-duplicated; more than 32 after that is a 400. Each label is at most
    /// 128 characters.
    #[garde(custom(list_len(0, 1000)), inner(custom(chars(0, 128)), custom(no_nul)))]
    #[schema(max_items = 1000)]
    pub sensitivity_labels: Vec<String>,
}
