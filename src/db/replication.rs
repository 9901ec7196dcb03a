//! WAL positions for routing reads to a streaming replica (read-your-writes).

use sqlx::PgPool;

/// The primary's current WAL write position, as text (`0/16B3748`).
pub async fn current_lsn(primary: &PgPool) -> sqlx::Result<String> {
    sqlx::query_scalar!(r#"SELECT pg_current_wal_lsn()::text AS "lsn!""#).fetch_one(primary).await
}

/// Whether the server has replayed the WAL up to `lsn` (a primary always has).
pub async fn replayed(replica: &PgPool, lsn: &str) -> sqlx::Result<bool> {
    // The lsn travels as text: sqlx has no Rust type for pg_lsn.
    sqlx::query_scalar!(
        r#"SELECT COALESCE(pg_last_wal_replay_lsn() >= $1::text::pg_lsn, NOT pg_is_in_recovery()) AS "replayed!""#,
        lsn
    )
    .fetch_one(replica)
    .await
}
