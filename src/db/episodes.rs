//! Queries on the append-only `episodes` table.

use sqlx::PgConnection;
use uuid::Uuid;

use crate::model::episode::{Episode, Inserted, NewEpisode};

const COLUMNS: &str =
    "id, subject_id, source, type, payload, metadata, provenance, session_id, occurred_at, created_at";

/// Inserts an episode; with an idempotency key already used for the subject, returns the stored row.
pub async fn insert(
    conn: &mut PgConnection,
    tenant: &str,
    id: Uuid,
    e: &NewEpisode,
) -> sqlx::Result<(Episode, Inserted)> {
    let key = e.effective_key();
    let sql = format!(
        "INSERT INTO episodes (tenant_id, subject_id, id, session_id, source, type, payload, metadata, \
         provenance, idempotency_key, occurred_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, COALESCE($11, now())) \
         ON CONFLICT (tenant_id, subject_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING \
         RETURNING {COLUMNS}"
    );
    let row: Option<Episode> = sqlx::query_as(&sql)
        .bind(tenant)
        .bind(&e.subject_id)
        .bind(id)
        .bind(&e.session_id)
        .bind(&e.source)
        .bind(&e.kind)
        .bind(sqlx::types::Json(&e.payload))
        .bind(sqlx::types::Json(&e.metadata))
        .bind(sqlx::types::Json(&e.provenance))
        .bind(&key)
        .bind(e.occurred_at)
        .fetch_optional(&mut *conn)
        .await?;
    if let Some(row) = row {
        return Ok((row, Inserted::New));
    }
    // The conflict target only fires with a key, so a missing row means the key exists.
    let sql = format!(
        "SELECT {COLUMNS} FROM episodes WHERE tenant_id = $1 AND subject_id = $2 AND idempotency_key = $3"
    );
    let existing: Episode = sqlx::query_as(&sql)
        .bind(tenant)
        .bind(&e.subject_id)
        .bind(&key)
        .fetch_one(&mut *conn)
        .await?;
    Ok((existing, Inserted::Existing))
}

/// One page of a subject's episodes in (occurred_at, created_at, id) order, plus whether more exist.
pub async fn page(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    limit: i64,
    offset: i64,
    newest_first: bool,
) -> sqlx::Result<(Vec<Episode>, bool)> {
    let dir = if newest_first { "DESC" } else { "ASC" };
    let sql = format!(
        "SELECT {COLUMNS} FROM episodes WHERE tenant_id = $1 AND subject_id = $2 \
         ORDER BY occurred_at {dir}, created_at {dir}, id {dir} LIMIT $3 OFFSET $4"
    );
    let mut rows: Vec<Episode> = sqlx::query_as(&sql)
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
