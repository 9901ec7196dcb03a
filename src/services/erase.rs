//! Deleting a subject completely, in one transaction, and verifying nothing is left.
//!
//! The delete takes the same advisory lock as compile, so a compile never writes rows of a
//! subject being erased; it deletes the ingest counter first, so in-flight ingests finish
//! before and new ones start a fresh subject after. Before commit it counts the subject's rows
//! in every table that has a `subject_id` column (read from the catalog) and rolls back if any
//! remain. Receipts of the subject are tombstoned in place (their hashes keep the tenant's
//! chain verifiable) and their subject id is replaced by a digest.

use std::collections::BTreeMap;

use sqlx::PgPool;

use crate::db;
use crate::receipts::canonical::sha256_hex;
use crate::services::receipts::tombstone_body;

/// Rows deleted per table.
#[derive(Debug, Clone, Default)]
pub struct Erased {
    pub per_table: BTreeMap<String, u64>,
}

impl Erased {
    /// Rows deleted from one table.
    pub fn count(&self, table: &str) -> u64 {
        self.per_table.get(table).copied().unwrap_or(0)
    }
}

/// sha256 of (tenant, subject): names an erased subject without revealing it.
pub fn subject_digest(tenant: &str, subject_id: &str) -> String {
    sha256_hex(format!("{tenant}\u{1f}{subject_id}").as_bytes())
}

/// Erases every row of the subject in the tenant.
pub async fn erase_subject(pool: &PgPool, tenant: &str, subject_id: &str) -> anyhow::Result<Erased> {
    let mut tx = pool.begin().await?;
    db::compile::lock_subject(&mut tx, tenant, subject_id).await?;
    db::erase::allow_episode_delete(&mut tx).await?;
    let mut erased = Erased::default();
    for table in db::erase::SUBJECT_TABLES {
        let n = db::erase::delete_from(&mut tx, table, tenant, subject_id).await?;
        erased.per_table.insert((*table).to_string(), n);
    }
    // Receipts stay as chain links: content and the subject id go, hashes and ids remain.
    let digest = subject_digest(tenant, subject_id);
    let receipts = db::receipts::of_subject(&mut tx, tenant, subject_id).await?;
    let ids: Vec<String> = receipts.iter().map(|r| r.receipt_id.clone()).collect();
    let bodies: Vec<String> = receipts.iter().map(|r| tombstone_body(r, "erasure", Some(&digest))).collect();
    let replacement = format!("erased:{digest}");
    let n = db::receipts::tombstone(&mut tx, tenant, &ids, &bodies, Some(&replacement)).await?;
    erased.per_table.insert("receipts".to_string(), n);
    for table in db::erase::tables_with_subjects(&mut tx).await? {
        let left = db::erase::remaining(&mut tx, &table, tenant, subject_id).await?;
        if left > 0 {
            tx.rollback().await?;
            tracing::error!(table = %table, rows = left, "erasure left rows behind; rolled back");
            anyhow::bail!("erasure verification failed: {left} row(s) remain in {table}");
        }
    }
    tx.commit().await?;
    Ok(erased)
}
