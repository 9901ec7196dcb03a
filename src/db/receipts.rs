//! The `receipts` table and the per-tenant chain head.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

/// The previous-hash of a tenant's first receipt.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// A stored receipt row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ReceiptRow {
    pub tenant_id: String,
    pub receipt_id: String,
    pub subject_id: String,
    pub seq: i64,
    pub prev_hash: String,
    pub receipt_hash: String,
    pub mode: String,
    pub body: String,
    pub status: String,
    pub tombstoned_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

/// Locks the tenant's chain head (creating it) and returns (last seq, last hash).
pub async fn lock_head(conn: &mut PgConnection, tenant: &str) -> sqlx::Result<(i64, String)> {
    sqlx::query!(
        "INSERT INTO receipt_chain_heads (tenant_id, last_seq, last_hash) VALUES ($1, 0, $2) ON CONFLICT DO NOTHING",
        tenant,
        GENESIS
    )
    .execute(&mut *conn)
    .await?;
    let head =
        sqlx::query!("SELECT last_seq, last_hash FROM receipt_chain_heads WHERE tenant_id = $1 FOR UPDATE", tenant)
            .fetch_one(conn)
            .await?;
    Ok((head.last_seq, head.last_hash))
}

/// A receipt about to be written.
#[derive(Debug, Clone)]
pub struct NewReceipt<'a> {
    pub receipt_id: &'a str,
    pub subject_id: &'a str,
    pub seq: i64,
    pub prev_hash: &'a str,
    pub receipt_hash: &'a str,
    pub mode: &'a str,
    pub parent_receipt_id: Option<&'a str>,
    pub context_hash: &'a str,
    pub body: &'a str,
}

/// Appends a receipt and moves the chain head to it.
pub async fn append(conn: &mut PgConnection, tenant: &str, r: &NewReceipt<'_>) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO receipts (tenant_id, receipt_id, subject_id, seq, prev_hash, receipt_hash, mode, parent_receipt_id, \
         context_hash, body) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        tenant,
        r.receipt_id,
        r.subject_id,
        r.seq,
        r.prev_hash,
        r.receipt_hash,
        r.mode,
        r.parent_receipt_id,
        r.context_hash,
        r.body
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!(
        "UPDATE receipt_chain_heads SET last_seq = $2, last_hash = $3 WHERE tenant_id = $1",
        tenant,
        r.seq,
        r.receipt_hash
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// One receipt of the tenant.
pub async fn get(conn: &mut PgConnection, tenant: &str, receipt_id: &str) -> sqlx::Result<Option<ReceiptRow>> {
    sqlx::query_as!(
        ReceiptRow,
        "SELECT tenant_id, receipt_id, subject_id, seq, prev_hash, receipt_hash, mode, body, status, tombstoned_at, created_at \
         FROM receipts WHERE tenant_id = $1 AND receipt_id = $2",
        tenant,
        receipt_id
    )
    .fetch_optional(conn)
    .await
}

/// A page of a subject's receipts, newest id first.
#[allow(clippy::too_many_arguments)]
pub async fn list(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    since: Option<DateTime<Utc>>,
    until: Option<DateTime<Utc>>,
    cursor: Option<&str>,
    limit: i64,
    include_tombstoned: bool,
) -> sqlx::Result<Vec<ReceiptRow>> {
    sqlx::query_as!(
        ReceiptRow,
        "SELECT tenant_id, receipt_id, subject_id, seq, prev_hash, receipt_hash, mode, body, status, tombstoned_at, created_at \
         FROM receipts WHERE tenant_id = $1 AND subject_id = $2 \
         AND ($3::timestamptz IS NULL OR created_at >= $3) AND ($4::timestamptz IS NULL OR created_at <= $4) \
         AND ($5::text IS NULL OR receipt_id < $5) AND ($6 OR status = 'active') \
         ORDER BY receipt_id DESC LIMIT $7",
        tenant,
        subject_id,
        since,
        until,
        cursor,
        include_tombstoned,
        limit
    )
    .fetch_all(conn)
    .await
}

/// The tenant's whole chain in order.
pub async fn chain(conn: &mut PgConnection, tenant: &str) -> sqlx::Result<Vec<ReceiptRow>> {
    sqlx::query_as!(ReceiptRow, "SELECT tenant_id, receipt_id, subject_id, seq, prev_hash, receipt_hash, mode, body, status, tombstoned_at, created_at FROM receipts WHERE tenant_id = $1 ORDER BY seq", tenant)
        .fetch_all(conn)
        .await
}

/// Replaces bodies by tombstones (hashes and chain links stay); `subject_replacement` also
/// overwrites the subject id (erasure). Returns how many rows changed.
pub async fn tombstone(
    conn: &mut PgConnection,
    tenant: &str,
    receipt_ids: &[String],
    bodies: &[String],
    subject_replacement: Option<&str>,
) -> sqlx::Result<u64> {
    let r = sqlx::query!(
        "UPDATE receipts r SET body = u.body, status = 'tombstoned', tombstoned_at = COALESCE(r.tombstoned_at, now()), \
         subject_id = COALESCE($4, r.subject_id) \
         FROM UNNEST($2::text[], $3::text[]) AS u(id, body) WHERE r.tenant_id = $1 AND r.receipt_id = u.id",
        tenant,
        receipt_ids,
        bodies,
        subject_replacement
    )
    .execute(conn)
    .await?;
    Ok(r.rows_affected())
}

/// Receipts of a subject (any status), for erasure.
pub async fn of_subject(conn: &mut PgConnection, tenant: &str, subject_id: &str) -> sqlx::Result<Vec<ReceiptRow>> {
    sqlx::query_as!(
        ReceiptRow,
        "SELECT tenant_id, receipt_id, subject_id, seq, prev_hash, receipt_hash, mode, body, status, tombstoned_at, created_at FROM receipts WHERE tenant_id = $1 AND subject_id = $2 ORDER BY seq",
        tenant,
        subject_id
    )
    .fetch_all(conn)
    .await
}

/// Active receipts of a tenant created before `cutoff` (retention).
pub async fn active_before(
    conn: &mut PgConnection,
    tenant: &str,
    cutoff: DateTime<Utc>,
) -> sqlx::Result<Vec<ReceiptRow>> {
    sqlx::query_as!(
        ReceiptRow,
        "SELECT tenant_id, receipt_id, subject_id, seq, prev_hash, receipt_hash, mode, body, status, tombstoned_at, created_at \
         FROM receipts WHERE tenant_id = $1 AND status = 'active' AND created_at < $2 ORDER BY seq",
        tenant,
        cutoff
    )
    .fetch_all(conn)
    .await
}

/// Tenants with a positive `receipt_retention_days`.
pub async fn retention_policies(conn: &mut PgConnection) -> sqlx::Result<Vec<(String, i64)>> {
    // Cross-tenant: read through the definer function (the table is tenant-confined).
    let rows = sqlx::query!(r#"SELECT tenant_id AS "tenant_id!", days AS "days!" FROM mnemo_retention_tenants()"#)
        .fetch_all(conn)
        .await?;
    Ok(rows.into_iter().map(|r| (r.tenant_id, r.days)).collect())
}
