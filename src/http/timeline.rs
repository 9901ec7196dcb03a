//! `GET /v1/timeline`: a subject's episodes and memories, paged.

use axum::extract::{RawQuery, State};
use axum::Json;

use crate::api::extract::Tenant;
use crate::api::query::query;
use crate::api::schema::{CommonErrors, TenantHeader};
use crate::api::timeline::{Timeline, TimelineParams, TimelineStatus};
use crate::error::ApiResult;
use crate::services::timeline::{self, PageQuery};
use crate::state::AppState;

/// Returns one page of each collection with `*_has_more` flags.
#[utoipa::path(get, path = "/v1/timeline", tag = "subjects", summary = "A subject's episodes and memories, paged",
    params(TenantHeader, TimelineParams),
    responses((status = 200, description = "Timeline", body = Timeline), CommonErrors))]
pub async fn get(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Timeline>> {
    let q: TimelineParams = query(raw.as_deref())?;
    let query = PageQuery {
        subject_id: q.subject_id,
        limit: q.limit,
        offset: q.offset,
        newest_first: q.newest_first,
        active_only: q.status == TimelineStatus::Active,
        filter: Default::default(),
    };
    let page = timeline::page(st.read_pool().await?, &tenant, &query).await?;
    Ok(Json(Timeline::new(query.subject_id, page)))
}
