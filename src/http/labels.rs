//! `/admin/memories/...`: the suggested-label review queue (admin keys only; see `http::auth`).

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::api::extract::{Caller, JsonBody};
use crate::api::query::{int, length, query, target_tenant, TargetTenant, MAX_OFFSET};
use crate::api::schema::{CommonErrors, TenantHeader};
use crate::db::labels::SuggestedFilter;
use crate::error::{ApiError, ApiResult, Envelope};
use crate::http::body::valid;
use crate::http::path::memory_id_path;
use crate::input::rules::{between, chars, list_len, no_nul};
use crate::model::memory::MemoryKind;
use crate::model::time::isoformat;
use crate::policy::suggest::{CatalogueEntry, CATALOGUE};
use crate::services::labels::{self as svc, PromoteFailure};
use crate::state::AppState;

/// The review queue: one page of memories with suggestions, and every label the suggester knows.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReviewQueue {
    pub memories: Vec<SuggestedMemory>,
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
    pub catalogue: Vec<CatalogueEntry>,
}

/// A memory awaiting label review.
#[derive(Debug, Serialize, ToSchema)]
pub struct SuggestedMemory {
    #[schema(format = Uuid)]
    pub id: String,
    pub subject_id: String,
    pub tenant_id: String,
    #[schema(inline)]
    pub kind: MemoryKind,
    pub content: String,
    pub summary: String,
    pub suggested_labels: Vec<String>,
    pub sensitivity_labels: Vec<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// The labels of a memory after a promotion.
#[derive(Debug, Serialize, ToSchema)]
pub struct Promoted {
    pub memory_id: String,
    pub promoted: Vec<String>,
    pub sensitivity_labels: Vec<String>,
    pub suggested_labels: Vec<String>,
}

/// `GET /admin/memories/with-suggested-labels`.
#[derive(Debug, Deserialize, IntoParams, garde::Validate)]
#[into_params(parameter_in = Query)]
pub struct SuggestedLabelParams {
    /// Tenant; absent means the caller's tenant.
    #[garde(custom(target_tenant))]
    #[param(min_length = 1, max_length = 256)]
    pub tenant_id: Option<String>,
    /// Only this subject.
    #[garde(custom(length(0, 256)))]
    #[param(max_length = 256)]
    pub subject_id: Option<String>,
    /// Only memories with this suggested label.
    #[garde(custom(length(0, 128)))]
    #[param(max_length = 128)]
    pub label: Option<String>,
    /// Page size.
    #[serde(default = "int::<50>")]
    #[garde(custom(between(1, 500)))]
    #[param(minimum = 1, maximum = 500, default = int::<50>)]
    pub limit: i64,
    /// Rows to skip.
    #[serde(default)]
    #[garde(custom(between(0, MAX_OFFSET)))]
    #[param(minimum = 0, maximum = 2147483647, default = 0)]
    pub offset: i64,
}

/// Memories with label suggestions awaiting review, newest first, and the label catalogue.
#[utoipa::path(get, path = "/admin/memories/with-suggested-labels", tag = "admin",
    summary = "Memories with label suggestions awaiting review, and the label catalogue",
    params(TenantHeader, SuggestedLabelParams),
    responses((status = 200, description = "Review queue", body = ReviewQueue), CommonErrors))]
pub async fn list(State(st): State<AppState>, caller: Caller, RawQuery(raw): RawQuery) -> ApiResult<Json<ReviewQueue>> {
    let q: SuggestedLabelParams = query(raw.as_deref())?;
    let (limit, offset) = (q.limit, q.offset);
    let tenant = caller.target(q.tenant_id)?;
    let subject_id = q.subject_id.filter(|s| !s.is_empty());
    let label = q.label.filter(|s| !s.is_empty()).map(|l| crate::policy::labels::normalise_label(&l));
    let filter = SuggestedFilter { subject_id: subject_id.as_deref(), label: label.as_deref() };
    let page = svc::list(&st.pool, &tenant, &filter, limit, offset).await?;
    let memories = page
        .rows
        .into_iter()
        .map(|m| SuggestedMemory {
            id: m.id.to_string(),
            subject_id: m.subject_id,
            tenant_id: tenant.clone(),
            kind: m.kind,
            content: m.content,
            summary: m.summary,
            suggested_labels: m.suggested_labels,
            sensitivity_labels: m.sensitivity_labels,
            created_at: isoformat(&m.created_at),
        })
        .collect();
    Ok(Json(ReviewQueue { memories, total: page.total, limit, offset, catalogue: CATALOGUE.to_vec() }))
}

/// `POST /admin/memories/{memory_id}/promote-labels`. Unknown fields are ignored.
#[derive(Debug, Deserialize, ToSchema, garde::Validate)]
pub struct PromoteLabels {
    /// Each must be currently suggested on the memory; each is at most 128 characters.
    #[garde(custom(list_len(0, 1000)), inner(custom(chars(0, 128)), custom(no_nul)))]
    #[schema(max_items = 1000)]
    pub labels: Vec<String>,
}

/// Promotes suggested labels of one memory to its sensitivity labels.
#[utoipa::path(post, path = "/admin/memories/{memory_id}/promote-labels", tag = "admin",
    summary = "Promote suggested labels to sensitivity labels",
    params(TenantHeader, ("memory_id" = String, Path, description = "Identifier."), TargetTenant),
    request_body = PromoteLabels,
    responses((status = 200, description = "Promoted", body = Promoted),
              (status = 404, description = "memory not found", body = Envelope), CommonErrors))]
pub async fn promote(
    State(st): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<Promoted>> {
    let tenant = caller.target(query::<TargetTenant>(raw.as_deref())?.tenant_id)?;
    let memory_id = memory_id_path(&id)?;
    let labels = valid::<PromoteLabels>(body)?.labels;
    match svc::promote(&st.pool, &tenant, memory_id, &labels).await {
        Ok(p) => Ok(Json(Promoted {
            memory_id: memory_id.to_string(),
            promoted: p.promoted,
            sensitivity_labels: p.sensitivity_labels,
            suggested_labels: p.suggested_labels,
        })),
        Err(PromoteFailure::NotFound) => Err(ApiError::client(StatusCode::NOT_FOUND, "http_error", "memory not found")),
        Err(PromoteFailure::Refused(e)) => {
            Err(ApiError::client(StatusCode::UNPROCESSABLE_ENTITY, e.code(), e.to_string()))
        }
        Err(PromoteFailure::Db(e)) => Err(e.into()),
    }
}
