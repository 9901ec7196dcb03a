//! Erasing chosen episodes and memories of one subject, in one transaction, verifying none is
//! left, and recording a signed certificate (the subject's other rows stay).
//!
//! What goes with an episode: its row (the erasure path may delete episodes), its embeddings,
//! and every memory derived from it (a source episode), since that memory's text came from it.
//! What goes with a memory: its row and the supersession records naming it. Receipts of the
//! subject whose selected entries name an erased item are tombstoned (content removed, hashes
//! kept), as subject erasure does. Memories an erased memory had superseded stay superseded:
//! erasure removes text, it does not bring back an older belief.
//!
//! This is erasure, not withholding: a request to forget (`compile::forget`) retires memories
//! and keeps the log; this deletes rows, and a replay of a tombstoned receipt is no longer
//! possible. Every server's copies of the subject stop matching at once (a new memory version)
//! and are dropped within about a second (the certificate's row is an erasure of the subject's
//! digest, which `context::erased` watches).

use std::collections::BTreeMap;

use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

use crate::db;
use crate::model::time::now_micros;
use crate::receipts::canonical::canonical_v1;
use crate::receipts::certificate::{self, subject_digest, ItemErasureFacts};
use crate::receipts::signing::SigningKeys;
use crate::services::receipts::{new_receipt_id, tombstone_body};
use crate::services::webhooks::{WebhookEvent, Webhooks};
use crate::telemetry::{self, MemoryOp};

/// What to erase of one subject.
#[derive(Debug, Clone, Default)]
pub struct Items {
    pub episode_ids: Vec<Uuid>,
    pub memory_ids: Vec<Uuid>,
}

/// What an item erasure removed, and its certificate.
#[derive(Debug, Clone)]
pub struct ItemsErased {
    /// Episodes deleted, sorted.
    pub episode_ids: Vec<Uuid>,
    /// Memories deleted (asked for and derived), sorted.
    pub memory_ids: Vec<Uuid>,
    /// Rows deleted (receipts: tombstoned) per table.
    pub per_table: BTreeMap<String, u64>,
    pub erasure_id: String,
    pub certificate: Value,
}

impl ItemsErased {
    /// Rows deleted from one table.
    pub fn count(&self, table: &str) -> u64 {
        self.per_table.get(table).copied().unwrap_or(0)
    }
}

/// Why nothing was erased: some ids are not episodes or memories of the subject in the tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotFound {
    pub episode_ids: Vec<Uuid>,
    pub memory_ids: Vec<Uuid>,
}

impl NotFound {
    /// A message naming the ids not found.
    pub fn message(&self) -> String {
        let list = |ids: &[Uuid]| ids.iter().map(Uuid::to_string).collect::<Vec<_>>().join(", ");
        let mut parts = Vec::new();
        if !self.episode_ids.is_empty() {
            parts.push(format!("episodes not found in this subject: {}", list(&self.episode_ids)));
        }
        if !self.memory_ids.is_empty() {
            parts.push(format!("memories not found in this subject: {}", list(&self.memory_ids)));
        }
        format!("Nothing was erased; {}.", parts.join("; "))
    }
}

/// Erases the chosen episodes and memories of the subject (all of them or none); `Err` names
/// the ids the subject does not have.
pub async fn erase_items(
    pool: &PgPool,
    keys: &SigningKeys,
    hooks: &Webhooks,
    tenant: &str,
    subject_id: &str,
    items: &Items,
) -> anyhow::Result<Result<ItemsErased, NotFound>> {
    let span = telemetry::memory_span(MemoryOp::Delete, tenant);
    let count = |r: &Result<ItemsErased, NotFound>| r.as_ref().map_or(0, |e| e.episode_ids.len() + e.memory_ids.len());
    telemetry::traced(span, erase_in(pool, keys, hooks, tenant, subject_id, items), count).await
}

fn distinct(ids: &[Uuid]) -> Vec<Uuid> {
    let mut v = ids.to_vec();
    v.sort();
    v.dedup();
    v
}

async fn erase_in(
    pool: &PgPool,
    keys: &SigningKeys,
    hooks: &Webhooks,
    tenant: &str,
    subject_id: &str,
    items: &Items,
) -> anyhow::Result<Result<ItemsErased, NotFound>> {
    let (asked_episodes, asked_memories) = (distinct(&items.episode_ids), distinct(&items.memory_ids));
    let mut tx = db::scope::begin(pool, tenant).await?;
    // The locks subject erasure takes: no compile derives a memory from an episode being
    // erased, no receipt naming one is appended meanwhile.
    let had_counter = crate::services::erase::hold_writers(&mut tx, tenant, subject_id).await?;

    let episodes = db::erase_items::episodes_of(&mut tx, tenant, subject_id, &asked_episodes).await?;
    let memories = db::erase_items::memories_of(&mut tx, tenant, subject_id, &asked_memories, &episodes).await?;
    let missing = NotFound {
        episode_ids: asked_episodes.iter().filter(|id| episodes.binary_search(id).is_err()).copied().collect(),
        memory_ids: asked_memories.iter().filter(|id| memories.binary_search(id).is_err()).copied().collect(),
    };
    if !missing.episode_ids.is_empty() || !missing.memory_ids.is_empty() {
        tx.rollback().await?;
        return Ok(Err(missing));
    }

    db::erase::allow_episode_delete(&mut tx).await?;
    let mut per_table = BTreeMap::new();
    per_table.insert(
        "episodes".to_string(),
        db::erase_items::delete_episodes(&mut tx, tenant, subject_id, &episodes).await?,
    );
    let n = db::erase_items::delete_embeddings(&mut tx, tenant, subject_id, &episodes).await?;
    per_table.insert("episode_embeddings".to_string(), n);
    let n = db::erase_items::delete_passages(&mut tx, tenant, subject_id, &episodes).await?;
    per_table.insert("episode_passages".to_string(), n);
    let n = db::erase_items::delete_supersessions(&mut tx, tenant, subject_id, &memories).await?;
    per_table.insert("supersession_records".to_string(), n);
    per_table.insert(
        "memories".to_string(),
        db::erase_items::delete_memories(&mut tx, tenant, subject_id, &memories).await?,
    );
    // Other memories' marks of them as earlier name their ids: those go too.
    db::erase_items::strip_revises(&mut tx, tenant, subject_id, &episodes, &memories).await?;

    // Receipts that showed an erased item hold its text: content goes, hashes and ids remain.
    let episode_text: Vec<String> = episodes.iter().map(Uuid::to_string).collect();
    let memory_text: Vec<String> = memories.iter().map(Uuid::to_string).collect();
    let naming = db::erase_items::receipts_naming(&mut tx, tenant, subject_id, &episode_text, &memory_text).await?;
    let mut tombstoned = 0;
    if !naming.is_empty() {
        let mut rows = Vec::with_capacity(naming.len());
        for id in &naming {
            if let Some(row) = db::receipts::get(&mut tx, tenant, id).await? {
                rows.push(row);
            }
        }
        let ids: Vec<String> = rows.iter().map(|r| r.receipt_id.clone()).collect();
        let bodies: Vec<String> = rows.iter().map(|r| tombstone_body(r, "erasure", None)).collect();
        tombstoned = db::receipts::tombstone(&mut tx, tenant, &ids, &bodies, None).await?;
    }
    per_table.insert("receipts".to_string(), tombstoned);
    if !had_counter {
        db::erase_items::drop_new_counter(&mut tx, tenant, subject_id).await?;
    }
    db::erase_items::bump_version(&mut tx, tenant, subject_id).await?;

    let remaining = db::erase_items::remaining(&mut tx, tenant, subject_id, &episodes, &memories).await?;
    for (table, left) in &remaining {
        if *left > 0 {
            tx.rollback().await?;
            tracing::error!(table = %table, rows = left, "item erasure left rows behind; rolled back");
            anyhow::bail!("item erasure verification failed: {left} row(s) remain in {table}");
        }
    }
    let verified: Vec<String> = remaining.into_iter().map(|(t, _)| t).collect();

    let config = db::tenants::config(&mut tx, tenant).await?;
    let erasure_id = new_receipt_id();
    let erased_at = now_micros();
    let digest = subject_digest(tenant, subject_id);
    let facts = ItemErasureFacts {
        erasure_id: &erasure_id,
        tenant,
        subject_sha256: &digest,
        erased_at,
        episode_ids: &episode_text,
        memory_ids: &memory_text,
        counts: &per_table,
        verified_tables: &verified,
    };
    let key_id = certificate::signing_key_for(&config, keys);
    let cert = certificate::build_items(&facts, keys, key_id.as_deref());
    // Stored as any erasure of the subject's digest: every server drops its copies of the subject.
    db::erasures::insert(&mut tx, tenant, &erasure_id, &digest, erased_at, &canonical_v1(&cert)).await?;
    let data = json!({"subject_id": subject_id, "erasure_id": erasure_id,
                      "episodes_deleted": episodes.len(), "memories_deleted": memories.len(),
                      "receipts_tombstoned": tombstoned});
    hooks.enqueue(&mut tx, tenant, WebhookEvent::ItemsErased, data).await?;
    tx.commit().await?;
    Ok(Ok(ItemsErased { episode_ids: episodes, memory_ids: memories, per_table, erasure_id, certificate: cert }))
}
