//! `GET /v1/timeline`: a subject's episodes and memories, paged.

use axum::extract::{RawQuery, State};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiResult;
use crate::http::extract::Tenant;
use crate::http::query::{int, length, query, MAX_OFFSET};
use crate::http::schema::{CommonErrors, TenantHeader};
use crate::input::rules::between;
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

/// `GET /v1/timeline`.
#[derive(Debug, Deserialize, IntoParams, garde::Validate)]
#[into_params(parameter_in = Query)]
pub struct TimelineParams {
    /// Subject id (1-256 chars).
    #[garde(custom(length(1, 256)))]
    #[param(min_length = 1, max_length = 256)]
    pub subject_id: String,
    /// Page size.
    #[serde(default = "int::<100>")]
    #[garde(custom(between(1, 200)))]
    #[param(minimum = 1, maximum = 200, default = int::<100>)]
    pub limit: i64,
    /// Offset.
    #[serde(default)]
    #[garde(custom(between(0, MAX_OFFSET)))]
    #[param(minimum = 0, maximum = 2147483647, default = 0)]
    pub offset: i64,
    /// Newest page first.
    #[serde(default)]
    #[garde(skip)]
    #[param(default = false)]
    pub newest_first: bool,
    /// Memory filter.
    #[serde(default)]
    #[garde(skip)]
    #[param(inline)]
    pub status: TimelineStatus,
}

/// Which memories a timeline shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(default = "all")]
pub enum TimelineStatus {
    #[default]
    All,
    Active,
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
