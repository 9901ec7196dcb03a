//! `GET /v1/timeline`: a subject's episodes and memories, paged.

use axum::extract::{RawQuery, State};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::ApiResult;
use crate::http::extract::Tenant;
use crate::http::input::Query;
use crate::http::schema::params::TimelineParams;
use crate::http::schema::{CommonErrors, TenantHeader};
use crate::model::episode::Episode;
use crate::model::memory::Memory;
use crate::services::timeline::{self, Page, PageQuery};
use crate::state::AppState;

/// One page of a subject's episodes and memories.
#[derive(Debug, Serialize, ToSchema)]
pub struct Timeline {
    pub subject_id: String,
    pub episodes: Vec<Episode>,
    pub memories: Vec<Memory>,
    pub episodes_has_more: bool,
    pub memories_has_more: bool,
}

impl Timeline {
    /// The wire shape of a page.
    pub fn new(subject_id: String, page: Page) -> Self {
        let Page { episodes, episodes_has_more, memories, memories_has_more } = page;
        Timeline { subject_id, episodes, memories, episodes_has_more, memories_has_more }
    }
}

/// Returns one page of each collection with `*_has_more` flags.
#[utoipa::path(get, path = "/v1/timeline", tag = "subjects", summary = "A subject's episodes and memories, paged",
    params(TenantHeader, TimelineParams),
    responses((status = 200, description = "Timeline", body = Timeline), CommonErrors))]
pub async fn get(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Timeline>> {
    let mut q = Query::parse(raw.as_deref());
    let subject_id = q.req_str("subject_id", 1, 256);
    let limit = q.int("limit", 1, 200, 100);
    let offset = q.int("offset", 0, i64::from(i32::MAX), 0);
    let newest_first = q.bool("newest_first", false);
    let status = q.choice("status", &["all", "active"], "all");
    q.finish()?;
    let query = PageQuery {
        subject_id,
        limit,
        offset,
        newest_first,
        active_only: status == "active",
        filter: Default::default(),
    };
    let page = timeline::page(st.read_pool().await?, &tenant, &query).await?;
    Ok(Json(Timeline::new(query.subject_id, page)))
}
