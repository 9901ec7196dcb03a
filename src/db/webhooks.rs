//! The `webhook_events` outbox: enqueue, claim, record outcomes, erasure, retention, admin reads.
//!
//! Tenant work (enqueue, outcomes, erasure) runs in the caller's tenant transaction; the
//! dispatcher's claim and retention and the operator's cross-tenant views go through the
//! `mnemo_*webhook*` SECURITY DEFINER functions (sql/functions).

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

/// The rows of the `mnemo_*webhook*` functions (`SETOF webhook_events`): a function's columns
/// carry no NOT NULL, so each query restates the table's.
macro_rules! webhook_rows {
    ($call:literal $(, $arg:expr)*) => {
        sqlx::query_as!(
            WebhookRow,
            r#"SELECT tenant_id AS "tenant_id!", id AS "id!", subject_id, event AS "event!", payload,
               status AS "status!", attempts AS "attempts!", max_attempts AS "max_attempts!",
               next_attempt_at AS "next_attempt_at!", last_attempt_at, last_error, http_status,
               created_at AS "created_at!", delivered_at FROM "# + $call
            $(, $arg)*
        )
    };
}

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
    sqlx::query!(
        "INSERT INTO webhook_events (tenant_id, id, subject_id, event, payload, max_attempts) \
         VALUES ($1, $2, $3, $4, $5, $6)",
        tenant,
        id,
        subject_id,
        event,
        sqlx::types::Json(data) as _,
        max_attempts
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Claims up to `batch` due events of any tenant, leasing them for `lease_secs`.
pub async fn claim(conn: &mut PgConnection, batch: i32, lease_secs: f64) -> sqlx::Result<Vec<WebhookRow>> {
    webhook_rows!("mnemo_claim_webhooks($1, $2)", batch, lease_secs).fetch_all(conn).await
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
    let r = sqlx::query!(
        "UPDATE webhook_events SET status = $4, http_status = $5, last_error = $6, \
         next_attempt_at = now() + make_interval(secs => $7), \
         delivered_at = CASE WHEN $4 = 'delivered' THEN now() ELSE delivered_at END, \
         payload = CASE WHEN $8 AND $4 <> 'pending' THEN NULL ELSE payload END \
         WHERE tenant_id = $1 AND id = $2 AND attempts = $3 AND status = 'pending'",
        tenant,
        id,
        attempts,
        o.status,
        o.http_status,
        o.last_error,
        o.retry_in_secs,
        o.scrub
    )
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// Erasure: removes the subject from the `subject_ids` of the tenant's multi-subject events
/// (single-subject events carry `subject_id` and are deleted with the subject's other rows).
pub async fn strip_subject(conn: &mut PgConnection, tenant: &str, subject_id: &str) -> sqlx::Result<u64> {
    let r = sqlx::query!(
        "UPDATE webhook_events SET payload = jsonb_set(payload, '{subject_ids}', COALESCE( \
             (SELECT jsonb_agg(s) FROM jsonb_array_elements(payload->'subject_ids') s WHERE s <> to_jsonb($2::text)), \
             '[]'::jsonb)) \
         WHERE tenant_id = $1 AND subject_id IS NULL AND jsonb_typeof(payload->'subject_ids') = 'array' \
           AND payload->'subject_ids' ? $2",
        tenant,
        subject_id
    )
    .execute(conn)
    .await?;
    Ok(r.rows_affected())
}

/// Deletes delivered and dead-lettered events of every tenant older than `hours`.
pub async fn purge(conn: &mut PgConnection, hours: i64) -> sqlx::Result<u64> {
    let n: i64 =
        sqlx::query_scalar!(r#"SELECT mnemo_purge_webhooks($1) AS "n!""#, hours.clamp(0, i64::from(i32::MAX)) as i32)
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
    webhook_rows!(
        "mnemo_webhook_page($1, $2, $3, $4)",
        status,
        tenant,
        limit.clamp(0, i64::from(i32::MAX)) as i32,
        offset.clamp(0, i64::from(i32::MAX)) as i32
    )
    .fetch_all(conn)
    .await
}

/// Event counts per status, with the oldest creation time per status.
pub async fn stats(
    conn: &mut PgConnection,
    tenant: Option<&str>,
) -> sqlx::Result<Vec<(String, i64, Option<DateTime<Utc>>)>> {
    let rows =
        sqlx::query!(r#"SELECT status AS "status!", events AS "events!", oldest FROM mnemo_webhook_stats($1)"#, tenant)
            .fetch_all(conn)
            .await?;
    Ok(rows.into_iter().map(|r| (r.status, r.events, r.oldest)).collect())
}

/// One event by id (any tenant).
pub async fn get(conn: &mut PgConnection, id: &str) -> sqlx::Result<Option<WebhookRow>> {
    webhook_rows!("mnemo_webhook_get($1)", id).fetch_optional(conn).await
}

/// Queues a dead-lettered event again; None when no such dead-lettered event (with its payload) exists.
pub async fn retry(conn: &mut PgConnection, id: &str) -> sqlx::Result<Option<WebhookRow>> {
    webhook_rows!("mnemo_webhook_retry($1)", id).fetch_optional(conn).await
}
