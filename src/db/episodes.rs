//! Queries on the append-only `episodes` table.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use sqlx::types::Json;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::db::scope::TENANT_CTE;
use crate::model::episode::{Episode, NewEpisode};

const COLUMNS: &str =
    "id, subject_id, source, type, payload, metadata, provenance, session_id, occurred_at, created_at";

/// The insert shared by [`insert`] and [`insert_batch`]: rows come from `src`, which must flow
/// from the tenant CTE (see [`TENANT_CTE`]) and provide every column with `seq`.
fn insert_from(src: &str) -> String {
    format!(
        "INSERT INTO episodes (tenant_id, subject_id, id, session_id, source, type, payload, metadata, \
         provenance, idempotency_key, occurred_at, seq) {src} \
         ON CONFLICT (tenant_id, subject_id, md5(idempotency_key)) WHERE idempotency_key IS NOT NULL DO NOTHING \
         RETURNING {COLUMNS}"
    )
}

/// Inserts an episode with the subject's next seq in one statement that also applies the
/// tenant, so it needs no transaction around it (the counter row stays locked until the
/// statement commits, which keeps seqs in commit order). None when the idempotency key is
/// already used for the subject (the consumed seq is a harmless gap): see [`by_keys`].
pub async fn insert(conn: &mut PgConnection, tenant: &str, id: Uuid, e: &NewEpisode) -> sqlx::Result<Option<Episode>> {
    let insert = insert_from("SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, COALESCE($11, now()), c.last_seq FROM c");
    let sql = format!(
        "WITH {TENANT_CTE}, \
         c AS (INSERT INTO subject_counters (tenant_id, subject_id, last_seq) SELECT $1, $2, 1 FROM mnemo_tenant \
           ON CONFLICT (tenant_id, subject_id) DO UPDATE SET last_seq = subject_counters.last_seq + 1 \
           RETURNING last_seq) \
         {insert}"
    );
    sqlx::query_as(&sql)
        .bind(tenant)
        .bind(&e.subject_id)
        .bind(id)
        .bind(&e.session_id)
        .bind(&e.source)
        .bind(&e.kind)
        .bind(Json(&e.payload))
        .bind(Json(&e.metadata))
        .bind(Json(&e.provenance))
        .bind(e.effective_key())
        .bind(e.occurred_at)
        .fetch_optional(&mut *conn)
        .await
}

/// Inserts a batch in one statement that also applies the tenant: each subject's seqs are
/// reserved in subject order (a fixed lock order, so concurrent batches cannot deadlock) and
/// given out in input order. Returns the new rows; an input whose idempotency key is already
/// used (by a stored row or an earlier input of the batch) has none (see [`by_keys`]).
pub async fn insert_batch(
    conn: &mut PgConnection,
    tenant: &str,
    ids: &[Uuid],
    episodes: &[NewEpisode],
) -> sqlx::Result<Vec<Episode>> {
    let subjects: Vec<&str> = episodes.iter().map(|e| e.subject_id.as_str()).collect();
    let sessions: Vec<Option<&str>> = episodes.iter().map(|e| e.session_id.as_deref()).collect();
    let sources: Vec<&str> = episodes.iter().map(|e| e.source.as_str()).collect();
    let kinds: Vec<&str> = episodes.iter().map(|e| e.kind.as_str()).collect();
    let payloads: Vec<Json<&Map<String, Value>>> = episodes.iter().map(|e| Json(&e.payload)).collect();
    let metadata: Vec<Json<&Map<String, Value>>> = episodes.iter().map(|e| Json(&e.metadata)).collect();
    let provenance: Vec<Json<&Map<String, Value>>> = episodes.iter().map(|e| Json(&e.provenance)).collect();
    let keys: Vec<Option<String>> = episodes.iter().map(NewEpisode::effective_key).collect();
    let occurred: Vec<Option<DateTime<Utc>>> = episodes.iter().map(|e| e.occurred_at).collect();
    let insert = insert_from(
        "SELECT $1, u.subject_id, u.id, u.session_id, u.source, u.kind, u.payload, u.metadata, u.provenance, \
         u.key, COALESCE(u.occurred_at, now()), \
         c.last_seq - n.n + row_number() OVER (PARTITION BY u.subject_id ORDER BY u.ord) \
         FROM u JOIN n ON n.subject_id = u.subject_id JOIN c ON c.subject_id = u.subject_id ORDER BY u.ord",
    );
    let sql = format!(
        "WITH {TENANT_CTE}, \
         u AS (SELECT * FROM UNNEST($2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::jsonb[], \
           $8::jsonb[], $9::jsonb[], $10::text[], $11::timestamptz[]) WITH ORDINALITY \
           AS u(id, subject_id, session_id, source, kind, payload, metadata, provenance, key, occurred_at, ord)), \
         n AS (SELECT subject_id, count(*) AS n FROM u GROUP BY subject_id), \
         c AS (INSERT INTO subject_counters AS sc (tenant_id, subject_id, last_seq) \
           SELECT $1, n.subject_id, n.n FROM n, mnemo_tenant ORDER BY n.subject_id \
           ON CONFLICT (tenant_id, subject_id) DO UPDATE SET last_seq = sc.last_seq + EXCLUDED.last_seq \
           RETURNING sc.subject_id, sc.last_seq) \
         {insert}"
    );
    sqlx::query_as(&sql)
        .bind(tenant)
        .bind(ids)
        .bind(&subjects)
        .bind(&sessions)
        .bind(&sources)
        .bind(&kinds)
        .bind(&payloads)
        .bind(&metadata)
        .bind(&provenance)
        .bind(&keys)
        .bind(&occurred)
        .fetch_all(&mut *conn)
        .await
}

/// A stored episode with the idempotency key it was recorded under.
#[derive(Debug, sqlx::FromRow)]
pub struct KeyedEpisode {
    #[sqlx(flatten)]
    pub episode: Episode,
    pub idempotency_key: String,
}

/// The stored episodes recorded under these (subject, idempotency key) pairs.
pub async fn by_keys(
    conn: &mut PgConnection,
    tenant: &str,
    subjects: &[&str],
    keys: &[&str],
) -> sqlx::Result<Vec<KeyedEpisode>> {
    let sql = format!(
        "SELECT {COLUMNS}, idempotency_key FROM UNNEST($2::text[], $3::text[]) AS k(k_subject, k_key) \
         JOIN episodes e ON e.tenant_id = $1 AND e.subject_id = k.k_subject \
         AND md5(e.idempotency_key) = md5(k.k_key) AND e.idempotency_key = k.k_key"
    );
    sqlx::query_as(&sql).bind(tenant).bind(subjects).bind(keys).fetch_all(&mut *conn).await
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
