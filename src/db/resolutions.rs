//! Queries on `resolutions` (one row per session) and `subject_health_cache`.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

/// A stored resolution.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ResolutionRow {
    pub id: Uuid,
    pub subject_id: String,
    pub session_id: String,
    pub status: String,
    pub resolution_summary: Option<String>,
    pub resolved_at: Option<DateTime<Utc>>,
    pub metadata: Value,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// What a POST sets.
#[derive(Debug, Clone)]
pub struct ResolutionWrite<'a> {
    pub subject_id: &'a str,
    pub session_id: &'a str,
    pub status: &'a str,
    pub summary: Option<&'a str>,
    pub metadata: Option<&'a Value>,
}

/// Creates or updates the session's resolution. A summary or metadata left out keeps the
/// stored one; `resolved_at` is set when the status becomes resolved (kept while it stays
/// resolved) and cleared otherwise.
pub async fn upsert(
    conn: &mut PgConnection,
    tenant: &str,
    id: Uuid,
    w: &ResolutionWrite<'_>,
) -> sqlx::Result<ResolutionRow> {
    sqlx::query_as!(
        ResolutionRow,
        "INSERT INTO resolutions (tenant_id, id, subject_id, session_id, status, resolution_summary, resolved_at, metadata) \
         VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $5 = 'resolved' THEN now() END, COALESCE($7, '{}'::jsonb)) \
         ON CONFLICT (tenant_id, subject_id, session_id) DO UPDATE SET \
           status = EXCLUDED.status, \
           resolution_summary = COALESCE($6, resolutions.resolution_summary), \
           resolved_at = CASE WHEN EXCLUDED.status <> 'resolved' THEN NULL \
                              WHEN resolutions.status = 'resolved' THEN resolutions.resolved_at ELSE now() END, \
           metadata = COALESCE($7, resolutions.metadata), \
           updated_at = now() \
         RETURNING id, subject_id, session_id, status, resolution_summary, resolved_at, metadata, created_at, updated_at",
        tenant,
        id,
        w.subject_id,
        w.session_id,
        w.status,
        w.summary,
        w.metadata.map(sqlx::types::Json) as _
    )
    .fetch_one(conn)
    .await
}

/// A page of the subject's resolutions, most recently updated first.
pub async fn page(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    status: Option<&str>,
    limit: i64,
    offset: i64,
) -> sqlx::Result<Vec<ResolutionRow>> {
    sqlx::query_as!(
        ResolutionRow,
        "SELECT id, subject_id, session_id, status, resolution_summary, resolved_at, metadata, created_at, updated_at \
         FROM resolutions WHERE tenant_id = $1 AND subject_id = $2 AND ($3::text IS NULL OR status = $3) \
         ORDER BY updated_at DESC, id DESC LIMIT $4 OFFSET $5",
        tenant,
        subject_id,
        status,
        limit,
        offset
    )
    .fetch_all(conn)
    .await
}

/// The last health state recorded for the subject.
pub async fn cached_health(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
) -> sqlx::Result<Option<(String, i32)>> {
    let row = sqlx::query!(
        "SELECT last_state, last_score FROM subject_health_cache WHERE tenant_id = $1 AND subject_id = $2",
        tenant,
        subject_id
    )
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|r| (r.last_state, r.last_score)))
}

/// Records the subject's current health state.
pub async fn store_health(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    state: &str,
    score: i32,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO subject_health_cache (tenant_id, subject_id, last_state, last_score) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (tenant_id, subject_id) DO UPDATE SET last_state = $3, last_score = $4, updated_at = now() \
         WHERE (subject_health_cache.last_state, subject_health_cache.last_score) IS DISTINCT FROM ($3, $4)",
        tenant,
        subject_id,
        state,
        score
    )
    .execute(conn)
    .await?;
    Ok(())
}
