//! Query parameters as `http::input::Query` reads them (doc-only).

use utoipa::{IntoParams, ToSchema};

/// `GET /v1/memories/search`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchParams {
    /// Subject id (1-256 chars).
    #[param(min_length = 1, max_length = 256)]
    pub subject_id: String,
    /// Query text.
    #[param(required = false, max_length = 4000)]
    pub q: String,
    /// Memory kind.
    #[param(required = false, max_length = 64)]
    pub kind: String,
    /// Semantic search.
    #[param(required = false, default = false)]
    pub semantic: bool,
    /// Blend semantic and full-text.
    #[param(required = false, default = true)]
    pub hybrid: bool,
    /// Page size.
    #[param(required = false, minimum = 1, maximum = 500, default = 20)]
    pub limit: i64,
}

/// `GET /v1/receipts`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReceiptListParams {
    /// Subject id (1-256 chars).
    #[param(min_length = 1, max_length = 256)]
    pub subject_id: String,
    /// ISO datetime.
    #[param(required = false, max_length = 64, format = DateTime)]
    pub since: String,
    /// ISO datetime.
    #[param(required = false, max_length = 64, format = DateTime)]
    pub until: String,
    /// Receipt id to continue after.
    #[param(required = false, max_length = 26)]
    pub cursor: String,
    /// Page size.
    #[param(required = false, minimum = 1, maximum = 200, default = 50)]
    pub limit: i64,
    /// Include tombstones.
    #[param(required = false, default = false)]
    pub include_tombstoned: bool,
}

/// How a receipt is replayed.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case", default = "as_of")]
pub enum ReplayMode {
    AsOf,
    Current,
}

/// `POST /v1/receipts/{id}/replay`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReplayParams {
    /// Replay mode.
    #[param(required = false, inline)]
    pub mode: ReplayMode,
}

/// Which memories a timeline shows.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case", default = "all")]
pub enum TimelineStatus {
    All,
    Active,
}

/// `GET /v1/timeline`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TimelineParams {
    /// Subject id (1-256 chars).
    #[param(min_length = 1, max_length = 256)]
    pub subject_id: String,
    /// Page size.
    #[param(required = false, minimum = 1, maximum = 200, default = 100)]
    pub limit: i64,
    /// Offset.
    #[param(required = false, minimum = 0, maximum = 2147483647, default = 0)]
    pub offset: i64,
    /// Newest page first.
    #[param(required = false, default = false)]
    pub newest_first: bool,
    /// Memory filter.
    #[param(required = false, inline)]
    pub status: TimelineStatus,
}

/// `limit` and `offset` of the routes whose pages hold at most 200 rows.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// Page size.
    #[param(required = false, minimum = 1, maximum = 200, default = 50)]
    pub limit: i64,
    /// Rows to skip.
    #[param(required = false, minimum = 0, maximum = 2147483647, default = 0)]
    pub offset: i64,
}

/// `tenant_id` of the admin routes that may act on another tenant.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TargetTenant {
    /// Tenant; absent means the caller's tenant.
    #[param(required = false, min_length = 1, max_length = 256)]
    pub tenant_id: String,
}

/// A webhook event's delivery status, or `all`.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case", default = "all")]
pub enum WebhookStatusFilter {
    All,
    Pending,
    Delivered,
    DeadLetter,
}

/// `GET /admin/webhooks`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WebhookListParams {
    /// Status filter.
    #[param(required = false, inline)]
    pub status: WebhookStatusFilter,
    /// Only this tenant's events.
    #[param(required = false, max_length = 256)]
    pub tenant_id: String,
}

/// `GET /admin/webhooks/stats`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WebhookTenant {
    /// Only this tenant's events.
    #[param(required = false, max_length = 256)]
    pub tenant_id: String,
}

/// `GET /v1/subjects/{subject_id}/sla`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SlaParams {
    /// First-response target in minutes.
    #[param(required = false, exclusive_minimum = 0, maximum = 525600, default = 5)]
    pub first_response_threshold_minutes: f64,
    /// Resolution target in hours.
    #[param(required = false, exclusive_minimum = 0, maximum = 87600, default = 24)]
    pub resolution_threshold_hours: f64,
}

/// A resolution's status.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum ResolutionStatus {
    Open,
    Resolved,
    Unresolved,
}

/// `GET /v1/resolutions` (with [`PageParams`]).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ResolutionListParams {
    /// Subject.
    #[param(min_length = 1, max_length = 256)]
    pub subject_id: String,
    /// Only this status.
    #[param(required = false, inline)]
    pub status: ResolutionStatus,
}

/// `GET /admin/memories/with-suggested-labels` (with [`TargetTenant`]).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SuggestedLabelParams {
    /// Only this subject.
    #[param(required = false, max_length = 256)]
    pub subject_id: String,
    /// Only memories with this suggested label.
    #[param(required = false, max_length = 128)]
    pub label: String,
    /// Page size.
    #[param(required = false, minimum = 1, maximum = 500, default = 50)]
    pub limit: i64,
    /// Rows to skip.
    #[param(required = false, minimum = 0, maximum = 2147483647, default = 0)]
    pub offset: i64,
}
