//! Recording episodes, singly or in atomic batches.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::db;
use crate::model::episode::{Episode, Inserted, NewEpisode};
use crate::services::webhooks::{WebhookEvent, Webhooks};
use crate::state::KnownTenants;

static IDS: Mutex<ulid::Generator> = Mutex::new(ulid::Generator::new());

/// A new time-ordered id (a ULID carried in a UUID), strictly increasing within this process
/// so rows written in one transaction (same `now()`) keep their input order.
pub fn new_id() -> Uuid {
    let mut guard = match IDS.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    let generated = guard.generate();
    // Overflow within one millisecond (2^80 ids) cannot happen in practice; fall back to random.
    Uuid::from(generated.unwrap_or_else(|_| ulid::Ulid::new()))
}

/// Records the tenant in its own transaction (once per process), so a rolled-back ingest
/// cannot leave the cache claiming a row that was never committed.
async fn ensure_tenant(pool: &PgPool, known: &KnownTenants, tenant: &str) -> sqlx::Result<()> {
    if !known.contains(tenant) {
        let mut tx = db::scope::begin(pool, tenant).await?;
        db::tenants::ensure(&mut tx, tenant).await?;
        tx.commit().await?;
        known.insert(tenant);
    }
    Ok(())
}

/// Records one episode; a repeated idempotency key returns the stored row unchanged.
/// A new row announces `episode.created` (a repeat announces nothing).
pub async fn ingest_one(
    pool: &PgPool,
    known: &KnownTenants,
    hooks: &Webhooks,
    tenant: &str,
    episode: &NewEpisode,
) -> sqlx::Result<(Episode, Inserted)> {
    ensure_tenant(pool, known, tenant).await?;
    let mut tx = db::scope::begin(pool, tenant).await?;
    let (row, inserted) = db::episodes::insert(&mut tx, tenant, new_id(), None, episode).await?;
    if inserted == Inserted::New {
        let data = json!({"id": row.id, "subject_id": row.subject_id});
        hooks.enqueue(&mut tx, tenant, WebhookEvent::EpisodeCreated, data).await?;
    }
    tx.commit().await?;
    Ok((row, inserted))
}

/// Records a batch in input order inside one transaction; returns each row and the count of new
/// rows. At least one new row announces `episodes.batch_created` with the subjects of new rows.
pub async fn ingest_batch(
    pool: &PgPool,
    known: &KnownTenants,
    hooks: &Webhooks,
    tenant: &str,
    episodes: &[NewEpisode],
) -> sqlx::Result<(Vec<Episode>, usize)> {
    ensure_tenant(pool, known, tenant).await?;
    let mut tx = db::scope::begin(pool, tenant).await?;
    // Reserve seqs per subject in sorted order (a fixed lock order avoids deadlocks between
    // batches), then insert in input order so seqs follow the input within each subject.
    let mut per_subject: BTreeMap<&str, i64> = BTreeMap::new();
    for e in episodes {
        *per_subject.entry(e.subject_id.as_str()).or_default() += 1;
    }
    let mut next_seq: BTreeMap<&str, i64> = BTreeMap::new();
    for (subject, count) in &per_subject {
        let first = db::episodes::reserve_seqs(&mut tx, tenant, subject, *count).await?;
        next_seq.insert(subject, first);
    }
    let mut rows = Vec::with_capacity(episodes.len());
    let mut created = 0;
    let mut new_subjects = BTreeSet::new();
    for e in episodes {
        let slot = next_seq.entry(e.subject_id.as_str()).or_default();
        let seq = *slot;
        *slot += 1;
        let (row, inserted) = db::episodes::insert(&mut tx, tenant, new_id(), Some(seq), e).await?;
        if inserted == Inserted::New {
            created += 1;
            new_subjects.insert(e.subject_id.as_str());
        }
        rows.push(row);
    }
    if created > 0 {
        let data = json!({"count": created, "subject_ids": new_subjects});
        hooks.enqueue(&mut tx, tenant, WebhookEvent::EpisodesBatchCreated, data).await?;
    }
    tx.commit().await?;
    Ok((rows, created))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_increase_strictly_within_a_millisecond() {
        let ids: Vec<Uuid> = (0..1000).map(|_| new_id()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
    }
}
