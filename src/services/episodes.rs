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
use crate::telemetry::{self, MemoryOp};

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
///
/// Without that webhook the insert is one statement on a bare connection (it applies the
/// tenant itself); with it, the statement and the outbox row share a transaction.
pub async fn ingest_one(
    pool: &PgPool,
    known: &KnownTenants,
    hooks: &Webhooks,
    tenant: &str,
    episode: &NewEpisode,
) -> sqlx::Result<(Episode, Inserted)> {
    let span = telemetry::memory_span(MemoryOp::Create, tenant);
    let fut = ingest_one_in(pool, known, hooks, tenant, episode);
    telemetry::traced(span, fut, |(_, inserted)| usize::from(*inserted == Inserted::New)).await
}

async fn ingest_one_in(
    pool: &PgPool,
    known: &KnownTenants,
    hooks: &Webhooks,
    tenant: &str,
    episode: &NewEpisode,
) -> sqlx::Result<(Episode, Inserted)> {
    ensure_tenant(pool, known, tenant).await?;
    let id = new_id();
    if !hooks.wants(WebhookEvent::EpisodeCreated) {
        let inserted = db::episodes::insert(&mut *db::scope::single(pool).await?, tenant, id, episode).await?;
        return match inserted {
            Some(row) => Ok((row, Inserted::New)),
            None => Ok((stored_one(pool, tenant, episode).await?, Inserted::Existing)),
        };
    }
    let mut tx = db::scope::begin(pool, tenant).await?;
    let Some(row) = db::episodes::insert(&mut tx, tenant, id, episode).await? else {
        tx.commit().await?;
        return Ok((stored_one(pool, tenant, episode).await?, Inserted::Existing));
    };
    let data = json!({"id": row.id, "subject_id": row.subject_id});
    hooks.enqueue(&mut tx, tenant, WebhookEvent::EpisodeCreated, data).await?;
    tx.commit().await?;
    Ok((row, Inserted::New))
}

/// The row stored under the episode's idempotency key (the insert found it taken).
async fn stored_one(pool: &PgPool, tenant: &str, e: &NewEpisode) -> sqlx::Result<Episode> {
    let mut stored = stored(pool, tenant, &[e]).await?;
    stored.pop().ok_or(sqlx::Error::RowNotFound)
}

/// The stored rows under the idempotency keys of `episodes`, in their order. Read after the
/// insert committed (a committed row is never changed), in a tenant transaction like any read.
async fn stored(pool: &PgPool, tenant: &str, episodes: &[&NewEpisode]) -> sqlx::Result<Vec<Episode>> {
    let keys: Vec<String> = episodes.iter().filter_map(|e| e.effective_key()).collect();
    // The insert only skips a row over its key, so every episode here has one.
    if keys.len() != episodes.len() {
        return Err(sqlx::Error::RowNotFound);
    }
    let subjects: Vec<&str> = episodes.iter().map(|e| e.subject_id.as_str()).collect();
    let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    let mut tx = db::scope::begin(pool, tenant).await?;
    let found = db::episodes::by_keys(&mut tx, tenant, &subjects, &key_refs).await?;
    tx.commit().await?;
    let mut by_key: BTreeMap<(&str, &str), Episode> = BTreeMap::new();
    for k in &found {
        by_key.insert((k.episode.subject_id.as_str(), k.idempotency_key.as_str()), k.episode.clone());
    }
    subjects
        .iter()
        .zip(&key_refs)
        .map(|(s, k)| by_key.get(&(*s, *k)).cloned().ok_or(sqlx::Error::RowNotFound))
        .collect()
}

/// Records a batch atomically, in input order (seqs follow the input within each subject), in
/// one statement; returns each row and the count of new rows. At least one new row announces
/// `episodes.batch_created` with the subjects of new rows (then in the statement's transaction).
pub async fn ingest_batch(
    pool: &PgPool,
    known: &KnownTenants,
    hooks: &Webhooks,
    tenant: &str,
    episodes: &[NewEpisode],
) -> sqlx::Result<(Vec<Episode>, usize)> {
    let span = telemetry::memory_span(MemoryOp::Create, tenant);
    telemetry::traced(span, ingest_batch_in(pool, known, hooks, tenant, episodes), |(_, created)| *created).await
}

async fn ingest_batch_in(
    pool: &PgPool,
    known: &KnownTenants,
    hooks: &Webhooks,
    tenant: &str,
    episodes: &[NewEpisode],
) -> sqlx::Result<(Vec<Episode>, usize)> {
    ensure_tenant(pool, known, tenant).await?;
    let ids: Vec<Uuid> = episodes.iter().map(|_| new_id()).collect();
    let new_rows = if hooks.wants(WebhookEvent::EpisodesBatchCreated) {
        let mut tx = db::scope::begin(pool, tenant).await?;
        let rows = db::episodes::insert_batch(&mut tx, tenant, &ids, episodes).await?;
        if !rows.is_empty() {
            let subjects: BTreeSet<&str> = rows.iter().map(|r| r.subject_id.as_str()).collect();
            let data = json!({"count": rows.len(), "subject_ids": subjects});
            hooks.enqueue(&mut tx, tenant, WebhookEvent::EpisodesBatchCreated, data).await?;
        }
        tx.commit().await?;
        rows
    } else {
        db::episodes::insert_batch(&mut *db::scope::single(pool).await?, tenant, &ids, episodes).await?
    };
    let created = new_rows.len();
    let mut by_id: BTreeMap<Uuid, Episode> = new_rows.into_iter().map(|r| (r.id, r)).collect();
    let mut rows: Vec<Option<Episode>> = ids.iter().map(|id| by_id.remove(id)).collect();
    let skipped: Vec<&NewEpisode> = rows.iter().zip(episodes).filter(|(r, _)| r.is_none()).map(|(_, e)| e).collect();
    if !skipped.is_empty() {
        let mut found = stored(pool, tenant, &skipped).await?.into_iter();
        for slot in rows.iter_mut().filter(|r| r.is_none()) {
            *slot = found.next();
        }
    }
    let rows = rows.into_iter().collect::<Option<Vec<Episode>>>().ok_or(sqlx::Error::RowNotFound)?;
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
