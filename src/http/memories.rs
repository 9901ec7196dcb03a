//! `GET /v1/memories/search` and `PATCH /v1/memories/{id}/labels`.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::Json;

use crate::api::extract::{JsonBody, Tenant};
use crate::api::memories::{SearchParams, SearchResults, SetLabels};
use crate::api::query::query;
use crate::api::schema::{CommonErrors, TenantHeader};
use crate::error::{ApiError, ApiResult, Envelope};
use crate::http::body::valid;
use crate::http::path::memory_id_path;
use crate::model::memory::Memory;
use crate::policy::labels::{normalise_labels, MAX_LABELS};
use crate::services::memories::{self as svc, search as run_search, KindFilter, SearchQuery};
use crate::state::AppState;

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
