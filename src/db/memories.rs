//! Queries on the `memories` table.

use chrono::{DateTime, Utc};
use pgvector::Vector;
use sqlx::PgConnection;

use crate::model::memory::{Memory, MemoryKind, MemoryStatus};

/// One page of a subject's memories in (created_at, id) order, plus whether more exist;
/// `valid_from` bounds (inclusive, None = open) keep only memories valid from inside them.
#[allow(clippy::too_many_arguments)]
pub async fn page(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    limit: i64,
    offset: i64,
    newest_first: bool,
    active_only: bool,
    valid_from: (Option<DateTime<Utc>>, Option<DateTime<Utc>>),
) -> sqlx::Result<(Vec<Memory>, bool)> {
    // Two statements, one per direction (an ORDER BY direction cannot be a parameter); `$7`
    // keeps only active, unexpired memories.
    let mut rows: Vec<Memory> = if newest_first {
        sqlx::query_as!(
            Memory,
            "SELECT id, subject_id, kind AS \"kind: MemoryKind\", content, summary, confidence, valid_from, valid_to, source_episode_ids, metadata, status AS \"status: MemoryStatus\", \
         sensitivity_labels, suggested_labels, created_at, updated_at FROM memories WHERE tenant_id = $1 AND subject_id = $2 \
             AND (NOT $7::bool OR (status = 'active' AND (valid_to IS NULL OR valid_to > now()))) \
             AND ($5::timestamptz IS NULL OR valid_from >= $5) AND ($6::timestamptz IS NULL OR valid_from <= $6) \
             ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4",
            tenant,
            subject_id,
            limit + 1,
            offset,
            valid_from.0,
            valid_from.1,
            active_only
        )
        .fetch_all(&mut *conn)
        .await?
    } else {
        sqlx::query_as!(
            Memory,
            "SELECT id, subject_id, kind AS \"kind: MemoryKind\", content, summary, confidence, valid_from, valid_to, source_episode_ids, metadata, status AS \"status: MemoryStatus\", \
         sensitivity_labels, suggested_labels, created_at, updated_at FROM memories WHERE tenant_id = $1 AND subject_id = $2 \
             AND (NOT $7::bool OR (status = 'active' AND (valid_to IS NULL OR valid_to > now()))) \
             AND ($5::timestamptz IS NULL OR valid_from >= $5) AND ($6::timestamptz IS NULL OR valid_from <= $6) \
             ORDER BY created_at ASC, id ASC LIMIT $3 OFFSET $4",
            tenant,
            subject_id,
            limit + 1,
            offset,
            valid_from.0,
            valid_from.1,
            active_only
        )
        .fetch_all(&mut *conn)
        .await?
    };
    let has_more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    if newest_first {
        rows.reverse();
    }
    Ok((rows, has_more))
}

/// Active, unexpired memories whose content contains `q` (case-insensitive), newest first.
pub async fn search_text(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    q: Option<&str>,
    kind: Option<MemoryKind>,
    limit: i64,
) -> sqlx::Result<Vec<Memory>> {
    let pattern = q.map(|q| format!("%{}%", escape_like(q)));
    sqlx::query_as!(
        Memory,
        "SELECT id, subject_id, kind AS \"kind: MemoryKind\", content, summary, confidence, valid_from, valid_to, source_episode_ids, metadata, status AS \"status: MemoryStatus\", \
         sensitivity_labels, suggested_labels, created_at, updated_at FROM memories WHERE tenant_id = $1 AND subject_id = $2 AND status = 'active' \
         AND (valid_to IS NULL OR valid_to > now()) AND ($3::text IS NULL OR content ILIKE $3 ESCAPE '\\') \
         AND ($4::text IS NULL OR kind = $4) ORDER BY created_at DESC, id DESC LIMIT $5",
        tenant,
        subject_id,
        pattern,
        kind as Option<MemoryKind>,
        limit
    )
    .fetch_all(conn)
    .await
}

/// Escapes LIKE wildcards so user text matches literally.
pub fn escape_like(s: &str) -> String {
    s.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")
}

/// Semantic lane: (id, similarity in 0..1) of the nearest active memories embedded with `model`.
pub async fn nearest(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    query_vector: &Vector,
    model: &str,
    kind: Option<MemoryKind>,
    limit: i64,
) -> sqlx::Result<Vec<(uuid::Uuid, f64)>> {
    let rows = sqlx::query!(
        r#"SELECT id, 1 - (embedding <=> $3) / 2 AS "sim!" FROM memories
           WHERE tenant_id = $1 AND subject_id = $2 AND status = 'active' AND (valid_to IS NULL OR valid_to > now())
           AND embedding_model = $4 AND ($5::text IS NULL OR kind = $5)
           ORDER BY embedding <=> $3, id LIMIT $6"#,
        tenant,
        subject_id,
        query_vector as &Vector,
        model,
        kind as Option<MemoryKind>,
        limit
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.id, r.sim)).collect())
}

/// Full-text lane: (id, ts_rank_cd) of active memories matching `q` (the subject's key is what
/// lets the planner use the full-text index; the tenant routes it on Citus).
pub async fn full_text(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    q: &str,
    kind: Option<MemoryKind>,
    limit: i64,
) -> sqlx::Result<Vec<(uuid::Uuid, f64)>> {
    let rows = sqlx::query!(
        r#"SELECT id, ts_rank_cd(content_tsv, plainto_tsquery('english', $3))::float8 AS "r!" FROM memories
           WHERE tenant_id = $1 AND mnemo_subject_key(tenant_id, subject_id) = mnemo_subject_key($1, $2)
           AND status = 'active' AND (valid_to IS NULL OR valid_to > now())
           AND content_tsv @@ plainto_tsquery('english', $3) AND ($4::text IS NULL OR kind = $4)
           ORDER BY 2 DESC, id LIMIT $5"#,
        tenant,
        subject_id,
        q,
        kind as Option<MemoryKind>,
        limit
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.id, r.r)).collect())
}

/// Memories of the tenant by id, in no particular order.
pub async fn by_ids(conn: &mut PgConnection, tenant: &str, ids: &[uuid::Uuid]) -> sqlx::Result<Vec<Memory>> {
    sqlx::query_as!(Memory, "SELECT id, subject_id, kind AS \"kind: MemoryKind\", content, summary, confidence, valid_from, valid_to, source_episode_ids, metadata, status AS \"status: MemoryStatus\", \
         sensitivity_labels, suggested_labels, created_at, updated_at FROM memories WHERE tenant_id = $1 AND id = ANY($2)", tenant, ids)
        .fetch_all(conn)
        .await
}

/// Replaces a memory's sensitivity labels; None when the tenant has no such memory.
pub async fn set_labels(
    conn: &mut PgConnection,
    tenant: &str,
    id: uuid::Uuid,
    labels: &[String],
) -> sqlx::Result<Option<Memory>> {
    sqlx::query_as!(
        Memory,
        "UPDATE memories SET sensitivity_labels = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2 \
         RETURNING id, subject_id, kind AS \"kind: MemoryKind\", content, summary, confidence, valid_from, valid_to, source_episode_ids, metadata, status AS \"status: MemoryStatus\", \
         sensitivity_labels, suggested_labels, created_at, updated_at",
        tenant,
        id,
        labels
    )
    .fetch_optional(conn)
    .await
}

/// Tombstones one memory of the tenant's subject (no longer searched or recalled; the row and
/// its history stay); None when there is no such live memory.
pub async fn tombstone(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    id: uuid::Uuid,
) -> sqlx::Result<Option<Memory>> {
    sqlx::query_as!(
        Memory,
        "UPDATE memories SET status = 'tombstoned', superseded_at = COALESCE(superseded_at, now()), \
         updated_at = now() WHERE tenant_id = $1 AND subject_id = $2 AND id = $3 AND status <> 'tombstoned' \
         RETURNING id, subject_id, kind AS \"kind: MemoryKind\", content, summary, confidence, valid_from, valid_to, source_episode_ids, metadata, status AS \"status: MemoryStatus\", \
         sensitivity_labels, suggested_labels, created_at, updated_at",
        tenant,
        subject_id,
        id
    )
    .fetch_optional(conn)
    .await
}

/// A current fact for briefs: id, text, labels.
#[derive(Debug, Clone)]
pub struct FactRow {
    pub id: uuid::Uuid,
    pub content: String,
    pub sensitivity_labels: Vec<String>,
    pub source_episode_ids: Vec<uuid::Uuid>,
}

/// The subject's current facts (never evidence's: [`crate::model::voice`]): single-valued
/// claims first, then newest first.
pub async fn current_facts(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    limit: i64,
) -> sqlx::Result<Vec<FactRow>> {
    sqlx::query_as!(
        FactRow,
        "SELECT id, content, sensitivity_labels, source_episode_ids FROM memories WHERE tenant_id = $1 AND subject_id = $2 \
         AND status = 'active' AND kind = 'profile_fact' AND (valid_to IS NULL OR valid_to > now()) \
         AND (metadata->>'voice') IS DISTINCT FROM 'evidence' \
         ORDER BY claim_single DESC, valid_from DESC, id DESC LIMIT $3",
        tenant,
        subject_id,
        limit
    )
    .fetch_all(conn)
    .await
}
