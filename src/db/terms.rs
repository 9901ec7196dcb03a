//! Per-subject term statistics (`subject_terms`): how many of a subject's memories and compiled
//! episodes carry each lexeme, and since when a lexeme counts as common. Context leaves common
//! terms out of its full-text queries (see `mnemo_task_query` in [`crate::db::context`]).

use sqlx::PgConnection;
use uuid::Uuid;

/// A lexeme found in this many of one subject's memories (or of its episodes) is common.
/// Changing it changes rankings (counts already over it keep their `common_since`).
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
    /// From the subject's items of the source, or None when it already has counts for it.
    fn of(uncounted_items: Option<i64>) -> Self {
        match uncounted_items {
            None => Counting::Add,
            Some(n) if n >= COMMON_TERM_DF => Counting::Backfill,
            Some(_) => Counting::Defer,
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
    // Per source: None when the subject has counts, else its items (up to the threshold; the
    // memories of this batch are already in the table).
    let items = sqlx::query!(
        r#"SELECT
             CASE WHEN NOT EXISTS (SELECT 1 FROM subject_terms s
                                   WHERE s.tenant_id = $1 AND s.subject_id = $2 AND s.source = 'memory')
                  THEN (SELECT count(*) FROM (SELECT 1 FROM memories m
                                              WHERE m.tenant_id = $1 AND m.subject_id = $2 LIMIT $3) x) END AS memories,
             CASE WHEN NOT EXISTS (SELECT 1 FROM subject_terms s
                                   WHERE s.tenant_id = $1 AND s.subject_id = $2 AND s.source = 'episode')
                  THEN (SELECT count(*) FROM (SELECT 1 FROM episodes e
                                              WHERE e.tenant_id = $1 AND e.subject_id = $2 AND e.seq <= $4 LIMIT $3) x)
             END AS episodes"#,
        tenant,
        subject_id,
        COMMON_TERM_DF,
        last_seq
    )
    .fetch_one(&mut *conn)
    .await?;
    let memory = Counting::of(items.memories);
    let episode = Counting::of(items.episodes);
    // A backfill counts like a batch of every item: no rows exist yet, so the sums are the counts.
    let all_memories;
    let memory_ids = match memory {
        Counting::Add => memory_ids,
        Counting::Backfill => {
            all_memories = sqlx::query_scalar!(
                "SELECT id FROM memories WHERE tenant_id = $1 AND subject_id = $2",
                tenant,
                subject_id
            )
            .fetch_all(&mut *conn)
            .await?;
            &all_memories
        }
        Counting::Defer => &[],
    };
    let after_seq = match episode {
        Counting::Add => after_seq,
        Counting::Backfill => 0,
        Counting::Defer => last_seq,
    };
    if memory_ids.is_empty() && after_seq >= last_seq {
        return Ok(());
    }
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
    .execute(&mut *conn)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_counted_once_it_can_hold_a_common_lexeme() {
        assert_eq!(Counting::of(None), Counting::Add);
        assert_eq!(Counting::of(Some(0)), Counting::Defer);
        assert_eq!(Counting::of(Some(COMMON_TERM_DF - 1)), Counting::Defer);
        assert_eq!(Counting::of(Some(COMMON_TERM_DF)), Counting::Backfill);
    }
}
