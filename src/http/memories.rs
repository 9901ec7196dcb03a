//! `GET /v1/memories/search` and `PATCH /v1/memories/{id}/labels`.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ApiResult, Envelope};
use crate::http::body::valid;
use crate::http::extract::{JsonBody, Tenant};
use crate::http::path::memory_id_path;
use crate::http::query::{int, length, query, yes};
use crate::http::schema::{CommonErrors, TenantHeader};
use crate::input::rules::{between, chars, list_len, no_nul};
use crate::model::memory::Memory;
use crate::policy::labels::{normalise_labels, MAX_LABELS};
use crate::services::memories::{self as svc, search as run_search, KindFilter, SearchMode, SearchQuery};
use crate::state::AppState;

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
    #[garde(custom(length(0, 4000)))]
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

/// Searches a subject's active memories.
#[utoipa::path(get, path = "/v1/memories/search", tag = "memories",
    summary = "Search active memories (text, semantic, hybrid)",
    params(TenantHeader, SearchParams),
    responses((status = 200, description = "Results", body = SearchResults), CommonErrors))]
pub async fn search(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<SearchResults>> {
    let q: SearchParams = query(raw.as_deref())?;
    let query = SearchQuery {
        subject_id: q.subject_id,
        q: q.q.filter(|s| !s.is_empty()),
        kind: KindFilter::from_param(q.kind.as_deref()),
        semantic: q.semantic,
        hybrid: q.hybrid,
        limit: q.limit,
    };
    let (memories, mode) = run_search(st.read_pool().await?, &st.embedder, &tenant, &query).await?;
    Ok(Json(SearchResults { memories, search_mode: mode }))
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

/// Replaces a memory's sensitivity labels (normalised and sorted).
#[utoipa::path(patch, path = "/v1/memories/{id}/labels", tag = "memories",
    summary = "Replace a memory's sensitivity labels",
    params(TenantHeader, ("id" = String, Path, description = "Identifier.")), request_body = SetLabels,
    responses((status = 200, description = "Memory", body = Memory),
              (status = 400, description = "More than 32 labels", body = Envelope),
              (status = 404, description = "memory not found", body = Envelope), CommonErrors))]
pub async fn set_labels(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<Memory>> {
    let id = memory_id_path(&id)?;
    let labels = valid::<SetLabels>(body)?.sensitivity_labels;
    let labels = normalise_labels(labels)
        .map_err(|_| ApiError::bad_request("too_many_labels", format!("at most {MAX_LABELS} labels per memory")))?;
    match svc::set_labels(&st.pool, &tenant, id, &labels).await? {
        Some(m) => Ok(Json(m)),
        None => Err(ApiError::client(StatusCode::NOT_FOUND, "http_error", "memory not found")),
    }
}
