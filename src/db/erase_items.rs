//! Item erasure queries: find, delete and then prove gone chosen episodes and memories of one
//! subject, the memories derived from those episodes, and what names them.

use sqlx::PgConnection;
use uuid::Uuid;

/// Which of `ids` are episodes of the subject (in the tenant).
pub async fn episodes_of(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    ids: &[Uuid],
) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar!(
        "SELECT id FROM episodes WHERE tenant_id = $1 AND subject_id = $2 AND id = ANY($3::uuid[]) ORDER BY id",
        tenant,
        subject_id,
        ids
    )
    .fetch_all(conn)
    .await
}

/// Which of `ids` are memories of the subject, with every memory derived from one of
/// `episodes` (a source episode among them), sorted and distinct.
pub async fn memories_of(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    ids: &[Uuid],
    episodes: &[Uuid],
) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar!(
        "SELECT id FROM memories WHERE tenant_id = $1 AND subject_id = $2 \
         AND (id = ANY($3::uuid[]) OR source_episode_ids && $4::uuid[]) ORDER BY id",
        tenant,
        subject_id,
        ids,
        episodes
    )
    .fetch_all(conn)
    .await
}

/// Deletes the subject's episodes among `ids`; returns the count (the transaction must allow
/// episode deletes: [`super::erase::allow_episode_delete`]).
pub async fn delete_episodes(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    ids: &[Uuid],
) -> sqlx::Result<u64> {
    let r = sqlx::query!(
        "DELETE FROM episodes WHERE tenant_id = $1 AND subject_id = $2 AND id = ANY($3::uuid[])",
        tenant,
        subject_id,
        ids
    )
    .execute(conn)
    .await?;
    Ok(r.rows_affected())
}

/// Deletes the embeddings of the subject's episodes among `ids`; returns the count.
pub async fn delete_embeddings(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    ids: &[Uuid],
) -> sqlx::Result<u64> {
    let r = sqlx::query!(
        "DELETE FROM episode_embeddings WHERE tenant_id = $1 AND subject_id = $2 AND episode_id = ANY($3::uuid[])",
        tenant,
        subject_id,
        ids
    )
    .execute(conn)
    .await?;
    Ok(r.rows_affected())
}

/// Deletes the passages of the subject's episodes among `ids`; returns the count.
pub async fn delete_passages(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    ids: &[Uuid],
) -> sqlx::Result<u64> {
    let r = sqlx::query!(
        "DELETE FROM episode_passages WHERE tenant_id = $1 AND subject_id = $2 AND episode_id = ANY($3::uuid[])",
        tenant,
        subject_id,
        ids
    )
    .execute(conn)
    .await?;
    Ok(r.rows_affected())
}

/// Deletes the supersession records naming one of the memories `ids` (either side); returns
/// the count.
pub async fn delete_supersessions(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    ids: &[Uuid],
) -> sqlx::Result<u64> {
    let r = sqlx::query!(
        "DELETE FROM supersession_records WHERE tenant_id = $1 AND subject_id = $2 \
         AND (superseded_memory_id = ANY($3::uuid[]) OR superseding_memory_id = ANY($3::uuid[]))",
        tenant,
        subject_id,
        ids
    )
    .execute(conn)
    .await?;
    Ok(r.rows_affected())
}

/// Deletes the subject's memories among `ids`; returns the count.
pub async fn delete_memories(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    ids: &[Uuid],
) -> sqlx::Result<u64> {
    let r = sqlx::query!(
        "DELETE FROM memories WHERE tenant_id = $1 AND subject_id = $2 AND id = ANY($3::uuid[])",
        tenant,
        subject_id,
        ids
    )
    .execute(conn)
    .await?;
    Ok(r.rows_affected())
}

/// Ids of the subject's active receipts whose selected entries name one of the episodes or
/// memories (an entry's own id, or a memory entry's source episodes), in chain order.
pub async fn receipts_naming(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    episodes: &[String],
    memories: &[String],
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar!(
        r#"SELECT r.receipt_id FROM receipts r
           WHERE r.tenant_id = $1 AND r.subject_id = $2 AND r.status = 'active'
             AND EXISTS (SELECT 1 FROM jsonb_array_elements(r.body::jsonb -> 'selected_entries') e
                         WHERE e ->> 'episode_id' = ANY($3::text[]) OR e ->> 'memory_id' = ANY($4::text[])
                            OR COALESCE(e -> 'source_episode_ids', '[]'::jsonb) ?| $3::text[])
           ORDER BY r.seq"#,
        tenant,
        subject_id,
        episodes,
        memories
    )
    .fetch_all(conn)
    .await
}

/// Drops, from the subject's other memories, the `metadata.revises` entries that name an erased
/// memory or episode (the same-topic judge's marks, [`crate::db::supersession::mark_revises`]);
/// returns how many memories changed.
pub async fn strip_revises(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    episodes: &[Uuid],
    memories: &[Uuid],
) -> sqlx::Result<u64> {
    let episode_text: Vec<String> = episodes.iter().map(Uuid::to_string).collect();
    let memory_text: Vec<String> = memories.iter().map(Uuid::to_string).collect();
    let r = sqlx::query!(
        r#"UPDATE memories m SET metadata = CASE WHEN k.kept = '[]'::jsonb THEN m.metadata - 'revises'
                                                  ELSE jsonb_set(m.metadata, '{revises}', k.kept) END
           FROM (SELECT m2.id, count(*) AS total,
                        COALESCE(jsonb_agg(r.e) FILTER (WHERE NOT (r.e->>'memory' = ANY($4::text[])
                                 OR COALESCE(r.e->'episodes' ?| $3::text[], false))), '[]'::jsonb) AS kept
                 FROM memories m2 CROSS JOIN LATERAL jsonb_array_elements(m2.metadata->'revises') r(e)
                 WHERE m2.tenant_id = $1 AND m2.subject_id = $2 AND jsonb_typeof(m2.metadata->'revises') = 'array'
                 GROUP BY m2.id) k
           WHERE m.tenant_id = $1 AND m.subject_id = $2 AND m.id = k.id AND jsonb_array_length(k.kept) < k.total"#,
        tenant,
        subject_id,
        &episode_text,
        &memory_text
    )
    .execute(conn)
    .await?;
    Ok(r.rows_affected())
}

/// Rows still naming the erased items, per table (the check before commit): the episodes,
/// their embeddings, memories with those ids, derived from those episodes or marking them as
/// earlier (`metadata.revises`), supersession
/// records naming the memories, and active receipts naming any of them.
pub async fn remaining(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    episodes: &[Uuid],
    memories: &[Uuid],
) -> sqlx::Result<Vec<(String, i64)>> {
    let episode_text: Vec<String> = episodes.iter().map(Uuid::to_string).collect();
    let memory_text: Vec<String> = memories.iter().map(Uuid::to_string).collect();
    let row = sqlx::query!(
        r#"SELECT
             (SELECT count(*) FROM episodes WHERE tenant_id = $1 AND subject_id = $2 AND id = ANY($3::uuid[])) AS "episodes!",
             (SELECT count(*) FROM episode_embeddings WHERE tenant_id = $1 AND subject_id = $2
                AND episode_id = ANY($3::uuid[])) AS "episode_embeddings!",
             (SELECT count(*) FROM episode_passages WHERE tenant_id = $1 AND subject_id = $2
                AND episode_id = ANY($3::uuid[])) AS "episode_passages!",
             (SELECT count(*) FROM memories WHERE tenant_id = $1 AND subject_id = $2
                AND (id = ANY($4::uuid[]) OR source_episode_ids && $3::uuid[]
                     OR (jsonb_typeof(metadata->'revises') = 'array' AND EXISTS (
                         SELECT 1 FROM jsonb_array_elements(metadata->'revises') r(e)
                         WHERE r.e->>'memory' = ANY($4::uuid[]::text[])
                            OR COALESCE(r.e->'episodes' ?| $3::uuid[]::text[], false))))) AS "memories!",
             (SELECT count(*) FROM supersession_records WHERE tenant_id = $1 AND subject_id = $2
                AND (superseded_memory_id = ANY($4::uuid[]) OR superseding_memory_id = ANY($4::uuid[])))
                AS "supersession_records!""#,
        tenant,
        subject_id,
        episodes,
        memories
    )
    .fetch_one(&mut *conn)
    .await?;
    let receipts = receipts_naming(conn, tenant, subject_id, &episode_text, &memory_text).await?.len() as i64;
    Ok(vec![
        ("episodes".to_string(), row.episodes),
        ("episode_embeddings".to_string(), row.episode_embeddings),
        ("episode_passages".to_string(), row.episode_passages),
        ("memories".to_string(), row.memories),
        ("supersession_records".to_string(), row.supersession_records),
        ("receipts".to_string(), receipts),
    ])
}

/// Gives the subject a new memory version, so every server's copy of it
/// (small subjects' rows, large subjects' lexical state) stops matching, even when only
/// episodes without memories were erased.
pub async fn bump_version(conn: &mut PgConnection, tenant: &str, subject_id: &str) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO subject_versions (tenant_id, subject_id, version) VALUES ($1, $2, nextval('subject_version_seq')) \
         ON CONFLICT (tenant_id, subject_id) DO UPDATE SET version = EXCLUDED.version",
        tenant,
        subject_id
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Deletes the subject's ingest counter row when it is the one [`super::erase::hold_counter`]
/// created (a subject that had none keeps none).
pub async fn drop_new_counter(conn: &mut PgConnection, tenant: &str, subject_id: &str) -> sqlx::Result<()> {
    sqlx::query!(
        "DELETE FROM subject_counters WHERE tenant_id = $1 AND subject_id = $2 AND last_seq = 0",
        tenant,
        subject_id
    )
    .execute(conn)
    .await?;
    Ok(())
}
