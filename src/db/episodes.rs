//! Queries on the append-only `episodes` table.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::model::episode::{Episode, Inserted, NewEpisode};

const COLUMNS: &str =
    "id, subject_id, source, type, payload, metadata, provenance, session_id, occurred_at, created_at";

/// Inserts an episode with the given seq, or with the subject's next seq when `seq` is None
/// (one statement: the counter row stays locked until the insert commits). With an idempotency
/// key already used for the subject, returns the stored row (the consumed seq is a harmless gap).
pub async fn insert(
    conn: &mut PgConnection,
    tenant: &str,
    id: Uuid,
    seq: Option<i64>,
    e: &NewEpisode,
) -> sqlx::Result<(Episode, Inserted)> {
    let key = e.effective_key();
    let seq_source = if seq.is_some() {
        "(SELECT $12::bigint AS last_seq)"
    } else {
        "(INSERT INTO subject_counters (tenant_id, subject_id, last_seq) VALUES ($1, $2, 1) \
          ON CONFLICT (tenant_id, subject_id) DO UPDATE SET last_seq = subject_counters.last_seq + 1 \
          RETURNING last_seq)"
    };
    let sql = format!(
        "WITH c AS {seq_source} \
         INSERT INTO episodes (tenant_id, subject_id, id, session_id, source, type, payload, metadata, \
         provenance, idempotency_key, occurred_at, seq) \
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, COALESCE($11, now()), c.last_seq FROM c \
         ON CONFLICT (tenant_id, subject_id, md5(idempotency_key)) WHERE idempotency_key IS NOT NULL DO NOTHING \
         RETURNING {COLUMNS}"
    );
    let mut q = sqlx::query_as(&sql)
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
        .bind(e.occurred_at);
    if let Some(seq) = seq {
        q = q.bind(seq);
    }
    let row: Option<Episode> = q.fetch_optional(&mut *conn).await?;
    if let Some(row) = row {
        return Ok((row, Inserted::New));
    }
    // The conflict target only fires with a key, so a missing row means the key exists.
    let sql =
        format!("SELECT {COLUMNS} FROM episodes WHERE tenant_id = $1 AND subject_id = $2 AND idempotency_key = $3");
    let existing: Episode =
        sqlx::query_as(&sql).bind(tenant).bind(&e.subject_id).bind(&key).fetch_one(&mut *conn).await?;
    Ok((existing, Inserted::Existing))
}

/// Reserves `count` consecutive seqs for a subject; returns the first. Locks the counter row
/// until the caller's transaction ends.
pub async fn reserve_seqs(conn: &mut PgConnection, tenant: &str, subject_id: &str, count: i64) -> sqlx::Result<i64> {
    let last: i64 = sqlx::query_scalar(
        "INSERT INTO subject_counters (tenant_id, subject_id, last_seq) VALUES ($1, $2, $3) \
         ON CONFLICT (tenant_id, subject_id) DO UPDATE SET last_seq = subject_counters.last_seq + $3 \
         RETURNING last_seq",
    )
    .bind(tenant)
    .bind(subject_id)
    .bind(count)
    .fetch_one(&mut *conn)
    .await?;
    Ok(last - count + 1)
}

/// Which episodes a timeline page holds: `occurred_at` within `since..=until`, `type` among
/// `kinds` (each None = no limit).
#[derive(Debug, Clone, Default)]
pub struct EpisodeFilter {
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    pub kinds: Option<Vec<String>>,
}

/// One page of a subject's episodes in (occurred_at, created_at, id) order, plus whether more exist.
#[allow(clippy::too_many_arguments)]
pub async fn page(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    limit: i64,
    offset: i64,
    newest_first: bool,
    filter: &EpisodeFilter,
) -> sqlx::Result<(Vec<Episode>, bool)> {
    let dir = if newest_first { "DESC" } else { "ASC" };
    let sql = format!(
        "SELECT {COLUMNS} FROM episodes WHERE tenant_id = $1 AND subject_id = $2 \
         AND ($5::timestamptz IS NULL OR occurred_at >= $5) AND ($6::timestamptz IS NULL OR occurred_at <= $6) \
         AND ($7::text[] IS NULL OR type = ANY($7)) \
         ORDER BY occurred_at {dir}, created_at {dir}, id {dir} LIMIT $3 OFFSET $4"
    );
    let mut rows: Vec<Episode> = sqlx::query_as(&sql)
        .bind(tenant)
        .bind(subject_id)
        .bind(limit + 1)
        .bind(offset)
        .bind(filter.since)
        .bind(filter.until)
        .bind(filter.kinds.as_deref())
        .fetch_all(&mut *conn)
        .await?;
    let has_more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    if newest_first {
        rows.reverse();
    }
    Ok((rows, has_more))
}
