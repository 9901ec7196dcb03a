//! Deleting a subject completely, in one transaction, verifying nothing is left, and
//! recording a signed erasure certificate.
//!
//! The delete takes the same advisory lock as compile, so a compile never writes rows of a
//! subject being erased; it deletes the ingest counter first, so in-flight ingests finish
//! before and new ones start a fresh subject after. Before commit it counts the subject's rows
//! in every table that has a `subject_id` column (read from the catalog) and rolls back if any
//! remain. Receipts of the subject are tombstoned in place (their hashes keep the tenant's
//! chain verifiable) and their subject id is replaced by a digest.
//!
//! Webhook events about the subject go with its rows (queued ones are never sent); batch events
//! that also named other subjects lose the subject from their list. The `subject.deleted` event
//! names the subject, so its row carries no subject_id and its payload is dropped once it has
//! been delivered or dead-lettered.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::db;
use crate::model::time::now_micros;
use crate::receipts::canonical::canonical_v1;
use crate::receipts::certificate::{self, subject_digest, ErasureFacts};
use crate::receipts::signing::SigningKeys;
use crate::services::receipts::{new_receipt_id, tombstone_body};
use crate::services::webhooks::{WebhookEvent, Webhooks};
use crate::telemetry::{self, MemoryOp};

/// What an erasure removed, and its certificate.
#[derive(Debug, Clone)]
pub struct Erased {
    /// Rows deleted (receipts: tombstoned) per table.
    pub per_table: BTreeMap<String, u64>,
    /// Id under which the certificate can be read again.
    pub erasure_id: String,
    /// The certificate as stored.
    pub certificate: Value,
}

impl Erased {
    /// Rows deleted from one table.
    pub fn count(&self, table: &str) -> u64 {
        self.per_table.get(table).copied().unwrap_or(0)
    }
}

/// Erases every row of the subject in the tenant, records a certificate and (when something
/// was deleted) announces `subject.deleted`.
pub async fn erase_subject(
    pool: &PgPool,
    keys: &SigningKeys,
    hooks: &Webhooks,
    tenant: &str,
    subject_id: &str,
) -> anyhow::Result<Erased> {
    let span = telemetry::memory_span(MemoryOp::Delete, tenant);
    let count = |e: &Erased| usize::try_from(e.count("memories") + e.count("episodes")).unwrap_or(usize::MAX);
    telemetry::traced(span, erase_in(pool, keys, hooks, tenant, subject_id), count).await
}

async fn erase_in(
    pool: &PgPool,
    keys: &SigningKeys,
    hooks: &Webhooks,
    tenant: &str,
    subject_id: &str,
) -> anyhow::Result<Erased> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    let had_counter = hold_writers(&mut tx, tenant, subject_id).await?;
    db::erase::allow_episode_delete(&mut tx).await?;
    let mut per_table = BTreeMap::new();
    for table in db::erase::SUBJECT_TABLES {
        let mut n = db::erase::delete_from(&mut tx, table, tenant, subject_id).await?;
        if *table == "subject_counters" {
            n = u64::from(had_counter);
        }
        per_table.insert((*table).to_string(), n);
    }
    // Receipts stay as chain links: content and the subject id go, hashes and ids remain.
    let digest = subject_digest(tenant, subject_id);
    let receipts = db::receipts::of_subject(&mut tx, tenant, subject_id).await?;
    let ids: Vec<String> = receipts.iter().map(|r| r.receipt_id.clone()).collect();
    let bodies: Vec<String> = receipts.iter().map(|r| tombstone_body(r, "erasure", Some(&digest))).collect();
    let replacement = format!("erased:{digest}");
    let n = db::receipts::tombstone(&mut tx, tenant, &ids, &bodies, Some(&replacement)).await?;
    per_table.insert("receipts".to_string(), n);
    db::webhooks::strip_subject(&mut tx, tenant, subject_id).await?;

    let tables = db::erase::tables_with_subjects(&mut tx).await?;
    for (table, left) in db::erase::remaining_in(&mut tx, &tables, tenant, subject_id).await? {
        if left > 0 {
            tx.rollback().await?;
            tracing::error!(table = %table, rows = left, "erasure left rows behind; rolled back");
            anyhow::bail!("erasure verification failed: {left} row(s) remain in {table}");
        }
    }

    let config = db::tenants::config(&mut tx, tenant).await?;
    let erasure_id = new_receipt_id();
    let erased_at = now_micros();
    let facts = ErasureFacts {
        erasure_id: &erasure_id,
        tenant,
        subject_sha256: &digest,
        erased_at,
        counts: &per_table,
        verified_tables: &tables,
    };
    let key_id = certificate::signing_key_for(&config, keys);
    let cert = certificate::build(&facts, keys, key_id.as_deref());
    db::erasures::insert(&mut tx, tenant, &erasure_id, &digest, erased_at, &canonical_v1(&cert)).await?;
    let count = |table: &str| per_table.get(table).copied().unwrap_or(0);
    let (episodes, memories) = (count("episodes"), count("memories"));
    if episodes + memories > 0 {
        let data = json!({"subject_id": subject_id, "episodes_deleted": episodes, "memories_deleted": memories,
                          "erasure_id": erasure_id});
        hooks.enqueue(&mut tx, tenant, WebhookEvent::SubjectDeleted, data).await?;
    }
    tx.commit().await?;
    Ok(Erased { per_table, erasure_id, certificate: cert })
}

/// Makes every writer of the subject's rows wait for the erasure in `conn`'s transaction:
/// compile (subject lock), job submission (submit lock), receipt emission (the tenant's chain
/// head), ingest (the subject's counter row, held even when it did not exist). Always taken in
/// this order, by subject and item erasure alike. Returns whether the subject had a counter.
pub async fn hold_writers(conn: &mut sqlx::PgConnection, tenant: &str, subject_id: &str) -> sqlx::Result<bool> {
    db::compile::lock_subject(&mut *conn, tenant, subject_id).await?;
    db::jobs::lock_submit(&mut *conn, tenant, subject_id).await?;
    db::receipts::lock_head(&mut *conn, tenant).await?;
    db::erase::hold_counter(conn, tenant, subject_id).await
}

/// A stored certificate of the tenant, parsed, with its signature check.
pub async fn certificate(
    pool: &PgPool,
    keys: &SigningKeys,
    tenant: &str,
    erasure_id: &str,
) -> anyhow::Result<Option<(Value, certificate::CertificateCheck)>> {
    let mut conn = db::scope::begin(pool, tenant).await?;
    let Some(text) = db::erasures::get(&mut conn, tenant, erasure_id).await? else {
        return Ok(None);
    };
    let cert = crate::receipts::canonical::parse_stored(&text)?;
    let check = certificate::verify(&cert, keys);
    Ok(Some((cert, check)))
}
