//! What supersession reads and writes during a compile: the subject's active memories and
//! current claims, the supersession of memories and its records.

use chrono::{DateTime, Utc};
use pgvector::Vector;
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::model::memory::{Memory, MemoryKind, MemoryStatus};

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
    /// The earlier memories it is recorded to change (`metadata.revises`, [`mark_revises`]).
    pub revises: Vec<Uuid>,
    /// The claim keys of those memories, current or not: the attribute a change of them is about.
    pub revised_keys: Vec<String>,
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

/// The source episodes of the asked memories and their vectors when they were embedded by
/// `model` (what the same-topic judge's doubts need of earlier memories).
pub async fn sources_and_vectors(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    ids: &[Uuid],
    model: &str,
) -> sqlx::Result<Vec<(Uuid, Vec<Uuid>, Option<Vector>)>> {
    let rows = sqlx::query!(
        r#"SELECT id, source_episode_ids, CASE WHEN embedding_model = $4 THEN embedding END AS "embedding?: Vector"
           FROM memories WHERE tenant_id = $1 AND subject_id = $2 AND id = ANY($3)"#,
        tenant,
        subject_id,
        ids,
        model
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.id, r.source_episode_ids, r.embedding)).collect())
}

/// Records on memories written by this compile which earlier memories their message may
/// change (`metadata.revises`, a list of `{memory, episodes}`; read by bundles to mark those
/// as earlier).
pub async fn mark_revises(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    ids: &[Uuid],
    revises: &[Value],
) -> sqlx::Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let revises: Vec<sqlx::types::Json<&Value>> = revises.iter().map(sqlx::types::Json).collect();
    sqlx::query!(
        "UPDATE memories m SET metadata = m.metadata || jsonb_build_object('revises', u.r) \
         FROM UNNEST($3::uuid[], $4::jsonb[]) AS u(id, r) \
         WHERE m.tenant_id = $1 AND m.subject_id = $2 AND m.id = u.id",
        tenant,
        subject_id,
        ids,
        &revises as _
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Every active, unexpired memory of the subject.
pub async fn active_rows(conn: &mut PgConnection, tenant: &str, subject_id: &str) -> sqlx::Result<Vec<ActiveRow>> {
    sqlx::query_as!(
        ActiveRow,
        "SELECT m.id, m.kind AS \"kind: MemoryKind\", m.content, m.valid_from, m.valid_to, m.order_at, m.order_tiebreak, \
         m.metadata->'claim' AS claim, m.claim_bucket, m.metadata->>'replaces' AS replaces, \
         (m.metadata->>'voice' IS NOT DISTINCT FROM 'evidence') AS \"evidence!\", \
         ARRAY(SELECT (r->>'memory')::uuid FROM jsonb_array_elements(CASE WHEN jsonb_typeof(m.metadata->'revises') = 'array' \
               THEN m.metadata->'revises' ELSE '[]'::jsonb END) r \
               WHERE r->>'memory' ~ '^[0-9a-fA-F-]{36}$') AS \"revises!\", \
         ARRAY(SELECT DISTINCT o.metadata->'claim'->>'key' FROM jsonb_array_elements(CASE WHEN jsonb_typeof(m.metadata->'revises') = 'array' \
               THEN m.metadata->'revises' ELSE '[]'::jsonb END) r \
               JOIN memories o ON o.tenant_id = m.tenant_id AND o.subject_id = m.subject_id \
               AND o.id = CASE WHEN r->>'memory' ~ '^[0-9a-fA-F-]{36}$' THEN (r->>'memory')::uuid END \
               WHERE o.metadata->'claim'->>'key' IS NOT NULL) AS \"revised_keys!\" \
         FROM memories m WHERE m.tenant_id = $1 AND m.subject_id = $2 AND m.status = 'active' \
         AND (m.valid_to IS NULL OR m.valid_to > now())",
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
