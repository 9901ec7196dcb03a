//! `/admin/webhooks`: the operator's view of the webhook outbox (admin keys only; see `http::auth`).

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use crate::error::{ApiError, ApiResult};
use crate::http::input::Query;
use crate::services::webhooks::admin::{self as svc, RetryRefused};
use crate::state::AppState;

fn event_not_found() -> ApiError {
    ApiError::not_found("webhook event not found")
}

/// Events of every tenant (or `tenant_id`), newest first, without their data.
pub async fn list(State(st): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult<Json<Value>> {
    let mut q = Query::parse(raw.as_deref());
    let status = q.choice("status", &["all", "pending", "delivered", "dead_letter"], "all");
    let tenant = q.opt_str("tenant_id", 256);
    let limit = q.int("limit", 1, 200, 50);
    let offset = q.int("offset", 0, i64::from(i32::MAX), 0);
    q.finish()?;
    let status = (status != "all").then_some(status);
    let (events, has_more) = svc::list(&st.pool, status, tenant.as_deref(), limit, offset).await?;
    Ok(Json(json!({ "events": events, "has_more": has_more, "limit": limit, "offset": offset })))
}

/// Counts by status and whether webhooks are on (the URL and secret are never shown).
pub async fn stats(State(st): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult<Json<Value>> {
    let mut q = Query::parse(raw.as_deref());
    let tenant = q.opt_str("tenant_id", 256);
    q.finish()?;
    Ok(Json(svc::stats(&st.pool, &st.webhooks, tenant.as_deref()).await?))
}

/// One event with its data (null once removed).
pub async fn get(State(st): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    Ok(Json(svc::get(&st.pool, &id).await?.ok_or_else(event_not_found)?))
}

/// Queues a dead-lettered event again (fresh attempts); 409 for any other event.
pub async fn retry(State(st): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    match svc::retry(&st.pool, &st.webhooks, &id).await? {
        Ok(event) => Ok(Json(event)),
        Err(RetryRefused::NotFound) => Err(event_not_found()),
        Err(RetryRefused::NotRetryable(message)) => {
            Err(ApiError::client(StatusCode::CONFLICT, "not_retryable", message))
        }
    }
}
