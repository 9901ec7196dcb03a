//! Deleting a subject completely, in one transaction, and verifying nothing is left.
//!
//! The delete takes the same advisory lock as compile, so a compile never writes rows of a
//! subject being erased; it deletes the ingest counter first, so in-flight ingests finish
//! before and new ones start a fresh subject after. Before commit it counts the subject's rows
//! in every table that has a `subject_id` column (read from the catalog) and rolls back if any
//! remain.

use std::collections::BTreeMap;

use sqlx::PgPool;

use crate::db;

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
