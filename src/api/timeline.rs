//! `GET /v1/timeline`: the parameters and the page (REST and MCP).

use crate::api::query::{int, length, MAX_OFFSET};
use crate::input::rules::between;
use crate::model::episode::Episode;
use crate::model::memory::Memory;
use crate::services::timeline::Page;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

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
