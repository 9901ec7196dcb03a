//! Group commit for single-episode ingest.
//!
//! Each single-episode request used to be its own statement and its own commit. Under
//! concurrency that makes Postgres pay a statement's fixed costs (executor start, the counter
//! upsert's plan, the commit record and its WAL flush) once per episode. Here concurrent
//! requests of one tenant share statements. A tenant's subjects are spread over `writers`
//! lanes; each lane has at most one statement in flight, and the requests that arrive
//! meanwhile wait and go together in its next one (the batch statement, up to [`MAX_GROUP`]
//! episodes). A request that finds its lane idle goes at once, alone, through the single-row
//! statement: no timer, no added latency when idle. Lanes hold disjoint subjects, so their
//! statements never wait for each other's counter rows.
//!
//! What each caller sees is what it saw alone: its own row and whether it was new; within a
//! subject, seqs follow the order the requests were queued in, and commit order as before (the
//! statement holds the counter rows until it commits). A statement that Postgres refuses (one
//! episode breaking a constraint, say) is retried one episode at a time so that only the
//! faulty ones fail; a lost connection is reported to every caller of the group, as it would
//! have been to each alone (the rows may or may not have committed; nothing is retried blind).
//! The work runs in a spawned task, so a caller that goes away cannot cut a group short.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::FutureExt;
use sqlx::PgPool;
use tokio::sync::oneshot;
use uuid::Uuid;

use crate::model::episode::{Episode, Inserted, NewEpisode};
use crate::services::episodes::{insert_new, new_id, with_stored, Announce};
use crate::services::webhooks::Webhooks;

/// Most episodes one grouped statement carries (as many as a batch request may).
pub const MAX_GROUP: usize = 100;

type Reply = oneshot::Sender<sqlx::Result<(Episode, Inserted)>>;

struct Waiter {
    episode: NewEpisode,
    reply: Reply,
}

/// The single-episode writes of one tenant and lane waiting for a statement. A lane exists
/// while its writer runs, and only then.
type Lanes = HashMap<(String, usize), Vec<Waiter>>;

/// The per-tenant queues of single-episode writes (one per server, in [`crate::AppState`]).
pub struct GroupCommit {
    pool: PgPool,
    hooks: Arc<Webhooks>,
    lanes: usize,
    waiting: Mutex<Lanes>,
}

impl GroupCommit {
    /// Up to `writers` statements per tenant in flight (at least one).
    pub fn new(pool: PgPool, hooks: Arc<Webhooks>, writers: usize) -> Self {
        GroupCommit { pool, hooks, lanes: writers.max(1), waiting: Mutex::new(HashMap::new()) }
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Single-episode writes of `tenant` waiting for a statement.
    pub fn queued(&self, tenant: &str) -> usize {
        self.waiting().iter().filter(|((t, _), _)| t == tenant).map(|(_, w)| w.len()).sum()
    }

    fn waiting(&self) -> MutexGuard<'_, Lanes> {
        self.waiting.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A subject's lane: all its writes go through one lane, in the order they came, and two
    /// lanes' statements never wait for each other's counter rows.
    fn lane(&self, subject: &str) -> usize {
        let mut hasher = DefaultHasher::new();
        subject.hash(&mut hasher);
        (hasher.finish() % self.lanes as u64) as usize
    }

    /// Records one episode, alone or with the tenant's concurrent ones.
    pub async fn record(self: &Arc<Self>, tenant: &str, episode: NewEpisode) -> sqlx::Result<(Episode, Inserted)> {
        let (reply, answer) = oneshot::channel();
        let key = (tenant.to_owned(), self.lane(&episode.subject_id));
        let start = {
            let mut waiting = self.waiting();
            match waiting.get_mut(&key) {
                // Its writer runs: it takes this write with the next group.
                Some(lane) => {
                    lane.push(Waiter { episode, reply });
                    None
                }
                None => {
                    waiting.insert(key.clone(), Vec::new());
                    Some(vec![Waiter { episode, reply }])
                }
            }
        };
        if let Some(group) = start {
            let this = Arc::clone(self);
            tokio::spawn(async move { this.drain(key, group).await });
        }
        // The writer answers every waiter it takes, even when a write panics (then the reply is
        // dropped and this reports it).
        answer.await.unwrap_or(Err(sqlx::Error::WorkerCrashed))
    }

    /// Writes `group`, then whatever queued in the lane meanwhile, until it is empty.
    async fn drain(self: Arc<Self>, key: (String, usize), mut group: Vec<Waiter>) {
        loop {
            // A panic drops the group's replies (its callers see an error); the lane goes on.
            let _ = AssertUnwindSafe(self.write(&key.0, group)).catch_unwind().await;
            let mut waiting = self.waiting();
            let Some(lane) = waiting.get_mut(&key) else { return };
            if lane.is_empty() {
                waiting.remove(&key);
                return;
            }
            let take = lane.len().min(MAX_GROUP);
            group = lane.drain(..take).collect();
        }
    }

    async fn write(&self, tenant: &str, group: Vec<Waiter>) {
        let (episodes, replies): (Vec<NewEpisode>, Vec<Reply>) =
            group.into_iter().map(|w| (w.episode, w.reply)).unzip();
        // Ids in queue order: rows of one transaction share created_at, and ties order by id.
        let ids: Vec<Uuid> = episodes.iter().map(|_| new_id()).collect();
        crate::metrics::record_ingest_statement(episodes.len());
        let rows = match insert_new(&self.pool, &self.hooks, tenant, &ids, &episodes, Announce::EachRow).await {
            Ok(rows) => rows,
            Err(e) if replies.len() > 1 && matches!(e, sqlx::Error::Database(_)) => {
                // Refused by Postgres, so nothing was written: one at a time, only the faulty fail.
                for ((reply, id), episode) in replies.into_iter().zip(ids).zip(episodes) {
                    let _ = reply.send(self.write_alone(tenant, id, episode).await);
                }
                return;
            }
            Err(e) => return answer_all(replies, e),
        };
        if rows.iter().all(Option::is_some) {
            for (reply, row) in replies.into_iter().zip(rows.into_iter().flatten()) {
                let _ = reply.send(Ok((row, Inserted::New)));
            }
            return;
        }
        match with_stored(&self.pool, tenant, &episodes, rows.clone()).await {
            Ok(found) => {
                for (reply, row) in replies.into_iter().zip(found) {
                    let _ = reply.send(Ok(row));
                }
            }
            Err(e) if replies.len() > 1 && matches!(e, sqlx::Error::Database(_)) => {
                for ((reply, row), episode) in replies.into_iter().zip(rows).zip(episodes) {
                    let one = with_stored(&self.pool, tenant, std::slice::from_ref(&episode), vec![row]).await;
                    let _ = reply.send(one.and_then(|mut r| r.pop().ok_or(sqlx::Error::RowNotFound)));
                }
            }
            Err(e) => answer_all(replies, e),
        }
    }

    async fn write_alone(&self, tenant: &str, id: Uuid, episode: NewEpisode) -> sqlx::Result<(Episode, Inserted)> {
        let episodes = std::slice::from_ref(&episode);
        let rows = insert_new(&self.pool, &self.hooks, tenant, &[id], episodes, Announce::EachRow).await?;
        with_stored(&self.pool, tenant, episodes, rows).await?.pop().ok_or(sqlx::Error::RowNotFound)
    }
}

/// The same error for every caller of a group (the first gets the original).
fn answer_all(replies: Vec<Reply>, error: sqlx::Error) {
    let mut replies = replies.into_iter();
    let first = replies.next();
    for reply in replies {
        let _ = reply.send(Err(copy_error(&error)));
    }
    if let Some(first) = first {
        let _ = first.send(Err(error));
    }
}

/// An error like `e` for another caller: `sqlx::Error` is not `Clone`. Keeps what the HTTP
/// layer reads from it (connection trouble is 503, anything else 500).
fn copy_error(e: &sqlx::Error) -> sqlx::Error {
    match e {
        sqlx::Error::Io(io) => sqlx::Error::Io(std::io::Error::new(io.kind(), io.to_string())),
        sqlx::Error::PoolTimedOut => sqlx::Error::PoolTimedOut,
        sqlx::Error::PoolClosed => sqlx::Error::PoolClosed,
        sqlx::Error::Tls(t) => sqlx::Error::Tls(t.to_string().into()),
        sqlx::Error::RowNotFound => sqlx::Error::RowNotFound,
        sqlx::Error::WorkerCrashed => sqlx::Error::WorkerCrashed,
        other => sqlx::Error::Protocol(other.to_string()),
    }
}
