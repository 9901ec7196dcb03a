//! Session digests (`compile::digest`): the sessions' sizes, their messages that may be the
//! user's words, the digest that stands for each, and writing a new one.

use chrono::{DateTime, Utc};
use pgvector::Vector;
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

/// A session's current digest.
#[derive(Debug, Clone)]
pub struct Current {
    pub id: Uuid,
    pub session_id: String,
    /// How many of the session's episodes it was made from.
    pub episodes: i64,
}

/// How many episodes each of `sessions` holds up to `through_seq`.
pub async fn sizes(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    sessions: &[String],
    through_seq: i64,
) -> sqlx::Result<Vec<(String, i64)>> {
    let rows = sqlx::query!(
        r#"SELECT session_id AS "session_id!", count(*) AS "n!" FROM episodes
           WHERE tenant_id = $1 AND subject_id = $2 AND session_id = ANY($3) AND seq <= $4
           GROUP BY session_id ORDER BY session_id"#,
        tenant,
        subject_id,
        sessions,
        through_seq
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.session_id, r.n)).collect())
}

/// The active digests of `sessions`.
pub async fn current(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    sessions: &[String],
) -> sqlx::Result<Vec<Current>> {
    sqlx::query_as!(
        Current,
        r#"SELECT id, metadata->>'session_id' AS "session_id!",
                  COALESCE((metadata->>'episodes')::bigint, 0) AS "episodes!"
           FROM memories
           WHERE tenant_id = $1 AND subject_id = $2 AND kind = 'episode_summary' AND status = 'active'
             AND metadata->>'digest' = 'session' AND metadata->>'session_id' = ANY($3)
           ORDER BY id"#,
        tenant,
        subject_id,
        sessions
    )
    .fetch_all(conn)
    .await
}

/// A message of a session that may carry the user's words, with its own summary.
#[derive(Debug, Clone)]
pub struct Turn {
    pub id: Uuid,
    pub session_id: String,
    pub source: String,
    pub occurred_at: DateTime<Utc>,
    /// A chat (its summary's lines are `role: text`), else plain text.
    pub chat: bool,
    /// Its current summary (sanitised when compiled: `compile::pipeline`).
    pub summary: String,
}

/// The episodes of `sessions` up to `through_seq` that may carry the user's words (plain text,
/// or a chat with a user message), in time order per session, each with its own current
/// summary: only turns a bundle may still show are quoted (a turn whose summary a request to
/// forget retired has none; none of its memories was retired by a claim contradiction). The
/// summaries are the compiler's sanitised text, so a digest costs no second reading of the
/// messages.
pub async fn turns(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    sessions: &[String],
    through_seq: i64,
) -> sqlx::Result<Vec<Turn>> {
    sqlx::query_as!(
        Turn,
        r#"WITH summaries AS (
               SELECT DISTINCT ON (m.source_episode_ids[1]) m.source_episode_ids[1] AS episode_id, m.summary
               FROM memories m
               WHERE m.tenant_id = $1 AND m.subject_id = $2 AND m.kind = 'episode_summary' AND m.status = 'active'
                 AND cardinality(m.source_episode_ids) = 1 AND NOT m.metadata @> '{"digest": "session"}'
                 AND NOT m.metadata @> '{"voice": "evidence"}'
               ORDER BY m.source_episode_ids[1], m.id),
           contradicted AS (
               SELECT DISTINCT unnest(m.source_episode_ids) AS episode_id
               FROM supersession_records r
               JOIN memories m ON m.tenant_id = r.tenant_id AND m.subject_id = r.subject_id
                 AND m.id = r.superseded_memory_id
               WHERE r.tenant_id = $1 AND r.subject_id = $2 AND r.rule = 'claim_contradiction')
           SELECT e.id, e.session_id AS "session_id!", e.source, e.occurred_at,
                  jsonb_typeof(e.payload->'messages') IS NOT DISTINCT FROM 'array' AS "chat!",
                  s.summary AS "summary!"
           FROM episodes e
           JOIN summaries s ON s.episode_id = e.id
           WHERE e.tenant_id = $1 AND e.subject_id = $2 AND e.session_id = ANY($3) AND e.seq <= $4
             AND (jsonb_typeof(e.payload->'messages') IS DISTINCT FROM 'array'
                  OR e.payload->'messages' @> '[{"role": "user"}]'
                  OR e.payload->'messages' @> '[{"role": "human"}]')
             AND e.id NOT IN (SELECT c.episode_id FROM contradicted c WHERE c.episode_id IS NOT NULL)
           ORDER BY e.session_id, e.occurred_at, e.seq"#,
        tenant,
        subject_id,
        sessions,
        through_seq
    )
    .fetch_all(conn)
    .await
}

/// A digest to write.
#[derive(Debug, Clone)]
pub struct NewDigest {
    pub id: Uuid,
    pub content: String,
    pub summary: String,
    pub valid_from: DateTime<Utc>,
    pub sources: Vec<Uuid>,
    pub metadata: Value,
    pub order_tiebreak: String,
    pub embedding: Option<Vector>,
}

/// Inserts one digest (its sources are the messages whose lines it shows).
pub async fn insert(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    d: &NewDigest,
    embedding_model: &str,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO memories (tenant_id, subject_id, id, kind, content, summary, confidence, valid_from, \
         source_episode_ids, metadata, order_at, order_tiebreak, embedding, embedding_model) \
         VALUES ($1, $2, $3, 'episode_summary', $4, $5, $6, $7, $8, $9, $7, $10, $11, \
         CASE WHEN $11::vector IS NULL THEN NULL ELSE $12 END)",
        tenant,
        subject_id,
        d.id,
        d.content,
        d.summary,
        DIGEST_CONFIDENCE,
        d.valid_from,
        &d.sources,
        d.metadata,
        d.order_tiebreak,
        d.embedding.as_ref() as Option<&Vector>,
        embedding_model
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Confidence of a digest: its lines are the user's words, quoted.
const DIGEST_CONFIDENCE: f64 = 0.8;
