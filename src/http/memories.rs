//! `GET /v1/memories/search` and `PATCH /v1/memories/{id}/labels`.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult, Envelope};
use crate::http::extract::{JsonBody, Tenant};
use crate::http::body::{chars, list_len, no_nul, valid};
use crate::http::input::{memory_id_path, Query};
use crate::http::schema::params::SearchParams;
use crate::http::schema::{CommonErrors, TenantHeader};
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
    let mut q = Query::parse(raw.as_deref());
    let query = SearchQuery {
        subject_id: q.req_str("subject_id", 1, 256),
        q: q.opt_str("q", 4000).filter(|s| !s.is_empty()),
        kind: KindFilter::from_param(q.opt_str("kind", 64).as_deref()),
        semantic: q.bool("semantic", false),
        hybrid: q.bool("hybrid", true),
        limit: q.int("limit", 1, 500, 20),
    };
    // Accepted for SDK compatibility; mnemo has no entity lane or LLM reranker yet.
    let _ = (q.opt_str("entity_weight", 32), q.opt_str("entity_max_distance", 32), q.bool("rerank", false));
    let _ = q.int("rerank_pool", 1, 1000, 60);
    q.finish()?;
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
