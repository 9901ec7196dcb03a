//! The `webhook_events` outbox: enqueue, claim, record outcomes, erasure, retention, admin reads.
//!
//! Tenant work (enqueue, outcomes, erasure) runs in the caller's tenant transaction; the
//! dispatcher's claim and retention and the operator's cross-tenant views go through the
//! `mnemo_*webhook*` SECURITY DEFINER functions of migration 0011.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgConnection;

/// A stored event.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct WebhookRow {
    pub tenant_id: String,
    pub id: String,
    pub subject_id: Option<String>,
    pub event: String,
    pub payload: Option<Value>,
    pub status: String,
    pub attempts: i32,
    pub max_attempts: i32,
    pub next_attempt_at: DateTime<Utc>,
    pub last_attempt_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
    pub http_status: Option<i32>,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
}

const COLS: &str = "tenant_id, id, subject_id, event, payload, status, attempts, max_attempts, next_attempt_at, \
                    last_attempt_at, last_error, http_status, created_at, delivered_at";

/// Inserts a pending event (inside the transaction that makes the change it announces).
pub async fn insert(
    conn: &mut PgConnection,
    tenant: &str,
    id: &str,
    subject_id: Option<&str>,
    event: &str,
    data: &Value,
    max_attempts: i32,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO webhook_events (tenant_id, id, subject_id, event, payload, max_attempts) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(tenant)
    .bind(id)
    .bind(subject_id)
    .bind(event)
    .bind(sqlx::types::Json(data))
    .bind(max_attempts)
    .execute(conn)
    .await?;
    Ok(())
}

/// Claims up to `batch` due events of any tenant, leasing them for `lease_secs`.
pub async fn claim(conn: &mut PgConnection, batch: i32, lease_secs: f64) -> sqlx::Result<Vec<WebhookRow>> {
    sqlx::query_as(&format!("SELECT {COLS} FROM mnemo_claim_webhooks($1, $2)"))
        .bind(batch)
        .bind(lease_secs)
        .fetch_all(conn)
        .await
}

/// How an attempt ended, as stored.
#[derive(Debug, Clone)]
pub struct Outcome<'a> {
    /// `pending` (retry later), `delivered` or `dead_letter`.
    pub status: &'static str,
    /// For `pending`: seconds until the next attempt.
    pub retry_in_secs: f64,
    pub http_status: Option<i32>,
    /// Never a URL or a body.
    pub last_error: Option<&'a str>,
    /// Drop the payload (the event names an erased subject).
    pub scrub: bool,
}

/// Records an attempt's outcome; a row re-claimed meanwhile (its `attempts` moved on) or
/// deleted by an erasure is left alone. Returns whether the row was updated.
pub async fn record(
    conn: &mut PgConnection,
    tenant: &str,
    id: &str,
    attempts: i32,
    o: &Outcome<'_>,
) -> sqlx::Result<bool> {
    let r = sqlx::query(
        "UPDATE webhook_events SET status = $4, http_status = $5, last_error = $6, \
         next_attempt_at = now() + make_interval(secs => $7), \
         delivered_at = CASE WHEN $4 = 'delivered' THEN now() ELSE delivered_at END, \
         payload = CASE WHEN $8 AND $4 <> 'pending' THEN NULL ELSE payload END \
         WHERE tenant_id = $1 AND id = $2 AND attempts = $3 AND status = 'pending'",
    )
    .bind(tenant)
    .bind(id)
    .bind(attempts)
    .bind(o.status)
    .bind(o.http_status)
    .bind(o.last_error)
    .bind(o.retry_in_secs)
    .bind(o.scrub)
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// Erasure: removes the subject from the `subject_ids` of the tenant's multi-subject events
/// (single-subject events carry `subject_id` and are deleted with the subject's other rows).
pub async fn strip_subject(conn: &mut PgConnection, tenant: &str, subject_id: &str) -> sqlx::Result<u64> {
    let r = sqlx::query(
        "UPDATE webhook_events SET payload = jsonb_set(payload, '{subject_ids}', COALESCE( \
             (SELECT jsonb_agg(s) FROM jsonb_array_elements(payload->'subject_ids') s WHERE s <> to_jsonb($2::text)), \
             '[]'::jsonb)) \
         WHERE tenant_id = $1 AND subject_id IS NULL AND jsonb_typeof(payload->'subject_ids') = 'array' \
           AND payload->'subject_ids' ? $2",
    )
    .bind(tenant)
    .bind(subject_id)
    .execute(conn)
    .await?;
    Ok(r.rows_affected())
}

/// Deletes delivered and dead-lettered events of every tenant older than `hours`.
pub async fn purge(conn: &mut PgConnection, hours: i64) -> sqlx::Result<u64> {
    let n: i64 = sqlx::query_scalar("SELECT mnemo_purge_webhooks($1)")
        .bind(hours.clamp(0, i64::from(i32::MAX)) as i32)
        .fetch_one(conn)
        .await?;
    Ok(n.max(0) as u64)
}

/// One page of events (every tenant, or one), newest first.
pub async fn page(
    conn: &mut PgConnection,
    status: Option<&str>,
    tenant: Option<&str>,
    limit: i64,
    offset: i64,
) -> sqlx::Result<Vec<WebhookRow>> {
    sqlx::query_as(&format!("SELECT {COLS} FROM mnemo_webhook_page($1, $2, $3, $4)"))
        .bind(status)
        .bind(tenant)
        .bind(limit.clamp(0, i64::from(i32::MAX)) as i32)
        .bind(offset.clamp(0, i64::from(i32::MAX)) as i32)
        .fetch_all(conn)
        .await
}

/// Event counts per status, with the oldest creation time per status.
pub async fn stats(
    conn: &mut PgConnection,
    tenant: Option<&str>,
) -> sqlx::Result<Vec<(String, i64, Option<DateTime<Utc>>)>> {
    sqlx::query_as("SELECT status, events, oldest FROM mnemo_webhook_stats($1)").bind(tenant).fetch_all(conn).await
}

/// One event by id (any tenant).
pub async fn get(conn: &mut PgConnection, id: &str) -> sqlx::Result<Option<WebhookRow>> {
    sqlx::query_as(&format!("SELECT {COLS} FROM mnemo_webhook_get($1)")).bind(id).fetch_optional(conn).await
}

/// Queues a dead-lettered event again; None when no such dead-lettered event (with its payload) exists.
pub async fn retry(conn: &mut PgConnection, id: &str) -> sqlx::Result<Option<WebhookRow>> {
    sqlx::query_as(&format!("SELECT {COLS} FROM mnemo_webhook_retry($1)")).bind(id).fetch_optional(conn).await
}
