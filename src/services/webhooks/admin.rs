//! The operator's view of the outbox: listing, counts, one event, and re-queuing a dead letter.
//! Cross-tenant by design (one receiver URL serves every tenant); reached only by admin keys.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use sqlx::PgPool;
use utoipa::ToSchema;

use super::Webhooks;
use crate::db;
use crate::db::webhooks::WebhookRow;
use crate::model::time::format;

/// Event statuses, as stored and filtered on.
pub const STATUSES: [&str; 3] = ["pending", "delivered", "dead_letter"];

/// An event as the admin API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = WebhookEvent)]
pub struct EventView {
    pub id: String,
    pub tenant_id: String,
    pub subject_id: Option<String>,
    pub event: String,
    #[schema(value_type = DeliveryStatus, inline)]
    pub status: String,
    pub attempts: i32,
    pub max_attempts: i32,
    /// Set while the event is pending.
    #[schema(format = DateTime)]
    pub next_attempt_at: Option<String>,
    #[schema(format = DateTime)]
    pub last_attempt_at: Option<String>,
    pub last_error: Option<String>,
    pub http_status: Option<i32>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub delivered_at: Option<String>,
    /// The payload: only on single-event reads, and null once removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub data: Option<Value>,
}

/// A webhook event's delivery status (stored as text).
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum DeliveryStatus {
    Pending,
    Delivered,
    DeadLetter,
}

impl EventView {
    /// The view of a row; `with_data` adds the payload (null once scrubbed).
    pub fn of(row: &WebhookRow, with_data: bool) -> Self {
        let ts = |t: &Option<chrono::DateTime<chrono::Utc>>| t.as_ref().map(format);
        EventView {
            id: row.id.clone(),
            tenant_id: row.tenant_id.clone(),
            subject_id: row.subject_id.clone(),
            event: row.event.clone(),
            status: row.status.clone(),
            attempts: row.attempts,
            max_attempts: row.max_attempts,
            next_attempt_at: (row.status == "pending").then(|| format(&row.next_attempt_at)),
            last_attempt_at: ts(&row.last_attempt_at),
            last_error: row.last_error.clone(),
            http_status: row.http_status,
            created_at: format(&row.created_at),
            delivered_at: ts(&row.delivered_at),
            data: with_data.then(|| row.payload.clone().unwrap_or(Value::Null)),
        }
    }
}

/// One page of events, newest first, and whether more follow.
pub async fn list(
    pool: &PgPool,
    status: Option<&str>,
    tenant: Option<&str>,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<EventView>, bool)> {
    let mut conn = pool.acquire().await?;
    let mut rows = db::webhooks::page(&mut conn, status, tenant, limit + 1, offset).await?;
    let has_more = rows.len() as i64 > limit;
    rows.truncate(usize::try_from(limit).unwrap_or(0));
    Ok((rows.iter().map(|r| EventView::of(r, false)).collect(), has_more))
}

/// Outbox counts and the dispatcher's settings (never the URL or the secret).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebhookStats {
    pub enabled: bool,
    /// Events the dispatcher sends.
    pub events: Vec<String>,
    /// Whether deliveries carry a signature.
    pub signed: bool,
    /// Events per status (every status, zero included).
    pub counts: BTreeMap<String, i64>,
    pub total: i64,
    #[schema(format = DateTime)]
    pub oldest_pending_at: Option<String>,
}

/// Counts by status, the oldest pending event's age, and the dispatcher's settings (no URL or secret).
pub async fn stats(pool: &PgPool, hooks: &Webhooks, tenant: Option<&str>) -> sqlx::Result<WebhookStats> {
    let rows = db::webhooks::stats(&mut *pool.acquire().await?, tenant).await?;
    let mut counts: BTreeMap<String, i64> = STATUSES.iter().map(|s| ((*s).to_string(), 0)).collect();
    let mut total = 0;
    let mut oldest_pending = None;
    for (status, n, oldest) in rows {
        total += n;
        if status == "pending" {
            oldest_pending = oldest.as_ref().map(format);
        }
        counts.insert(status, n);
    }
    let events = hooks.config().map(|c| c.events.iter().map(|e| e.as_str().to_string()).collect()).unwrap_or_default();
    Ok(WebhookStats {
        enabled: hooks.is_enabled(),
        events,
        signed: hooks.config().is_some_and(|c| c.secret.is_set()),
        counts,
        total,
        oldest_pending_at: oldest_pending,
    })
}

/// One event with its data (null once scrubbed).
pub async fn get(pool: &PgPool, id: &str) -> sqlx::Result<Option<EventView>> {
    let row = db::webhooks::get(&mut *pool.acquire().await?, id).await?;
    Ok(row.map(|r| EventView::of(&r, true)))
}

/// Why a retry was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryRefused {
    /// No event with this id.
    NotFound,
    /// The event is not dead-lettered, or its payload is gone.
    NotRetryable(String),
}

/// Queues a dead-lettered event again with fresh attempts.
pub async fn retry(pool: &PgPool, hooks: &Webhooks, id: &str) -> sqlx::Result<Result<EventView, RetryRefused>> {
    let mut conn = pool.acquire().await?;
    if let Some(row) = db::webhooks::retry(&mut conn, id).await? {
        hooks.wake();
        return Ok(Ok(EventView::of(&row, false)));
    }
    Ok(Err(match db::webhooks::get(&mut conn, id).await? {
        None => RetryRefused::NotFound,
        Some(r) if r.status != "dead_letter" => {
            RetryRefused::NotRetryable(format!("event is {}; only dead-lettered events can be retried", r.status))
        }
        Some(_) => RetryRefused::NotRetryable("the event's payload was removed; it cannot be sent again".into()),
    }))
}
