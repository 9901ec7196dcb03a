//! Subject listing: the union of subjects that have episodes or memories.

use sqlx::PgConnection;

/// A subject with its row counts.
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct SubjectSummary {
    pub subject_id: String,
    pub episode_count: i64,
    pub memory_count: i64,
}

// Internal namespaces (`_snapshot/`, `_bootstrap_tmp/`) are never listed: each branch of the
// union leaves them out.

/// One page of subjects ordered by id, and the total number of subjects.
pub async fn list(
    conn: &mut PgConnection,
    tenant: &str,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<SubjectSummary>, i64)> {
    let rows: Vec<SubjectSummary> = sqlx::query_as!(
        SubjectSummary,
        r#"SELECT subject_id AS "subject_id!", sum(e)::bigint AS "episode_count!", sum(m)::bigint AS "memory_count!"
           FROM (SELECT subject_id, count(*) AS e, 0::bigint AS m FROM episodes WHERE tenant_id = $1
                   AND subject_id NOT LIKE '\_snapshot/%' AND subject_id NOT LIKE '\_bootstrap\_tmp/%' GROUP BY subject_id
                 UNION ALL
                 SELECT subject_id, 0::bigint, count(*) FROM memories WHERE tenant_id = $1
                   AND subject_id NOT LIKE '\_snapshot/%' AND subject_id NOT LIKE '\_bootstrap\_tmp/%' GROUP BY subject_id) s
           GROUP BY subject_id ORDER BY subject_id LIMIT $2 OFFSET $3"#,
        tenant,
        limit,
        offset
    )
    .fetch_all(&mut *conn)
    .await?;
    let total: i64 = sqlx::query_scalar!(
        r#"SELECT count(DISTINCT subject_id) AS "n!"
           FROM (SELECT subject_id, count(*) AS e, 0::bigint AS m FROM episodes WHERE tenant_id = $1
                   AND subject_id NOT LIKE '\_snapshot/%' AND subject_id NOT LIKE '\_bootstrap\_tmp/%' GROUP BY subject_id
                 UNION ALL
                 SELECT subject_id, 0::bigint, count(*) FROM memories WHERE tenant_id = $1
                   AND subject_id NOT LIKE '\_snapshot/%' AND subject_id NOT LIKE '\_bootstrap\_tmp/%' GROUP BY subject_id) s"#,
        tenant
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok((rows, total))
}
