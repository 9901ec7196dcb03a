//! The `compile_jobs` queue: submit, claim with SKIP LOCKED, heartbeat, finish, retention.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

/// A compile job row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct JobRow {
    pub tenant_id: String,
    pub subject_id: String,
    pub id: String,
    pub status: String,
    pub memories_created: i32,
    pub error: Option<String>,
    pub attempts: i32,
    pub created_at: DateTime<Utc>,
    pub heartbeat_at: Option<DateTime<Utc>>,
    /// Tokens the LLM compiler sent to and received from its model for this job.
    pub llm_tokens_in: i64,
    pub llm_tokens_out: i64,
    /// Episodes the job has compiled so far.
    pub episodes_done: i64,
    /// `episodes_done` plus what was pending after its latest slice (None before the first).
    pub episodes_total: Option<i64>,
}

/// Serialises job submission for one subject (a short lock, separate from the compile lock).
pub async fn lock_submit(conn: &mut PgConnection, tenant: &str, subject_id: &str) -> sqlx::Result<()> {
    sqlx::query!("SELECT pg_advisory_xact_lock(hashtextextended($1 || chr(31) || $2, 8))", tenant, subject_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Pending or running jobs of a subject, newest first.
pub async fn open_jobs(conn: &mut PgConnection, tenant: &str, subject_id: &str) -> sqlx::Result<Vec<JobRow>> {
    sqlx::query_as!(
        JobRow,
        "SELECT tenant_id, subject_id, id, status, memories_created, error, attempts, created_at, heartbeat_at, \
         llm_tokens_in, llm_tokens_out, episodes_done, episodes_total FROM compile_jobs WHERE tenant_id = $1 AND subject_id = $2 \
         AND status IN ('pending', 'running') ORDER BY created_at DESC",
        tenant,
        subject_id
    )
    .fetch_all(conn)
    .await
}

/// Creates a pending job.
pub async fn insert(conn: &mut PgConnection, tenant: &str, subject_id: &str, id: &str) -> sqlx::Result<JobRow> {
    sqlx::query_as!(
        JobRow,
        "INSERT INTO compile_jobs (tenant_id, subject_id, id, status) VALUES ($1, $2, $3, 'pending') \
         RETURNING tenant_id, subject_id, id, status, memories_created, error, attempts, created_at, heartbeat_at, \
         llm_tokens_in, llm_tokens_out, episodes_done, episodes_total",
        tenant,
        subject_id,
        id
    )
    .fetch_one(conn)
    .await
}

/// Marks a non-terminal job failed (guarded, so a finished job is never rewritten).
pub async fn fail(conn: &mut PgConnection, tenant: &str, id: &str, error: &str) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE compile_jobs SET status = 'failed', error = $3, completed_at = now() \
         WHERE tenant_id = $1 AND id = $2 AND status IN ('pending', 'running')",
        tenant,
        id,
        error
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Claims the oldest pending job of any tenant, or a running one whose heartbeat is older than
/// `stale_secs` (its worker died); other workers skip the locked row. Cross-tenant, so it goes
/// through the `mnemo_claim_job` function rather than the tenant-confined tables.
pub async fn claim_next(conn: &mut PgConnection, stale_secs: i64) -> sqlx::Result<Option<JobRow>> {
    // A set-returning function's columns carry no NOT NULL: the row type's constraints are restated.
    sqlx::query_as!(
        JobRow,
        r#"SELECT tenant_id AS "tenant_id!", subject_id AS "subject_id!", id AS "id!", status AS "status!",
           memories_created AS "memories_created!", error, attempts AS "attempts!", created_at AS "created_at!",
           heartbeat_at, llm_tokens_in AS "llm_tokens_in!", llm_tokens_out AS "llm_tokens_out!",
           episodes_done AS "episodes_done!", episodes_total
           FROM mnemo_claim_job($1)"#,
        stale_secs as f64
    )
    .fetch_optional(conn)
    .await
}

/// A running job's progress: memories made, episodes compiled, and episodes still pending.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub memories_created: i32,
    pub episodes_done: i64,
    pub episodes_pending: i64,
}

/// Records progress and proves the worker alive.
pub async fn heartbeat(conn: &mut PgConnection, tenant: &str, id: &str, p: Progress) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE compile_jobs SET heartbeat_at = now(), memories_created = $3, episodes_done = $4, \
         episodes_total = $4::bigint + $5::bigint WHERE tenant_id = $1 AND id = $2 AND status = 'running'",
        tenant,
        id,
        p.memories_created,
        p.episodes_done,
        p.episodes_pending
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Adds one batch's LLM token counts to a running job.
pub async fn add_tokens(
    conn: &mut PgConnection,
    tenant: &str,
    id: &str,
    tokens_in: u64,
    tokens_out: u64,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE compile_jobs SET llm_tokens_in = llm_tokens_in + $3, llm_tokens_out = llm_tokens_out + $4 \
         WHERE tenant_id = $1 AND id = $2 AND status = 'running'",
        tenant,
        id,
        i64::try_from(tokens_in).unwrap_or(i64::MAX),
        i64::try_from(tokens_out).unwrap_or(i64::MAX)
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks a running job completed.
pub async fn complete(conn: &mut PgConnection, tenant: &str, id: &str, memories_created: i32) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE compile_jobs SET status = 'completed', memories_created = $3, completed_at = now(), heartbeat_at = now() \
         WHERE tenant_id = $1 AND id = $2 AND status = 'running'",
        tenant,
        id,
        memories_created
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// One job of the tenant.
pub async fn get(conn: &mut PgConnection, tenant: &str, id: &str) -> sqlx::Result<Option<JobRow>> {
    sqlx::query_as!(
        JobRow,
        "SELECT tenant_id, subject_id, id, status, memories_created, error, attempts, created_at, heartbeat_at, \
         llm_tokens_in, llm_tokens_out, episodes_done, episodes_total FROM compile_jobs WHERE tenant_id = $1 AND id = $2",
        tenant,
        id
    )
    .fetch_optional(conn)
    .await
}

/// Deletes finished jobs of every tenant older than `hours`; returns how many.
pub async fn delete_finished(conn: &mut PgConnection, hours: i64) -> sqlx::Result<u64> {
    let n: i64 = sqlx::query_scalar!(
        r#"SELECT mnemo_delete_finished_jobs($1) AS "n!""#,
        hours.clamp(0, i64::from(i32::MAX)) as i32
    )
    .fetch_one(conn)
    .await?;
    Ok(n.max(0) as u64)
}
