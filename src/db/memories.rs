//! Queries on the `memories` table.

use sqlx::PgConnection;

use crate::model::memory::{Memory, MEMORY_COLUMNS};

/// One page of a subject's memories in (created_at, id) order, plus whether more exist.
pub async fn page(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    limit: i64,
    offset: i64,
    newest_first: bool,
    active_only: bool,
) -> sqlx::Result<(Vec<Memory>, bool)> {
    let dir = if newest_first { "DESC" } else { "ASC" };
    let filter = if active_only {
        "AND status = 'active' AND (valid_to IS NULL OR valid_to > now())"
    } else {
        ""
    };
    let sql = format!(
        "SELECT {MEMORY_COLUMNS} FROM memories WHERE tenant_id = $1 AND subject_id = $2 {filter} \
         ORDER BY created_at {dir}, id {dir} LIMIT $3 OFFSET $4"
    );
    let mut rows: Vec<Memory> = sqlx::query_as(&sql)
        .bind(tenant)
        .bind(subject_id)
        .bind(limit + 1)
        .bind(offset)
        .fetch_all(&mut *conn)
        .await?;
    let has_more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    if newest_first {
        rows.reverse();
    }
    Ok((rows, has_more))
}
