//! Queries for subject backups (Statewave's format): whole-subject reads for export, and
//! inserts that keep the ids, times and statuses a document carries.

use chrono::{DateTime, Utc};
use futures_util::stream::{BoxStream, StreamExt};
use pgvector::Vector;
use serde_json::Value;
use sqlx::types::Json;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::db::episodes::EpisodeWith;
use crate::model::episode::Episode;
use crate::model::memory::{Memory, MemoryKind, MemoryStatus};

/// A stored episode with its seq.
#[derive(Debug)]
pub struct SeqEpisode {
    pub episode: Episode,
    pub seq: i64,
}

/// How many episodes and memories (of any status) the subject has.
pub async fn subject_counts(conn: &mut PgConnection, tenant: &str, subject_id: &str) -> sqlx::Result<(i64, i64)> {
    let r = sqlx::query!(
        r#"SELECT (SELECT count(*) FROM episodes WHERE tenant_id = $1 AND subject_id = $2) AS "episodes!",
           (SELECT count(*) FROM memories WHERE tenant_id = $1 AND subject_id = $2) AS "memories!""#,
        tenant,
        subject_id
    )
    .fetch_one(conn)
    .await?;
    Ok((r.episodes, r.memories))
}

/// Every episode of the subject in time order (Statewave orders by creation time; mnemo's
/// episode time is `occurred_at`), seq breaking ties; streamed, never all in memory.
pub fn subject_episodes<'c>(
    conn: &'c mut PgConnection,
    tenant: &'c str,
    subject_id: &'c str,
) -> BoxStream<'c, sqlx::Result<SeqEpisode>> {
    sqlx::query_as!(
        EpisodeWith::<i64>,
        "SELECT id, subject_id, source, type AS kind, payload, metadata, provenance, session_id, occurred_at, \
         created_at, seq AS extra FROM episodes WHERE tenant_id = $1 AND subject_id = $2 ORDER BY occurred_at, seq",
        tenant,
        subject_id
    )
    .fetch(conn)
    .map(|r| {
        r.map(|r| {
            let (episode, seq) = r.split();
            SeqEpisode { episode, seq }
        })
    })
    .boxed()
}

/// Every memory of the subject, whatever its status, in creation order; streamed.
pub fn subject_memories<'c>(
    conn: &'c mut PgConnection,
    tenant: &'c str,
    subject_id: &'c str,
) -> BoxStream<'c, sqlx::Result<Memory>> {
    sqlx::query_as!(
        Memory,
        "SELECT id, subject_id, kind AS \"kind: MemoryKind\", content, summary, confidence, valid_from, valid_to, source_episode_ids, metadata, status AS \"status: MemoryStatus\", \
         sensitivity_labels, suggested_labels, created_at, updated_at FROM memories WHERE tenant_id = $1 AND subject_id = $2 \
         ORDER BY created_at, order_at, order_tiebreak, id",
        tenant,
        subject_id
    )
    .fetch(conn)
}

/// The subject's compile cursor and when it last moved (None: never compiled).
pub async fn cursor_row(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
) -> sqlx::Result<Option<(i64, DateTime<Utc>)>> {
    let row = sqlx::query!(
        "SELECT compiled_seq, updated_at FROM compile_cursors WHERE tenant_id = $1 AND subject_id = $2",
        tenant,
        subject_id
    )
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|r| (r.compiled_seq, r.updated_at)))
}

/// How many of these episode ids and memory ids are already used anywhere in the database,
/// in any tenant (the answer is ids only, never another tenant's rows).
pub async fn ids_in_use(
    conn: &mut PgConnection,
    episode_ids: &[Uuid],
    memory_ids: &[Uuid],
) -> sqlx::Result<(i64, i64)> {
    let r = sqlx::query!(
        r#"SELECT count(*) FILTER (WHERE kind = 'episode') AS "episodes!",
           count(*) FILTER (WHERE kind = 'memory') AS "memories!"
           FROM mnemo_ids_in_use($1, $2)"#,
        episode_ids,
        memory_ids
    )
    .fetch_one(conn)
    .await?;
    Ok((r.episodes, r.memories))
}

/// Which of these episode ids are used anywhere in the database, in any tenant (ids only,
/// through `mnemo_ids_in_use`).
pub async fn episode_ids_in_use(conn: &mut PgConnection, episode_ids: &[Uuid]) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar!(
        r#"SELECT id AS "id!" FROM mnemo_ids_in_use($1, '{}'::uuid[]) WHERE kind = 'episode'"#,
        episode_ids
    )
    .fetch_all(conn)
    .await
}

/// Which of these ids are episodes of the tenant's subject.
pub async fn subject_episode_ids(
    conn: &mut PgConnection,
    tenant: &str,
    subject: &str,
    episode_ids: &[Uuid],
) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar!(
        "SELECT id FROM episodes WHERE tenant_id = $1 AND subject_id = $2 AND id = ANY($3)",
        tenant,
        subject,
        episode_ids
    )
    .fetch_all(conn)
    .await
}

/// Serialises imports that keep their ids, across tenants, until commit: the id check of one
/// then sees the ids another committed before it (keys include the tenant, so no unique index
/// would catch one id imported into two tenants at the same time).
pub async fn lock_preserved_ids(conn: &mut PgConnection) -> sqlx::Result<()> {
    sqlx::query!("SELECT pg_advisory_xact_lock(hashtextextended('mnemo:import:preserved-ids', 0))")
        .execute(conn)
        .await?;
    Ok(())
}

/// Reserves `n` seqs for the subject and returns the last one (its counter row stays locked
/// until commit, so every earlier seq is committed by then).
pub async fn reserve_seqs(conn: &mut PgConnection, tenant: &str, subject_id: &str, n: i64) -> sqlx::Result<i64> {
    sqlx::query_scalar!(
        "INSERT INTO subject_counters AS sc (tenant_id, subject_id, last_seq) VALUES ($1, $2, $3) \
         ON CONFLICT (tenant_id, subject_id) DO UPDATE SET last_seq = sc.last_seq + EXCLUDED.last_seq \
         RETURNING last_seq",
        tenant,
        subject_id,
        n
    )
    .fetch_one(conn)
    .await
}

/// Column arrays of imported episodes (one entry per episode).
#[derive(Debug, Default)]
pub struct EpisodeRows {
    pub ids: Vec<Uuid>,
    pub seqs: Vec<i64>,
    pub sources: Vec<String>,
    pub kinds: Vec<String>,
    pub payloads: Vec<Json<Value>>,
    pub metadata: Vec<Json<Value>>,
    pub provenance: Vec<Json<Value>>,
    /// Both `occurred_at` and `created_at`.
    pub times: Vec<DateTime<Utc>>,
}

/// Inserts imported episodes with their given seqs and times (no session, no idempotency key).
pub async fn insert_episodes(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    rows: &EpisodeRows,
) -> sqlx::Result<()> {
    if rows.ids.is_empty() {
        return Ok(());
    }
    sqlx::query!(
        "INSERT INTO episodes (tenant_id, subject_id, id, seq, source, type, payload, metadata, provenance, \
         occurred_at, created_at) \
         SELECT $1, $2, u.id, u.seq, u.source, u.kind, u.payload, u.metadata, u.provenance, u.t, u.t \
         FROM UNNEST($3::uuid[], $4::int8[], $5::text[], $6::text[], $7::jsonb[], $8::jsonb[], $9::jsonb[], \
         $10::timestamptz[]) AS u(id, seq, source, kind, payload, metadata, provenance, t)",
        tenant,
        subject_id,
        &rows.ids,
        &rows.seqs,
        &rows.sources,
        &rows.kinds,
        &rows.payloads as _,
        &rows.metadata as _,
        &rows.provenance as _,
        &rows.times
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Column arrays of imported memories (one entry per memory).
#[derive(Debug, Default)]
pub struct MemoryRows {
    pub ids: Vec<Uuid>,
    pub kinds: Vec<MemoryKind>,
    pub contents: Vec<String>,
    pub summaries: Vec<String>,
    pub confidences: Vec<f64>,
    pub valid_from: Vec<DateTime<Utc>>,
    pub valid_to: Vec<Option<DateTime<Utc>>>,
    /// `valid_to` as first recorded (see the `memories` table in migrations/0001_schema.sql).
    pub asserted_valid_to: Vec<Option<DateTime<Utc>>>,
    pub superseded_at: Vec<Option<DateTime<Utc>>>,
    /// Source episode ids joined by commas (ragged arrays cannot be UNNESTed).
    pub sources: Vec<String>,
    pub metadata: Vec<Json<Value>>,
    pub statuses: Vec<String>,
    pub claim_key: Vec<Option<String>>,
    pub claim_bucket: Vec<Option<String>>,
    pub claim_single: Vec<bool>,
    pub order_tiebreak: Vec<String>,
    pub embedding: Vec<Option<Vector>>,
    /// Suggested labels joined by U+001F.
    pub suggested: Vec<String>,
    /// Both `recorded_at` and `created_at`.
    pub created_at: Vec<DateTime<Utc>>,
    pub updated_at: Vec<DateTime<Utc>>,
}

/// Inserts imported memories as given (status, times and validity kept).
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
         asserted_valid_to, recorded_at, superseded_at, source_episode_ids, metadata, status, claim_key, \
         claim_bucket, claim_single, order_at, order_tiebreak, embedding, embedding_model, suggested_labels, \
         created_at, updated_at) \
         SELECT $1, $2, u.id, u.kind, u.content, u.summary, u.confidence, u.valid_from, u.valid_to, u.asserted, \
         u.created, u.superseded, string_to_array(u.sources, ',')::uuid[], u.metadata, u.status, u.claim_key, \
         u.claim_bucket, u.claim_single, u.valid_from, u.tiebreak, u.embedding, \
         CASE WHEN u.embedding IS NULL THEN NULL ELSE $3 END, string_to_array(u.suggested, chr(31)), \
         u.created, u.updated \
         FROM UNNEST($4::uuid[], $5::text[], $6::text[], $7::text[], $8::float8[], $9::timestamptz[], \
         $10::timestamptz[], $11::timestamptz[], $12::timestamptz[], $13::text[], $14::jsonb[], $15::text[], \
         $16::text[], $17::text[], $18::bool[], $19::text[], $20::vector[], $21::text[], $22::timestamptz[], \
         $23::timestamptz[]) \
         AS u(id, kind, content, summary, confidence, valid_from, valid_to, asserted, superseded, sources, \
         metadata, status, claim_key, claim_bucket, claim_single, tiebreak, embedding, suggested, created, updated)",
        tenant,
        subject_id,
        embedding_model,
        &rows.ids,
        &rows.kinds as &[MemoryKind],
        &rows.contents,
        &rows.summaries,
        &rows.confidences,
        &rows.valid_from,
        &rows.valid_to as _,
        &rows.asserted_valid_to as _,
        &rows.superseded_at as _,
        &rows.sources,
        &rows.metadata as _,
        &rows.statuses,
        &rows.claim_key as _,
        &rows.claim_bucket as _,
        &rows.claim_single,
        &rows.order_tiebreak,
        &rows.embedding as &[Option<Vector>],
        &rows.suggested,
        &rows.created_at,
        &rows.updated_at
    )
    .execute(conn)
    .await?;
    Ok(())
}
