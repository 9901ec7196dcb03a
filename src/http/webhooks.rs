//! `/admin/webhooks`: the operator's view of the webhook outbox (admin keys only; see `http::auth`).

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::api::query::{length, paged, query};
use crate::api::schema::CommonErrors;
use crate::error::{ApiError, ApiResult, Envelope};
use crate::services::webhooks::admin::{self as svc, EventView, RetryRefused, WebhookStats};
use crate::state::AppState;

fn event_not_found() -> ApiError {
    ApiError::not_found("webhook event not found")
}

/// One page of events.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventPage {
    pub events: Vec<EventView>,
    pub has_more: bool,
    pub limit: i64,
    pub offset: i64,
}

/// A webhook event's delivery status, or `all`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(default = "all")]
pub enum WebhookStatusFilter {
    #[default]
    All,
    Pending,
    Delivered,
    DeadLetter,
}

impl WebhookStatusFilter {
    /// The stored status it keeps, None for all.
    fn status(self) -> Option<&'static str> {
        match self {
            WebhookStatusFilter::All => None,
            WebhookStatusFilter::Pending => Some("pending"),
            WebhookStatusFilter::Delivered => Some("delivered"),
            WebhookStatusFilter::DeadLetter => Some("dead_letter"),
        }
    }
}

paged! {
    /// `GET /admin/webhooks`.
    #[derive(Debug, Deserialize, IntoParams, garde::Validate)]
    #[into_params(parameter_in = Query)]
    pub struct WebhookListParams {
        /// Status filter.
        #[serde(default)]
        #[garde(skip)]
        #[param(inline)]
        pub status: WebhookStatusFilter,
        /// Only this tenant's events.
        #[garde(custom(length(0, 256)))]
        #[param(max_length = 256)]
        pub tenant_id: Option<String>,
    }
}

/// `GET /admin/webhooks/stats`.
#[derive(Debug, Deserialize, IntoParams, garde::Validate)]
#[into_params(parameter_in = Query)]
pub struct WebhookTenant {
    /// Only this tenant's events.
    #[garde(custom(length(0, 256)))]
    #[param(max_length = 256)]
    pub tenant_id: Option<String>,
}

/// Events of every tenant (or `tenant_id`), newest first, without their data.
#[utoipa::path(get, path = "/admin/webhooks", tag = "admin",
    summary = "Webhook events of every tenant (or one), newest first, without their data (admin key)",
    params(WebhookListParams),
    responses((status = 200, description = "Page", body = EventPage), CommonErrors))]
pub async fn list(State(st): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult<Json<EventPage>> {
    let q: WebhookListParams = query(raw.as_deref())?;
    let (limit, offset) = (q.limit, q.offset);
    let (events, has_more) = svc::list(&st.pool, q.status.status(), q.tenant_id.as_deref(), limit, offset).await?;
    Ok(Json(EventPage { events, has_more, limit, offset }))
}

/// Counts by status and whether webhooks are on (the URL and secret are never shown).
#[utoipa::path(get, path = "/admin/webhooks/stats", tag = "admin",
    summary = "Webhook event counts by status and whether webhooks are on (admin key)",
    params(WebhookTenant),
    responses((status = 200, description = "Counts", body = WebhookStats), CommonErrors))]
pub async fn stats(State(st): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult<Json<WebhookStats>> {
    let q: WebhookTenant = query(raw.as_deref())?;
    Ok(Json(svc::stats(&st.pool, &st.webhooks, q.tenant_id.as_deref()).await?))
}

/// One event with its data (null once removed).
#[utoipa::path(get, path = "/admin/webhooks/{event_id}", tag = "admin",
    summary = "One webhook event with its data (null once removed) (admin key)",
    params(("event_id" = String, Path, description = "Identifier.")),
    responses((status = 200, description = "Event", body = EventView),
              (status = 404, description = "webhook event not found", body = Envelope), CommonErrors))]
pub async fn get(State(st): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<EventView>> {
    Ok(Json(svc::get(&st.pool, &id).await?.ok_or_else(event_not_found)?))
}

/// Queues a dead-lettered event again (fresh attempts); 409 for any other event.
#[utoipa::path(post, path = "/admin/webhooks/{event_id}/retry", tag = "admin",
    summary = "Queue a dead-lettered webhook event again with fresh attempts (admin key)",
    params(("event_id" = String, Path, description = "Identifier.")),
    responses((status = 200, description = "Queued", body = EventView),
              (status = 404, description = "webhook event not found", body = Envelope),
              (status = 409, description = "not dead-lettered, or its data was removed", body = Envelope),
              CommonErrors))]
pub async fn retry(State(st): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<EventView>> {
    match svc::retry(&st.pool, &st.webhooks, &id).await? {
        Ok(event) => Ok(Json(event)),
        Err(RetryRefused::NotFound) => Err(event_not_found()),
        Err(RetryRefused::NotRetryable(message)) => {
            Err(ApiError::client(StatusCode::CONFLICT, "not_retryable", message))
        }
    }
}
