//! Compile-side queries: the per-subject lock and cursor, pending episodes, memory writes,
//! the active set that supersession looks at, and supersession records.

use chrono::{DateTime, Utc};
use pgvector::Vector;
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::model::memory::{Memory, MemoryKind, MemoryStatus};

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
        "SELECT id, seq, source, payload, occurred_at FROM episodes \
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

/// The part of an active memory that supersession looks at.
#[derive(Debug, Clone)]
pub struct ActiveRow {
    pub id: Uuid,
    pub kind: MemoryKind,
    pub content: String,
    pub valid_from: DateTime<Utc>,
    pub valid_to: Option<DateTime<Utc>>,
    pub order_at: DateTime<Utc>,
    pub order_tiebreak: String,
    pub claim: Option<Value>,
    pub claim_bucket: Option<String>,
    /// The normalised value of an accumulating claim this memory replaces (`compile::link`).
    pub replaces: Option<String>,
    /// Made from evidence (`metadata.voice = 'evidence'`, [`crate::model::voice`]).
    pub evidence: bool,
}

/// The claim envelopes of the subject's current memories (for linking updates to them), with
/// their vectors when they were embedded by `model`.
pub async fn current_claims(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    model: &str,
) -> sqlx::Result<Vec<(Value, Option<Vector>)>> {
    let rows = sqlx::query!(
        r#"SELECT metadata->'claim' AS "claim!", CASE WHEN embedding_model = $3 THEN embedding END AS "embedding?: Vector"
           FROM memories
           WHERE tenant_id = $1 AND subject_id = $2 AND status = 'active' AND claim_key IS NOT NULL
           AND (valid_to IS NULL OR valid_to > now()) ORDER BY order_at, order_tiebreak, id"#,
        tenant,
        subject_id,
        model
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.claim, r.embedding)).collect())
}

/// Every active, unexpired memory of the subject.
pub async fn active_rows(conn: &mut PgConnection, tenant: &str, subject_id: &str) -> sqlx::Result<Vec<ActiveRow>> {
    sqlx::query_as!(
        ActiveRow,
        "SELECT id, kind AS \"kind: MemoryKind\", content, valid_from, valid_to, order_at, order_tiebreak, metadata->'claim' AS claim, \
         claim_bucket, metadata->>'replaces' AS replaces, (metadata->>'voice' IS NOT DISTINCT FROM 'evidence') AS \"evidence!\" \
         FROM memories WHERE tenant_id = $1 AND subject_id = $2 AND status = 'active' \
         AND (valid_to IS NULL OR valid_to > now())",
        tenant,
        subject_id
    )
    .fetch_all(conn)
    .await
}

/// The subject's current memories with what a request to forget is matched against: id,
/// content, time anchor and source episodes.
pub async fn active_texts(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
) -> sqlx::Result<Vec<(Uuid, String, DateTime<Utc>, Vec<Uuid>)>> {
    let rows = sqlx::query!(
        "SELECT id, content, order_at, source_episode_ids FROM memories WHERE tenant_id = $1 AND subject_id = $2 \
         AND status = 'active' AND (valid_to IS NULL OR valid_to > now())",
        tenant,
        subject_id
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.id, r.content, r.order_at, r.source_episode_ids)).collect())
}

/// Marks losers superseded: status, valid_to and transaction-time end; the row is otherwise kept.
pub async fn supersede(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    ids: &[Uuid],
    valid_to: &[DateTime<Utc>],
) -> sqlx::Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    sqlx::query!(
        "UPDATE memories m SET status = 'superseded', valid_to = u.valid_to, superseded_at = now(), updated_at = now() \
         FROM UNNEST($3::uuid[], $4::timestamptz[]) AS u(id, valid_to) \
         WHERE m.tenant_id = $1 AND m.subject_id = $2 AND m.id = u.id AND m.status = 'active'",
        tenant,
        subject_id,
        ids,
        valid_to
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// One supersession decision to record.
#[derive(Debug, Clone)]
pub struct RecordRow {
    pub superseded: Uuid,
    /// None when nothing replaces it (a memory retired by a request to forget).
    pub superseding: Option<Uuid>,
    pub rule: String,
    pub claim_key: Option<String>,
    pub score: Option<f64>,
    pub threshold: Option<f64>,
    pub details: Value,
}

/// Writes supersession records (ids and rule data only, never memory text).
pub async fn insert_records(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    job_id: Option<&str>,
    records: &[RecordRow],
) -> sqlx::Result<()> {
    if records.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = records.iter().map(|_| crate::model::id::new_id()).collect();
    let superseded: Vec<Uuid> = records.iter().map(|r| r.superseded).collect();
    let superseding: Vec<Option<Uuid>> = records.iter().map(|r| r.superseding).collect();
    let rules: Vec<String> = records.iter().map(|r| r.rule.clone()).collect();
    let keys: Vec<Option<String>> = records.iter().map(|r| r.claim_key.clone()).collect();
    let scores: Vec<Option<f64>> = records.iter().map(|r| r.score).collect();
    let thresholds: Vec<Option<f64>> = records.iter().map(|r| r.threshold).collect();
    let details: Vec<sqlx::types::Json<Value>> = records.iter().map(|r| sqlx::types::Json(r.details.clone())).collect();
    sqlx::query!(
        "INSERT INTO supersession_records (tenant_id, subject_id, id, superseded_memory_id, superseding_memory_id, \
         rule, claim_key, score, threshold, compile_job_id, details) \
         SELECT $1, $2, u.id, u.a, u.b, u.rule, u.key, u.score, u.threshold, $3, u.details \
         FROM UNNEST($4::uuid[], $5::uuid[], $6::uuid[], $7::text[], $8::text[], $9::float8[], $10::float8[], \
         $11::jsonb[]) AS u(id, a, b, rule, key, score, threshold, details)",
        tenant,
        subject_id,
        job_id,
        &ids,
        &superseded,
        // Nullable elements: a retired memory may have no successor.
        &superseding as _,
        &rules,
        &keys as _,
        &scores as _,
        &thresholds as _,
        &details as _
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Reads memories by id (in the given order is not guaranteed; callers sort).
pub async fn memories_by_ids(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    ids: &[Uuid],
) -> sqlx::Result<Vec<Memory>> {
    sqlx::query_as!(
        Memory,
        "SELECT id, subject_id, kind AS \"kind: MemoryKind\", content, summary, confidence, valid_from, valid_to, source_episode_ids, metadata, status AS \"status: MemoryStatus\", \
         sensitivity_labels, suggested_labels, created_at, updated_at FROM memories WHERE tenant_id = $1 AND subject_id = $2 AND id = ANY($3) \
         ORDER BY order_at, order_tiebreak, id",
        tenant,
        subject_id,
        ids
    )
    .fetch_all(conn)
    .await
}

/// The subject's newest `limit` current claimed facts (id, content, claim envelope), newest
/// first: what the LLM compiler offers its model as facts an item may update.
pub async fn current_facts(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    limit: i64,
) -> sqlx::Result<Vec<(Uuid, String, Value)>> {
    let rows = sqlx::query!(
        r#"SELECT id, content, metadata->'claim' AS "claim!" FROM memories
           WHERE tenant_id = $1 AND subject_id = $2 AND status = 'active' AND kind = 'profile_fact'
           AND claim_key IS NOT NULL AND (valid_to IS NULL OR valid_to > now())
           ORDER BY order_at DESC, order_tiebreak DESC, id DESC LIMIT $3"#,
        tenant,
        subject_id,
        limit
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.id, r.content, r.claim)).collect())
}
