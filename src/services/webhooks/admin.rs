//! The operator's view of the outbox: listing, counts, one event, and re-queuing a dead letter.
//! Cross-tenant by design (one receiver URL serves every tenant); reached only by admin keys.

use serde_json::{json, Map, Value};
use sqlx::PgPool;

use super::Webhooks;
use crate::db;
use crate::db::webhooks::WebhookRow;
use crate::model::time::format;

/// Event statuses, as stored and filtered on.
pub const STATUSES: [&str; 3] = ["pending", "delivered", "dead_letter"];

/// An event as the admin API shows it; `data` (the payload) only when asked for.
pub fn to_json(row: &WebhookRow, with_data: bool) -> Value {
    let ts = |t: &Option<chrono::DateTime<chrono::Utc>>| t.as_ref().map(format);
    let mut v = json!({
        "id": row.id,
        "tenant_id": row.tenant_id,
        "subject_id": row.subject_id,
        "event": row.event,
        "status": row.status,
        "attempts": row.attempts,
        "max_attempts": row.max_attempts,
        "next_attempt_at": (row.status == "pending").then(|| format(&row.next_attempt_at)),
        "last_attempt_at": ts(&row.last_attempt_at),
        "last_error": row.last_error,
        "http_status": row.http_status,
        "created_at": format(&row.created_at),
        "delivered_at": ts(&row.delivered_at),
    });
    if with_data {
        v["data"] = row.payload.clone().unwrap_or(Value::Null);
    }
    v
}

/// One page of events, newest first, and whether more follow.
pub async fn list(
    pool: &PgPool,
    status: Option<&str>,
    tenant: Option<&str>,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<Value>, bool)> {
    let mut conn = pool.acquire().await?;
    let mut rows = db::webhooks::page(&mut conn, status, tenant, limit + 1, offset).await?;
    let has_more = rows.len() as i64 > limit;
    rows.truncate(usize::try_from(limit).unwrap_or(0));
    Ok((rows.iter().map(|r| to_json(r, false)).collect(), has_more))
}

/// Counts by status, the oldest pending event's age, and the dispatcher's settings (no URL or secret).
pub async fn stats(pool: &PgPool, hooks: &Webhooks, tenant: Option<&str>) -> sqlx::Result<Value> {
    let rows = db::webhooks::stats(&mut *pool.acquire().await?, tenant).await?;
    let mut counts: Map<String, Value> = STATUSES.iter().map(|s| ((*s).to_string(), json!(0))).collect();
    let mut total = 0;
    let mut oldest_pending = None;
    for (status, n, oldest) in rows {
        total += n;
        if status == "pending" {
            oldest_pending = oldest.as_ref().map(format);
        }
        counts.insert(status, json!(n));
    }
    let events: Vec<&str> = hooks.config().map(|c| c.events.iter().map(|e| e.as_str()).collect()).unwrap_or_default();
    Ok(json!({
        "enabled": hooks.is_enabled(),
        "events": events,
        "signed": hooks.config().is_some_and(|c| c.secret.is_set()),
        "counts": counts,
        "total": total,
        "oldest_pending_at": oldest_pending,
    }))
}

/// One event with its data (null once scrubbed).
pub async fn get(pool: &PgPool, id: &str) -> sqlx::Result<Option<Value>> {
    let row = db::webhooks::get(&mut *pool.acquire().await?, id).await?;
    Ok(row.map(|r| to_json(&r, true)))
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
pub async fn retry(pool: &PgPool, hooks: &Webhooks, id: &str) -> sqlx::Result<Result<Value, RetryRefused>> {
    let mut conn = pool.acquire().await?;
    if let Some(row) = db::webhooks::retry(&mut conn, id).await? {
        hooks.wake();
        return Ok(Ok(to_json(&row, false)));
    }
    Ok(Err(match db::webhooks::get(&mut conn, id).await? {
        None => RetryRefused::NotFound,
        Some(r) if r.status != "dead_letter" => {
            RetryRefused::NotRetryable(format!("event is {}; only dead-lettered events can be retried", r.status))
        }
        Some(_) => RetryRefused::NotRetryable("the event's payload was removed; it cannot be sent again".into()),
    }))
}
