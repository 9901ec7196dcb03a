//! Read queries only the admin console needs: subjects with last activity, claim histories,
//! a tenant's compile jobs, and whether a stored admin key is still live.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use super::jobs::JobRow;

/// A subject with its counts and last activity.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SubjectRow {
    pub subject_id: String,
    pub episode_count: i64,
    pub memory_count: i64,
    pub last_activity: Option<DateTime<Utc>>,
}

// Internal namespaces (`_snapshot/`, `_bootstrap_tmp/`) are never listed (as in `db::subjects`).

/// Subjects whose id contains `search` (case-insensitive; all when empty), most recently active
/// first, and how many match.
pub async fn subjects(
    conn: &mut PgConnection,
    tenant: &str,
    search: &str,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<SubjectRow>, i64)> {
    let pattern = format!("%{}%", search.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
    let rows = sqlx::query_as!(
        SubjectRow,
        r#"SELECT subject_id AS "subject_id!", sum(e)::bigint AS "episode_count!", sum(m)::bigint AS "memory_count!",
             max(at) AS last_activity
           FROM (SELECT subject_id, count(*) AS e, 0::bigint AS m, max(created_at) AS at FROM episodes
                   WHERE tenant_id = $1 AND subject_id NOT LIKE '\_snapshot/%'
                   AND subject_id NOT LIKE '\_bootstrap\_tmp/%' AND subject_id ILIKE $2 GROUP BY subject_id
                 UNION ALL
                 SELECT subject_id, 0::bigint, count(*), max(greatest(created_at, updated_at)) FROM memories
                   WHERE tenant_id = $1 AND subject_id NOT LIKE '\_snapshot/%'
                   AND subject_id NOT LIKE '\_bootstrap\_tmp/%' AND subject_id ILIKE $2 GROUP BY subject_id) s
           GROUP BY subject_id ORDER BY max(at) DESC NULLS LAST, subject_id LIMIT $3 OFFSET $4"#,
        tenant,
        pattern,
        limit,
        offset
    )
    .fetch_all(&mut *conn)
    .await?;
    let total = sqlx::query_scalar!(
        r#"SELECT count(DISTINCT subject_id) AS "n!"
           FROM (SELECT subject_id, count(*) AS e, 0::bigint AS m, max(created_at) AS at FROM episodes
                   WHERE tenant_id = $1 AND subject_id NOT LIKE '\_snapshot/%'
                   AND subject_id NOT LIKE '\_bootstrap\_tmp/%' AND subject_id ILIKE $2 GROUP BY subject_id
                 UNION ALL
                 SELECT subject_id, 0::bigint, count(*), max(greatest(created_at, updated_at)) FROM memories
                   WHERE tenant_id = $1 AND subject_id NOT LIKE '\_snapshot/%'
                   AND subject_id NOT LIKE '\_bootstrap\_tmp/%' AND subject_id ILIKE $2 GROUP BY subject_id) s"#,
        tenant,
        pattern
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok((rows, total))
}

/// One memory of a claim's history, with both time axes and what superseded it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ClaimVersion {
    pub claim_key: String,
    pub id: Uuid,
    pub content: String,
    pub value: Option<String>,
    pub status: String,
    pub valid_from: DateTime<Utc>,
    pub valid_to: Option<DateTime<Utc>>,
    pub recorded_at: DateTime<Utc>,
    pub superseded_at: Option<DateTime<Utc>>,
    pub source_episode_ids: Vec<Uuid>,
    pub superseded_by: Option<Uuid>,
    pub rule: Option<String>,
}

/// Every memory of the subject that carries a claim, by claim key then transaction time.
pub async fn claim_history(conn: &mut PgConnection, tenant: &str, subject_id: &str) -> sqlx::Result<Vec<ClaimVersion>> {
    sqlx::query_as!(
        ClaimVersion,
        r#"SELECT m.metadata->'claim'->>'key' AS "claim_key!", m.id, m.content, m.metadata->'claim'->>'value' AS value,
                m.status, m.valid_from, m.valid_to, m.recorded_at, m.superseded_at, m.source_episode_ids,
                r.superseding_memory_id AS "superseded_by?", r.rule AS "rule?"
         FROM memories m
         LEFT JOIN LATERAL (SELECT superseding_memory_id, rule FROM supersession_records s
                            WHERE s.tenant_id = m.tenant_id AND s.subject_id = m.subject_id
                              AND s.superseded_memory_id = m.id ORDER BY s.created_at DESC LIMIT 1) r ON true
         WHERE m.tenant_id = $1 AND m.subject_id = $2 AND m.metadata->'claim'->>'key' IS NOT NULL
         ORDER BY 1, m.recorded_at, m.id"#,
        tenant,
        subject_id
    )
    .fetch_all(conn)
    .await
}

/// The tenant's compile jobs, newest first.
pub async fn jobs(conn: &mut PgConnection, tenant: &str, limit: i64) -> sqlx::Result<Vec<JobRow>> {
    sqlx::query_as!(
        JobRow,
        "SELECT tenant_id, subject_id, id, status, memories_created, error, attempts, created_at, heartbeat_at, \
         llm_tokens_in, llm_tokens_out, episodes_done, episodes_total FROM compile_jobs WHERE tenant_id = $1 \
         ORDER BY created_at DESC, id DESC LIMIT $2",
        tenant,
        limit
    )
    .fetch_all(conn)
    .await
}

/// Whether the tenant's key is a live admin key: None when it is not (revoked, gone, or a
/// tenant key), else whether it is an operator key.
pub async fn live_admin_key(conn: &mut PgConnection, tenant: &str, key_id: &str) -> sqlx::Result<Option<bool>> {
    sqlx::query_scalar!(
        r#"SELECT is_operator FROM api_keys WHERE tenant_id = $1 AND key_id = $2 AND is_admin
           AND revoked_at IS NULL"#,
        tenant,
        key_id
    )
    .fetch_optional(conn)
    .await
}

/// The first and last instants anything of the subject was recorded or superseded (the range
/// of the console's `as_of` slider).
pub async fn activity_span(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
) -> sqlx::Result<(Option<DateTime<Utc>>, Option<DateTime<Utc>>)> {
    let r = sqlx::query!(
        "SELECT min(t) AS first, max(t) AS last FROM ( \
           SELECT created_at AS t FROM episodes WHERE tenant_id = $1 AND subject_id = $2 \
           UNION ALL SELECT recorded_at FROM memories WHERE tenant_id = $1 AND subject_id = $2 \
           UNION ALL SELECT superseded_at FROM memories WHERE tenant_id = $1 AND subject_id = $2) s",
        tenant,
        subject_id
    )
    .fetch_one(conn)
    .await?;
    Ok((r.first, r.last))
}
