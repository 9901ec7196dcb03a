//! Recording episodes, singly or in atomic batches.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::json;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::db;
use crate::lexemes::Tsvector;
use crate::model::episode::Stamp;
use crate::model::episode::{Episode, Inserted, NewEpisode};
use crate::model::id::new_id;
use crate::services::group_commit::GroupCommit;
use crate::services::lexer::Lexer;
use crate::services::webhooks::{WebhookEvent, Webhooks};
use crate::telemetry::{self, MemoryOp};

/// Tenants already recorded in the `tenants` table by this process (saves a write per request).
#[derive(Default)]
pub struct KnownTenants(Mutex<HashSet<String>>);

impl KnownTenants {
    /// True if this process already recorded the tenant.
    pub fn contains(&self, tenant: &str) -> bool {
        self.0.lock().map(|s| s.contains(tenant)).unwrap_or(false)
    }

    /// Remembers a recorded tenant.
    pub fn insert(&self, tenant: &str) {
        if let Ok(mut s) = self.0.lock() {
            s.insert(tenant.to_string());
        }
    }
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
/// Concurrent calls for one tenant share statements ([`GroupCommit`]): alone, the insert is one
/// statement on a bare connection (it applies the tenant itself); with the webhook, the
/// statement and the outbox row share a transaction.
pub async fn ingest_one(
    group: &Arc<GroupCommit>,
    known: &KnownTenants,
    tenant: &str,
    episode: NewEpisode,
) -> sqlx::Result<(Episode, Inserted)> {
    let span = telemetry::memory_span(MemoryOp::Create, tenant);
    let fut = async {
        ensure_tenant(group.pool(), known, tenant).await?;
        group.record(tenant, episode).await
    };
    telemetry::traced(span, fut, |(_, inserted)| usize::from(*inserted == Inserted::New)).await
}

/// How new rows are announced: one `episode.created` each, or one `episodes.batch_created`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Announce {
    EachRow,
    Batch,
}

/// Inserts `episodes` under `ids` in one statement (the single-row one for one episode), with
/// their announcements in the same transaction; returns each input's stamp where a row was
/// added, or None where its idempotency key was taken (see [`with_stored`]). `lexemes` has each
/// episode's lexemes where the server computed them (`crate::lexemes`).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn insert_new(
    conn: &mut PgConnection,
    hooks: &Webhooks,
    tenant: &str,
    ids: &[Uuid],
    episodes: &[NewEpisode],
    lexemes: &[Option<Tsvector>],
    announce: Announce,
) -> sqlx::Result<Vec<Option<Stamp>>> {
    let event = match announce {
        Announce::EachRow => WebhookEvent::EpisodeCreated,
        Announce::Batch => WebhookEvent::EpisodesBatchCreated,
    };
    let stamps = if hooks.wants(event) {
        let mut tx = db::scope::begin_on(conn, tenant).await?;
        let stamps = insert_statement(&mut tx, tenant, ids, episodes, lexemes).await?;
        let added: BTreeSet<Uuid> = stamps.iter().map(|s| s.id).collect();
        let new = || episodes.iter().zip(ids).filter(|(_, id)| added.contains(id));
        match announce {
            Announce::EachRow => {
                for (episode, id) in new() {
                    let data = json!({"id": id, "subject_id": episode.subject_id});
                    hooks.enqueue(&mut tx, tenant, event, data).await?;
                }
            }
            Announce::Batch if !stamps.is_empty() => {
                let subjects: BTreeSet<&str> = new().map(|(e, _)| e.subject_id.as_str()).collect();
                let data = json!({"count": stamps.len(), "subject_ids": subjects});
                hooks.enqueue(&mut tx, tenant, event, data).await?;
            }
            Announce::Batch => {}
        }
        tx.commit().await?;
        stamps
    } else {
        insert_statement(conn, tenant, ids, episodes, lexemes).await?
    };
    let mut by_id: BTreeMap<Uuid, Stamp> = stamps.into_iter().map(|s| (s.id, s)).collect();
    Ok(ids.iter().map(|id| by_id.remove(id)).collect())
}

/// Each input's row after [`insert_new`]: the new one (the input with its stamp), else the one
/// stored under its idempotency key (read after the insert committed).
pub(crate) async fn with_stored(
    pool: &PgPool,
    tenant: &str,
    episodes: Vec<NewEpisode>,
    stamps: Vec<Option<Stamp>>,
) -> sqlx::Result<Vec<(Episode, Inserted)>> {
    let skipped: Vec<&NewEpisode> = stamps.iter().zip(&episodes).filter(|(s, _)| s.is_none()).map(|(_, e)| e).collect();
    let mut found = if skipped.is_empty() { Vec::new() } else { stored(pool, tenant, &skipped).await? }.into_iter();
    episodes
        .into_iter()
        .zip(stamps)
        .map(|(episode, stamp)| match stamp {
            Some(stamp) => Ok((episode.stored(&stamp), Inserted::New)),
            None => found.next().map(|row| (row, Inserted::Existing)).ok_or(sqlx::Error::RowNotFound),
        })
        .collect()
}

/// One episode through the single-row statement, several through the batch statement.
async fn insert_statement(
    conn: &mut PgConnection,
    tenant: &str,
    ids: &[Uuid],
    episodes: &[NewEpisode],
    lexemes: &[Option<Tsvector>],
) -> sqlx::Result<Vec<Stamp>> {
    match (ids, episodes) {
        ([id], [episode]) => {
            let lexemes = lexemes.first().and_then(Option::as_ref);
            Ok(db::episodes::insert(conn, tenant, *id, episode, lexemes).await?.into_iter().collect())
        }
        _ => db::episodes::insert_batch(conn, tenant, ids, episodes, lexemes).await,
    }
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
    lexer: &Lexer,
    tenant: &str,
    episodes: Vec<NewEpisode>,
) -> sqlx::Result<(Vec<Episode>, usize)> {
    let span = telemetry::memory_span(MemoryOp::Create, tenant);
    let fut = ingest_batch_in(pool, known, hooks, lexer, tenant, episodes);
    telemetry::traced(span, fut, |(_, created)| *created).await
}

async fn ingest_batch_in(
    pool: &PgPool,
    known: &KnownTenants,
    hooks: &Webhooks,
    lexer: &Lexer,
    tenant: &str,
    episodes: Vec<NewEpisode>,
) -> sqlx::Result<(Vec<Episode>, usize)> {
    ensure_tenant(pool, known, tenant).await?;
    let ids: Vec<Uuid> = episodes.iter().map(|_| new_id()).collect();
    let lexemes = lexer.of(pool, episodes.iter().map(|e| &e.payload)).await;
    let mut conn = db::scope::single(pool).await?;
    let stamps = insert_new(&mut conn, hooks, tenant, &ids, &episodes, &lexemes, Announce::Batch).await?;
    drop(conn);
    let rows = with_stored(pool, tenant, episodes, stamps).await?;
    let created = rows.iter().filter(|(_, inserted)| *inserted == Inserted::New).count();
    Ok((rows.into_iter().map(|(row, _)| row).collect(), created))
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
