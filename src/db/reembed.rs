//! Queries for `mnemo reembed`: rows whose vector came from another model, in key order.

use pgvector::Vector;
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

/// A row key plus the text to embed.
#[derive(Debug, Clone)]
pub struct Pending {
    pub tenant_id: String,
    pub subject_id: String,
    pub id: Uuid,
    pub content: Value,
}

/// Key after which the next page starts.
pub type Key = (String, String, Uuid);

/// Counts memories and episodes not yet embedded with `model`.
pub async fn count(conn: &mut PgConnection, model: &str) -> sqlx::Result<(i64, i64)> {
    let r = sqlx::query!(
        r#"SELECT (SELECT count(*) FROM memories WHERE embedding_model IS DISTINCT FROM $1) AS "memories!",
           (SELECT count(*) FROM episodes e LEFT JOIN episode_embeddings x ON x.tenant_id = e.tenant_id
            AND x.subject_id = e.subject_id AND x.episode_id = e.id WHERE x.embedding_model IS DISTINCT FROM $1)
           AS "episodes!""#,
        model
    )
    .fetch_one(conn)
    .await?;
    Ok((r.memories, r.episodes))
}

/// The next page of memories not embedded with `model`, after `after` in key order.
pub async fn memories(conn: &mut PgConnection, model: &str, after: &Key, limit: i64) -> sqlx::Result<Vec<Pending>> {
    sqlx::query_as!(
        Pending,
        r#"SELECT tenant_id, subject_id, id, to_jsonb(content) AS "content!" FROM memories
           WHERE embedding_model IS DISTINCT FROM $1 AND (tenant_id, subject_id, id) > ($2, $3, $4)
           ORDER BY tenant_id, subject_id, id LIMIT $5"#,
        model,
        after.0,
        after.1,
        after.2,
        limit
    )
    .fetch_all(conn)
    .await
}

/// The next page of episodes not embedded with `model` (content = payload).
pub async fn episodes(conn: &mut PgConnection, model: &str, after: &Key, limit: i64) -> sqlx::Result<Vec<Pending>> {
    sqlx::query_as!(
        Pending,
        "SELECT e.tenant_id, e.subject_id, e.id, e.payload AS content FROM episodes e \
         LEFT JOIN episode_embeddings x ON x.tenant_id = e.tenant_id AND x.subject_id = e.subject_id AND x.episode_id = e.id \
         WHERE x.embedding_model IS DISTINCT FROM $1 AND (e.tenant_id, e.subject_id, e.id) > ($2, $3, $4) \
         ORDER BY e.tenant_id, e.subject_id, e.id LIMIT $5",
        model,
        after.0,
        after.1,
        after.2,
        limit
    )
    .fetch_all(conn)
    .await
}

/// Writes one memory's new vector.
pub async fn set_memory_embedding(
    conn: &mut PgConnection,
    row: &Pending,
    vector: &Vector,
    model: &str,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE memories SET embedding = $4, embedding_model = $5 \
         WHERE tenant_id = $1 AND subject_id = $2 AND id = $3",
        row.tenant_id,
        row.subject_id,
        row.id,
        vector as &Vector,
        model
    )
    .execute(conn)
    .await?;
    Ok(())
}
