//! Compile-side queries: the per-subject lock and cursor, pending episodes, memory and vector
//! writes. What supersession reads and writes is in [`super::supersession`].

use chrono::{DateTime, Utc};
use pgvector::Vector;
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::model::memory::MemoryKind;

/// Takes the transaction-scoped advisory lock that serialises compile and erasure of one subject.
pub async fn lock_subject(conn: &mut PgConnection, tenant: &str, subject_id: &str) -> sqlx::Result<()> {
    sqlx::query!("SELECT pg_advisory_xact_lock(hashtextextended($1 || chr(31) || $2, 7))", tenant, subject_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Takes the subject's compile lock like [`lock_subject`], waiting at most `wait`; false when
/// another compile held it that long (the transaction is then aborted: roll it back).
pub async fn lock_subject_within(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    wait: std::time::Duration,
) -> sqlx::Result<bool> {
    let prev: Option<String> =
        sqlx::query_scalar!("SELECT current_setting('lock_timeout')").fetch_one(&mut *conn).await?;
    let ms = format!("{}ms", wait.as_millis().max(1));
    sqlx::query_scalar!("SELECT set_config('lock_timeout', $1, true)", ms).fetch_one(&mut *conn).await?;
    match lock_subject(conn, tenant, subject_id).await {
        Ok(()) => {}
        // lock_not_available: lock_timeout ran out.
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("55P03") => return Ok(false),
        Err(e) => return Err(e),
    }
    let prev = prev.unwrap_or_else(|| "0".into());
    sqlx::query_scalar!("SELECT set_config('lock_timeout', $1, true)", prev).fetch_one(&mut *conn).await?;
    Ok(true)
}

/// The last compiled seq of a subject (0 when never compiled).
pub async fn cursor(conn: &mut PgConnection, tenant: &str, subject_id: &str) -> sqlx::Result<i64> {
    let seq: Option<i64> = sqlx::query_scalar!(
        "SELECT compiled_seq FROM compile_cursors WHERE tenant_id = $1 AND subject_id = $2",
        tenant,
        subject_id
    )
    .fetch_optional(conn)
    .await?;
    Ok(seq.unwrap_or(0))
}

/// Moves the cursor forward to `seq`.
pub async fn advance_cursor(conn: &mut PgConnection, tenant: &str, subject_id: &str, seq: i64) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO compile_cursors (tenant_id, subject_id, compiled_seq) VALUES ($1, $2, $3) \
         ON CONFLICT (tenant_id, subject_id) DO UPDATE SET compiled_seq = GREATEST(compile_cursors.compiled_seq, $3), \
         updated_at = now()",
        tenant,
        subject_id,
        seq
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// An episode waiting to be compiled.
#[derive(Debug, Clone)]
pub struct PendingEpisode {
    pub id: Uuid,
    pub seq: i64,
    pub source: String,
    pub payload: Value,
    pub occurred_at: DateTime<Utc>,
    pub session_id: Option<String>,
}

/// Up to `limit` episodes after the cursor, oldest first.
pub async fn pending(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    after_seq: i64,
    limit: i64,
) -> sqlx::Result<Vec<PendingEpisode>> {
    sqlx::query_as!(
        PendingEpisode,
        "SELECT id, seq, source, payload, occurred_at, session_id FROM episodes \
         WHERE tenant_id = $1 AND subject_id = $2 AND seq > $3 ORDER BY seq LIMIT $4",
        tenant,
        subject_id,
        after_seq,
        limit
    )
    .fetch_all(conn)
    .await
}

/// How many episodes remain after `after_seq`.
pub async fn remaining(conn: &mut PgConnection, tenant: &str, subject_id: &str, after_seq: i64) -> sqlx::Result<i64> {
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM episodes WHERE tenant_id = $1 AND subject_id = $2 AND seq > $3"#,
        tenant,
        subject_id,
        after_seq
    )
    .fetch_one(conn)
    .await
}

/// Column arrays for a multi-row memory insert (one entry per memory).
#[derive(Debug, Default)]
pub struct MemoryRows {
    pub ids: Vec<Uuid>,
    pub kinds: Vec<MemoryKind>,
    pub contents: Vec<String>,
    pub summaries: Vec<String>,
    pub confidences: Vec<f64>,
    pub valid_from: Vec<DateTime<Utc>>,
    pub valid_to: Vec<Option<DateTime<Utc>>>,
    pub source_episode: Vec<Uuid>,
    pub metadata: Vec<sqlx::types::Json<Value>>,
    pub claim_key: Vec<Option<String>>,
    pub claim_bucket: Vec<Option<String>>,
    pub claim_single: Vec<bool>,
    pub order_tiebreak: Vec<String>,
    /// The vector, or None when not embedded.
    pub embedding: Vec<Option<Vector>>,
    /// Suggested sensitivity labels joined by U+001F (ragged arrays cannot be UNNESTed).
    pub suggested: Vec<String>,
}

/// Separator of [`MemoryRows::suggested`].
pub const LABEL_SEPARATOR: char = '\u{1f}';

/// Inserts memories in one statement; `recorded_at` is the transaction time.
pub async fn insert_memories(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    rows: &MemoryRows,
    embedding_model: &str,
) -> sqlx::Result<()> {
    if rows.ids.is_empty() {
        return Ok(());
    }
    sqlx::query!(
        "INSERT INTO memories (tenant_id, subject_id, id, kind, content, summary, confidence, valid_from, valid_to, \
         asserted_valid_to, source_episode_ids, metadata, claim_key, claim_bucket, claim_single, order_at, \
         order_tiebreak, embedding, embedding_model, suggested_labels) \
         SELECT $1, $2, u.id, u.kind, u.content, u.summary, u.confidence, u.valid_from, u.valid_to, u.valid_to, \
         ARRAY[u.source], u.metadata, u.claim_key, u.claim_bucket, u.claim_single, u.valid_from, u.tiebreak, \
         u.embedding, CASE WHEN u.embedding IS NULL THEN NULL ELSE $17 END, \
         string_to_array(u.suggested, chr(31)) \
         FROM UNNEST($3::uuid[], $4::text[], $5::text[], $6::text[], $7::float8[], $8::timestamptz[], \
         $9::timestamptz[], $10::uuid[], $11::jsonb[], $12::text[], $13::text[], $14::bool[], $15::text[], \
         $16::vector[], $18::text[]) \
         AS u(id, kind, content, summary, confidence, valid_from, valid_to, source, metadata, claim_key, \
         claim_bucket, claim_single, tiebreak, embedding, suggested)",
        tenant,
        subject_id,
        &rows.ids,
        &rows.kinds as &[MemoryKind],
        &rows.contents,
        &rows.summaries,
        &rows.confidences,
        &rows.valid_from,
        &rows.valid_to as _,
        &rows.source_episode,
        &rows.metadata as _,
        &rows.claim_key as _,
        &rows.claim_bucket as _,
        &rows.claim_single,
        &rows.order_tiebreak,
        &rows.embedding as &[Option<Vector>],
        embedding_model,
        &rows.suggested
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Stores episode vectors (idempotent per episode).
pub async fn insert_episode_embeddings(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    ids: &[Uuid],
    vectors: &[Vector],
    model: &str,
) -> sqlx::Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    sqlx::query!(
        "INSERT INTO episode_embeddings (tenant_id, subject_id, episode_id, embedding_model, embedding) \
         SELECT $1, $2, u.id, $5, u.v FROM UNNEST($3::uuid[], $4::vector[]) AS u(id, v) \
         ON CONFLICT (tenant_id, subject_id, episode_id) DO UPDATE \
         SET embedding = EXCLUDED.embedding, embedding_model = EXCLUDED.embedding_model",
        tenant,
        subject_id,
        ids,
        vectors as &[Vector],
        model
    )
    .execute(conn)
    .await?;
    Ok(())
}
