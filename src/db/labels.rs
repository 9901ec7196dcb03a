//! Suggested-label queries: the review queue and promotion.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::model::memory::MemoryKind;

/// A memory waiting for label review.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SuggestedRow {
    pub id: Uuid,
    pub subject_id: String,
    pub kind: MemoryKind,
    pub content: String,
    pub summary: String,
    pub suggested_labels: Vec<String>,
    pub sensitivity_labels: Vec<String>,
    pub created_at: DateTime<Utc>,
}

/// What a filter over the review queue selects.
#[derive(Debug, Clone, Default)]
pub struct SuggestedFilter<'a> {
    pub subject_id: Option<&'a str>,
    pub label: Option<&'a str>,
}

/// One page of the tenant's memories with suggestions, newest first, and the total count.
pub async fn suggested_page(
    conn: &mut PgConnection,
    tenant: &str,
    filter: &SuggestedFilter<'_>,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<SuggestedRow>, i64)> {
    // Both statements select the queue with the same WHERE.
    let total: i64 = sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM memories WHERE tenant_id = $1 AND suggested_labels <> '{}'
           AND ($2::text IS NULL OR subject_id = $2) AND ($3::text IS NULL OR suggested_labels @> ARRAY[$3::text])"#,
        tenant,
        filter.subject_id,
        filter.label
    )
    .fetch_one(&mut *conn)
    .await?;
    let rows = sqlx::query_as!(
        SuggestedRow,
        "SELECT id, subject_id, kind AS \"kind: MemoryKind\", content, summary, suggested_labels, sensitivity_labels, created_at \
         FROM memories WHERE tenant_id = $1 AND suggested_labels <> '{}' \
         AND ($2::text IS NULL OR subject_id = $2) AND ($3::text IS NULL OR suggested_labels @> ARRAY[$3::text]) \
         ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5",
        tenant,
        filter.subject_id,
        filter.label,
        limit,
        offset
    )
    .fetch_all(conn)
    .await?;
    Ok((rows, total))
}

/// The memory's label columns, locked for a promotion; None when the tenant has no such memory.
pub async fn lock_labels(
    conn: &mut PgConnection,
    tenant: &str,
    id: Uuid,
) -> sqlx::Result<Option<(Vec<String>, Vec<String>)>> {
    let row = sqlx::query!(
        "SELECT suggested_labels, sensitivity_labels FROM memories WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
        tenant,
        id
    )
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|r| (r.suggested_labels, r.sensitivity_labels)))
}

/// Writes a promotion: the new label columns and one more `metadata.label_promotions` entry.
pub async fn apply_promotion(
    conn: &mut PgConnection,
    tenant: &str,
    id: Uuid,
    sensitivity: &[String],
    suggested: &[String],
    entry: &Value,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE memories SET sensitivity_labels = $3, suggested_labels = $4, updated_at = now(), \
         metadata = jsonb_set(metadata, '{label_promotions}', \
             CASE WHEN jsonb_typeof(metadata->'label_promotions') = 'array' \
                  THEN metadata->'label_promotions' ELSE '[]'::jsonb END || jsonb_build_array($5::jsonb)) \
         WHERE tenant_id = $1 AND id = $2",
        tenant,
        id,
        sensitivity,
        suggested,
        sqlx::types::Json(entry) as _
    )
    .execute(conn)
    .await?;
    Ok(())
}
