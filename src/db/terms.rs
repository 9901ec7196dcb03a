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

/// How one source's counts move with a batch (see [`count_batch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counting {
    /// The subject has counts for the source: add the batch's.
    Add,
    /// The subject has none and reaches [`COMMON_TERM_DF`] items with this batch: count every item.
    Backfill,
    /// The subject has none and stays under [`COMMON_TERM_DF`] items: no lexeme can be common yet.
    Defer,
}

impl Counting {
    fn of(has_counts: bool, items: i64) -> Self {
        match (has_counts, items >= COMMON_TERM_DF) {
            (true, _) => Counting::Add,
            (false, true) => Counting::Backfill,
            (false, false) => Counting::Defer,
        }
    }
}

/// Counts the lexemes of the given new memories and of the episodes with seq in
/// `(after_seq, last_seq]`, in the compile transaction; a lexeme whose count reaches
/// [`COMMON_TERM_DF`] becomes common as of this transaction's start (the memories' `recorded_at`).
///
/// A lexeme's count never exceeds the number of the subject's items of that source, so while a
/// subject has fewer than [`COMMON_TERM_DF`] memories (or counted episodes) none of its lexemes can
/// be common, and nothing is written: counting every lexeme of a batch was the largest statement
/// of a small subject's compile (about 8 ms and 110 kB of WAL for 50 episodes). The batch that
/// brings a source to [`COMMON_TERM_DF`] items counts all of them at once, and later batches add
/// theirs, so every lexeme becomes common in the same transaction as when each batch was counted
/// as it came. Subjects counted batch by batch before this rule keep their counts and go on adding.
pub async fn count_batch(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    memory_ids: &[Uuid],
    after_seq: i64,
    last_seq: i64,
) -> sqlx::Result<()> {
    // Whether the subject has counts per source, and otherwise its items (up to the threshold;
    // the memories of this batch are already in the table).
    let state = sqlx::query!(
        r#"SELECT
             EXISTS (SELECT 1 FROM subject_terms s WHERE s.tenant_id = $1 AND s.subject_id = $2 AND s.source = 'memory')
               AS "memory_counted!",
             EXISTS (SELECT 1 FROM subject_terms s WHERE s.tenant_id = $1 AND s.subject_id = $2 AND s.source = 'episode')
               AS "episode_counted!",
             (SELECT count(*) FROM (SELECT 1 FROM memories m WHERE m.tenant_id = $1 AND m.subject_id = $2 LIMIT $3) x)
               AS "memories!",
             (SELECT count(*) FROM (SELECT 1 FROM episodes e WHERE e.tenant_id = $1 AND e.subject_id = $2
                                      AND e.seq <= $4 LIMIT $3) x) AS "episodes!""#,
        tenant,
        subject_id,
        COMMON_TERM_DF,
        last_seq
    )
    .fetch_one(&mut *conn)
    .await?;
    let memory = Counting::of(state.memory_counted, state.memories);
    let episode = Counting::of(state.episode_counted, state.episodes);
    if memory == Counting::Add || episode == Counting::Add {
        let ids = if memory == Counting::Add { memory_ids } else { &[] };
        let after = if episode == Counting::Add { after_seq } else { last_seq };
        add(conn, tenant, subject_id, ids, after, last_seq).await?;
    }
    if memory == Counting::Backfill || episode == Counting::Backfill {
        backfill(conn, tenant, subject_id, memory == Counting::Backfill, episode == Counting::Backfill, last_seq)
            .await?;
    }
    Ok(())
}

/// Adds the lexemes of the memories `memory_ids` and of the episodes with seq in
/// `(after_seq, last_seq]` to the subject's counts.
async fn add(
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

/// Counts the lexemes of every memory (with `memories`) and of every episode up to `last_seq`
/// (with `episodes`) of a subject that has no counts for that source yet.
async fn backfill(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    memories: bool,
    episodes: bool,
    last_seq: i64,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO subject_terms AS s (tenant_id, subject_id, source, lexeme, df, common_since) \
         SELECT $1, $2, src, lexeme, count(*), CASE WHEN count(*) >= $6 THEN now() END FROM ( \
           SELECT 'memory' AS src, t.lexeme FROM memories m, unnest(m.content_tsv) t \
           WHERE $3 AND m.tenant_id = $1 AND m.subject_id = $2 AND octet_length(t.lexeme) <= $7 \
           UNION ALL \
           SELECT 'episode', t.lexeme FROM episodes e, unnest(e.search_tsv) t \
           WHERE $4 AND e.tenant_id = $1 AND e.subject_id = $2 AND e.seq <= $5 \
             AND octet_length(t.lexeme) <= $7) x \
         GROUP BY src, lexeme ORDER BY src, lexeme \
         ON CONFLICT (tenant_id, subject_id, source, lexeme) DO UPDATE SET df = EXCLUDED.df, \
           common_since = COALESCE(s.common_since, EXCLUDED.common_since)",
        tenant,
        subject_id,
        memories,
        episodes,
        last_seq,
        COMMON_TERM_DF,
        MAX_TERM_BYTES
    )
    .execute(conn)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_counted_once_it_can_hold_a_common_lexeme() {
        assert_eq!(Counting::of(true, 0), Counting::Add);
        assert_eq!(Counting::of(true, COMMON_TERM_DF), Counting::Add);
        assert_eq!(Counting::of(false, COMMON_TERM_DF - 1), Counting::Defer);
        assert_eq!(Counting::of(false, COMMON_TERM_DF), Counting::Backfill);
    }
}
