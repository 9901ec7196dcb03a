//! Per-subject term statistics (`subject_terms`): how many of a subject's memories and compiled
//! episodes carry each lexeme, and since when a lexeme counts as common. Context leaves common
//! terms out of its full-text queries (see `mnemo_task_query` in [`crate::db::context`]).

use sqlx::PgConnection;
use uuid::Uuid;

/// A lexeme found in this many of one subject's memories (or of its episodes) is common.
/// Migration 0012 backfills with the same number; changing it changes rankings.
pub const COMMON_TERM_DF: i64 = 1000;

/// Lexemes longer than this (in bytes) are not counted: no such token is ever common, and with a
/// long subject id its key would exceed the btree row limit of `subject_terms_pkey`.
pub const MAX_TERM_BYTES: i32 = 256;

/// Counts the lexemes of the given new memories and of the episodes with seq in
/// `(after_seq, last_seq]`, in the compile transaction; a lexeme whose count reaches
/// [`COMMON_TERM_DF`] becomes common as of this transaction's start (the memories' `recorded_at`).
pub async fn count_batch(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    memory_ids: &[Uuid],
    after_seq: i64,
    last_seq: i64,
) -> sqlx::Result<()> {
    // Rows are upserted in key order, so two writers could never deadlock on them (compile
    // already serialises a subject; this keeps it true if that changes).
    sqlx::query!(
        "INSERT INTO subject_terms AS s (tenant_id, subject_id, source, lexeme, df, common_since) \
         SELECT $1, $2, src, lexeme, count(*), CASE WHEN count(*) >= $6 THEN now() END FROM ( \
           SELECT 'memory' AS src, t.lexeme FROM memories m, unnest(m.content_tsv) t \
           WHERE m.tenant_id = $1 AND m.subject_id = $2 AND m.id = ANY($3) AND octet_length(t.lexeme) <= $7 \
           UNION ALL \
           SELECT 'episode', t.lexeme FROM episodes e, unnest(e.search_tsv) t \
           WHERE e.tenant_id = $1 AND e.subject_id = $2 AND e.seq > $4 AND e.seq <= $5 \
             AND octet_length(t.lexeme) <= $7) x \
         GROUP BY src, lexeme ORDER BY src, lexeme \
         ON CONFLICT (tenant_id, subject_id, source, lexeme) DO UPDATE SET df = s.df + EXCLUDED.df, \
           common_since = COALESCE(s.common_since, CASE WHEN s.df + EXCLUDED.df >= $6 THEN now() END)",
        tenant,
        subject_id,
        memory_ids,
        after_seq,
        last_seq,
        COMMON_TERM_DF,
        MAX_TERM_BYTES
    )
    .execute(conn)
    .await?;
    Ok(())
}
