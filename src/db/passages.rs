//! Passages of long episodes (`episode_passages`): written by compile as char ranges, given
//! their vectors by the passage worker.

use pgvector::Vector;
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

/// One passage's place in its episode's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassageRange {
    pub episode_id: Uuid,
    /// From 1, in text order.
    pub passage: i16,
    pub start_char: i32,
    pub end_char: i32,
}

/// A passage leased to a worker, with its episode's payload to cut the text from.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub tenant_id: String,
    pub subject_id: String,
    pub range: PassageRange,
    pub payload: Value,
}

/// Stores passages without vectors (the worker embeds them); an existing passage of the same
/// number is replaced and waits for a vector again.
pub async fn insert(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    rows: &[PassageRange],
) -> sqlx::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = rows.iter().map(|r| r.episode_id).collect();
    let passages: Vec<i16> = rows.iter().map(|r| r.passage).collect();
    let starts: Vec<i32> = rows.iter().map(|r| r.start_char).collect();
    let ends: Vec<i32> = rows.iter().map(|r| r.end_char).collect();
    sqlx::query!(
        "INSERT INTO episode_passages (tenant_id, subject_id, episode_id, passage, start_char, end_char) \
         SELECT $1, $2, u.id, u.p, u.s, u.e FROM UNNEST($3::uuid[], $4::int2[], $5::int4[], $6::int4[]) AS u(id, p, s, e) \
         ON CONFLICT (tenant_id, subject_id, episode_id, passage) DO UPDATE \
         SET start_char = EXCLUDED.start_char, end_char = EXCLUDED.end_char, embedding = NULL, \
             embedding_model = NULL, embedded_at = NULL, claimed_at = NULL",
        tenant,
        subject_id,
        &ids,
        &passages,
        &starts,
        &ends
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Leases up to `limit` passages without a vector, of any tenant (`mnemo_claim_passages`).
pub async fn claim(conn: &mut PgConnection, limit: i32) -> sqlx::Result<Vec<Claimed>> {
    let rows = sqlx::query!(
        r#"SELECT tenant_id AS "tenant_id!", subject_id AS "subject_id!", episode_id AS "episode_id!",
           passage AS "passage!", start_char AS "start_char!", end_char AS "end_char!", payload AS "payload!"
           FROM mnemo_claim_passages($1)"#,
        limit
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| Claimed {
            tenant_id: r.tenant_id,
            subject_id: r.subject_id,
            range: PassageRange {
                episode_id: r.episode_id,
                passage: r.passage,
                start_char: r.start_char,
                end_char: r.end_char,
            },
            payload: r.payload,
        })
        .collect())
}

/// Writes the vectors of a subject's passages, unless the passage changed since its lease
/// (replaced by a re-embedding: another range).
pub async fn fill(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    rows: &[(&PassageRange, Vector)],
    model: &str,
) -> sqlx::Result<()> {
    let ids: Vec<Uuid> = rows.iter().map(|(r, _)| r.episode_id).collect();
    let passages: Vec<i16> = rows.iter().map(|(r, _)| r.passage).collect();
    let starts: Vec<i32> = rows.iter().map(|(r, _)| r.start_char).collect();
    let vectors: Vec<Vector> = rows.iter().map(|(_, v)| v.clone()).collect();
    sqlx::query!(
        "UPDATE episode_passages q SET embedding = u.v, embedding_model = $7, embedded_at = now(), claimed_at = NULL \
         FROM UNNEST($3::uuid[], $4::int2[], $5::int4[], $6::vector[]) AS u(id, p, s, v) \
         WHERE q.tenant_id = $1 AND q.subject_id = $2 AND q.episode_id = u.id AND q.passage = u.p \
           AND q.start_char = u.s AND q.embedding IS NULL",
        tenant,
        subject_id,
        &ids,
        &passages,
        &starts,
        &vectors as &[Vector],
        model
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// How many passages wait for a vector (all tenants; the owner's view, for benchmarks and
/// operators).
pub async fn pending(conn: &mut PgConnection) -> sqlx::Result<i64> {
    sqlx::query_scalar!(r#"SELECT count(*) AS "n!" FROM episode_passages WHERE embedding IS NULL"#)
        .fetch_one(conn)
        .await
}

/// A subject whose older episodes may still lack their passages, of any tenant
/// (`mnemo_passages_to_backfill`).
pub async fn to_backfill(conn: &mut PgConnection) -> sqlx::Result<Option<(String, String)>> {
    let row = sqlx::query!(
        r#"SELECT tenant_id AS "tenant_id!", subject_id AS "subject_id!" FROM mnemo_passages_to_backfill()"#
    )
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|r| (r.tenant_id, r.subject_id)))
}

/// The highest seq of the subject whose episodes may still lack their passages (None: none).
pub async fn backfill_through(conn: &mut PgConnection, tenant: &str, subject_id: &str) -> sqlx::Result<Option<i64>> {
    let through = sqlx::query_scalar!(
        "SELECT passages_through FROM compile_cursors WHERE tenant_id = $1 AND subject_id = $2",
        tenant,
        subject_id
    )
    .fetch_optional(conn)
    .await?;
    Ok(through.flatten())
}

/// Up to `limit` of the subject's episodes at or below `through` that have no passages, newest
/// first: (id, seq, payload).
pub async fn without_passages(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    through: i64,
    limit: i64,
) -> sqlx::Result<Vec<(Uuid, i64, Value)>> {
    let rows = sqlx::query!(
        "SELECT e.id, e.seq, e.payload FROM episodes e \
         WHERE e.tenant_id = $1 AND e.subject_id = $2 AND e.seq <= $3 \
           AND NOT EXISTS (SELECT 1 FROM episode_passages p \
                           WHERE p.tenant_id = e.tenant_id AND p.subject_id = e.subject_id AND p.episode_id = e.id) \
         ORDER BY e.seq DESC LIMIT $4",
        tenant,
        subject_id,
        through,
        limit
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.id, r.seq, r.payload)).collect())
}

/// Records how far the subject's backfill has come (None: done).
pub async fn set_backfill_through(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    through: Option<i64>,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE compile_cursors SET passages_through = $3 WHERE tenant_id = $1 AND subject_id = $2",
        tenant,
        subject_id,
        through
    )
    .execute(conn)
    .await?;
    Ok(())
}
