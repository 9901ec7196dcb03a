//! Group commit for single-episode ingest.
//!
//! Each single-episode request used to be its own statement and its own commit. Under
//! concurrency that makes Postgres pay a statement's fixed costs (executor start, the counter
//! upsert's plan, the commit record and its WAL flush) once per episode. Here concurrent
//! requests of one tenant share statements. A tenant's requests wait in one queue, and up to
//! `writers` statements of the tenant are in flight at once; a writer that finishes takes what
//! queued meanwhile into its next statement (the batch statement, up to [`MAX_GROUP`]
//! episodes). A request that finds a writer free goes at once, alone, through the single-row
//! statement: no timer, no added latency when idle. A subject is in at most one statement in
//! flight: its later requests wait for that statement to end, so writers never wait for each
//! other's counter rows, and a writer held by one subject's counter row (a long import of that
//! subject) leaves the others free for the tenant's other subjects.
//!
//! Several writers let Postgres execute one statement while another commits and the server
//! answers a third's callers: one writer alone leaves the machine idle between its statements.
//!
//! What each caller sees is what it saw alone: its own row and whether it was new; within a
//! subject, seqs follow the order the requests were queued in, and commit order as before (the
//! statement holds the counter rows until it commits). A statement that Postgres refuses (one
//! episode breaking a constraint, say) is retried one episode at a time so that only the
//! faulty ones fail; a lost connection is reported to every caller of the group, as it would
//! have been to each alone (the rows may or may not have committed; nothing is retried blind).
//! The work runs in a spawned task, so a caller that goes away cannot cut a group short. A
//! writer keeps one connection while groups follow each other (sqlx pings a connection each
//! time it goes back to the pool: a round trip, and Postgres's CPU per episode fell by a tenth
//! without it) and lets it go when its queue is empty or after an error.

use std::collections::{HashMap, HashSet, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::FutureExt;
use sqlx::pool::PoolConnection;
use sqlx::{PgPool, Postgres};
use tokio::sync::oneshot;
use uuid::Uuid;

use crate::lexemes::Tsvector;
use crate::model::episode::{Episode, Inserted, NewEpisode};
use crate::model::id::new_id;
use crate::services::episodes::{insert_new, with_stored, Announce};
use crate::services::lexer::Lexer;
use crate::services::webhooks::Webhooks;

/// Most episodes one grouped statement carries (as many as a batch request may).
pub const MAX_GROUP: usize = 100;

type Reply = oneshot::Sender<sqlx::Result<(Episode, Inserted)>>;

struct Waiter {
    episode: NewEpisode,
    /// Computed by the caller's task when the server can (`crate::lexemes`): off the writer.
    lexemes: Option<Tsvector>,
    reply: Reply,
}

/// One tenant's single-episode writes: those waiting, how many statements are in flight, and
/// the subjects they hold. Exists while a write of the tenant is queued or in flight.
#[derive(Default)]
struct Queue {
    waiting: VecDeque<Waiter>,
    writers: usize,
    busy: HashSet<String>,
}

impl Queue {
    /// The next statement's group: the waiting writes, in queue order, of subjects no statement
    /// in flight holds (up to [`MAX_GROUP`]); marks their subjects busy.
    fn take(&mut self) -> Vec<Waiter> {
        let mut group = Vec::new();
        let mut left = VecDeque::new();
        let mut taken: HashSet<String> = HashSet::new();
        while let Some(w) = self.waiting.pop_front() {
            if group.len() < MAX_GROUP && !self.busy.contains(&w.episode.subject_id) {
                if !taken.contains(&w.episode.subject_id) {
                    taken.insert(w.episode.subject_id.clone());
                }
                group.push(w);
            } else {
                left.push_back(w);
            }
        }
        self.waiting = left;
        self.busy.extend(taken);
        group
    }
}

/// The per-tenant queues of single-episode writes (one per server, in [`crate::AppState`]).
pub struct GroupCommit {
    pool: PgPool,
    hooks: Arc<Webhooks>,
    lexer: Arc<Lexer>,
    writers: usize,
    queues: Mutex<HashMap<String, Queue>>,
}

impl GroupCommit {
    /// Up to `writers` statements per tenant in flight (at least one).
    pub fn new(pool: PgPool, hooks: Arc<Webhooks>, lexer: Arc<Lexer>, writers: usize) -> Self {
        GroupCommit { pool, hooks, lexer, writers: writers.max(1), queues: Mutex::new(HashMap::new()) }
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Where episodes' lexemes are computed.
    pub fn lexer(&self) -> &Lexer {
        &self.lexer
    }

    /// Single-episode writes of `tenant` waiting for a statement.
    pub fn queued(&self, tenant: &str) -> usize {
        self.queues().get(tenant).map_or(0, |q| q.waiting.len())
    }

    fn queues(&self) -> MutexGuard<'_, HashMap<String, Queue>> {
        self.queues.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records one episode, alone or with the tenant's concurrent ones.
    pub async fn record(self: &Arc<Self>, tenant: &str, episode: NewEpisode) -> sqlx::Result<(Episode, Inserted)> {
        let (reply, answer) = oneshot::channel();
        // The lexemes are the largest share of an episode's insert: worked out here, on the
        // caller's task, while the writer's statement runs.
        let lexemes = self.lexer.one(&self.pool, &episode.payload).await;
        let groups = {
            let mut queues = self.queues();
            let queue = queues.entry(tenant.to_owned()).or_default();
            queue.waiting.push_back(Waiter { episode, lexemes, reply });
            self.start(queue)
        };
        self.spawn(tenant, groups);
        // The writer answers every waiter it takes, even when a write panics (then the reply is
        // dropped and this reports it).
        answer.await.unwrap_or(Err(sqlx::Error::WorkerCrashed))
    }

    /// The groups to write now: as many as there are free writers and waiting writes that may go.
    fn start(&self, queue: &mut Queue) -> Vec<Vec<Waiter>> {
        let mut groups = Vec::new();
        while queue.writers < self.writers {
            let group = queue.take();
            if group.is_empty() {
                break;
            }
            queue.writers += 1;
            groups.push(group);
        }
        groups
    }

    fn spawn(self: &Arc<Self>, tenant: &str, groups: Vec<Vec<Waiter>>) {
        for group in groups {
            let this = Arc::clone(self);
            let tenant = tenant.to_owned();
            tokio::spawn(async move { this.drain(tenant, group).await });
        }
    }

    /// Writes `group`, then whatever may go of what queued meanwhile, until nothing may.
    ///
    /// A group's callers are answered once the next group's statement is on its way: waking
    /// them (a task each, often on the other worker thread) then overlaps that statement's
    /// execution instead of delaying it. Their rows are committed either way; the answers wait
    /// only for the next statement to be sent.
    async fn drain(self: Arc<Self>, tenant: String, mut group: Vec<Waiter>) {
        let mut conn = None;
        let mut answers = Answers::new();
        while !group.is_empty() {
            let subjects: Vec<String> = group.iter().map(|w| w.episode.subject_id.clone()).collect();
            let last = std::mem::take(&mut answers);
            // A panic drops the group's replies (its callers see an error) and the connection
            // (in whatever state it was left); the queue goes on.
            let write = AssertUnwindSafe(self.write(&tenant, group, &mut conn)).catch_unwind();
            let (written, ()) = tokio::join!(write, async move { answer(last) });
            match written {
                Ok(next) => answers = next,
                Err(_) => conn = None,
            }
            let more = {
                let mut queues = self.queues();
                let Some(queue) = queues.get_mut(&tenant) else { return };
                for subject in &subjects {
                    queue.busy.remove(subject);
                }
                group = queue.take();
                if group.is_empty() {
                    queue.writers -= 1;
                }
                // The subjects just freed may let a free writer go too.
                let more = self.start(queue);
                if queue.writers == 0 && queue.waiting.is_empty() {
                    queues.remove(&tenant);
                }
                more
            };
            self.spawn(&tenant, more);
        }
        answer(answers);
    }

    /// Writes one group on `conn`, the drain's connection (acquired here when it has none): a
    /// writer keeps its connection while groups follow each other, since sqlx pings a pooled
    /// connection (a round trip) each time it comes back. After any error it is let go, and the
    /// next group takes a fresh one.
    /// Returns the answers of a group written in one statement, for the caller to send; a group
    /// that needed more (an episode refused, a key already used) is answered here.
    async fn write(&self, tenant: &str, group: Vec<Waiter>, conn: &mut Option<PoolConnection<Postgres>>) -> Answers {
        let mut lexemes = Vec::with_capacity(group.len());
        let (episodes, replies): (Vec<NewEpisode>, Vec<Reply>) = group
            .into_iter()
            .map(|w| {
                lexemes.push(w.lexemes);
                (w.episode, w.reply)
            })
            .unzip();
        // Ids in queue order: rows of one transaction share created_at, and ties order by id.
        let ids: Vec<Uuid> = episodes.iter().map(|_| new_id()).collect();
        crate::metrics::record_ingest_statement(episodes.len());
        let inserted = match conn {
            Some(c) => insert_new(c, &self.hooks, tenant, &ids, &episodes, &lexemes, Announce::EachRow).await,
            None => match crate::db::scope::single(&self.pool).await {
                Ok(c) => {
                    insert_new(conn.insert(c), &self.hooks, tenant, &ids, &episodes, &lexemes, Announce::EachRow).await
                }
                Err(e) => Err(e),
            },
        };
        if inserted.is_err() {
            *conn = None;
        }
        let stamps = match inserted {
            Ok(stamps) => stamps,
            Err(e) if replies.len() > 1 && matches!(e, sqlx::Error::Database(_)) => {
                // Refused by Postgres, so nothing was written: one at a time, only the faulty fail.
                for (((reply, id), episode), lexemes) in replies.into_iter().zip(ids).zip(episodes).zip(lexemes) {
                    let _ = reply.send(self.write_alone(tenant, id, episode, lexemes).await);
                }
                return Answers::new();
            }
            Err(e) => {
                answer_all(replies, e);
                return Answers::new();
            }
        };
        if stamps.iter().all(Option::is_some) {
            return replies
                .into_iter()
                .zip(episodes)
                .zip(stamps.into_iter().flatten())
                .map(|((reply, episode), stamp)| (reply, Ok((episode.stored(&stamp), Inserted::New))))
                .collect();
        }
        match with_stored(&self.pool, tenant, episodes.clone(), stamps.clone()).await {
            Ok(found) => {
                for (reply, row) in replies.into_iter().zip(found) {
                    let _ = reply.send(Ok(row));
                }
            }
            Err(e) if replies.len() > 1 && matches!(e, sqlx::Error::Database(_)) => {
                for ((reply, stamp), episode) in replies.into_iter().zip(stamps).zip(episodes) {
                    let one = with_stored(&self.pool, tenant, vec![episode], vec![stamp]).await;
                    let _ = reply.send(one.and_then(|mut r| r.pop().ok_or(sqlx::Error::RowNotFound)));
                }
            }
            Err(e) => answer_all(replies, e),
        }
        Answers::new()
    }

    async fn write_alone(
        &self,
        tenant: &str,
        id: Uuid,
        episode: NewEpisode,
        lexemes: Option<Tsvector>,
    ) -> sqlx::Result<(Episode, Inserted)> {
        let mut conn = crate::db::scope::single(&self.pool).await?;
        let one = std::slice::from_ref(&episode);
        let stamps = insert_new(&mut conn, &self.hooks, tenant, &[id], one, &[lexemes], Announce::EachRow).await?;
        drop(conn);
        with_stored(&self.pool, tenant, vec![episode], stamps).await?.pop().ok_or(sqlx::Error::RowNotFound)
    }
}

/// Callers' replies with what to answer them.
type Answers = Vec<(Reply, sqlx::Result<(Episode, Inserted)>)>;

/// Sends each caller its answer (a caller that went away is skipped).
fn answer(answers: Answers) {
    for (reply, result) in answers {
        let _ = reply.send(result);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn waiter(subject: &str) -> Waiter {
        let episode = NewEpisode {
            subject_id: subject.to_owned(),
            source: "chat".into(),
            kind: "message".into(),
            payload: Default::default(),
            metadata: Default::default(),
            provenance: Default::default(),
            session_id: None,
            occurred_at: None,
            idempotency_key: None,
        };
        Waiter { episode, lexemes: None, reply: oneshot::channel().0 }
    }

    fn subjects(group: &[Waiter]) -> Vec<&str> {
        group.iter().map(|w| w.episode.subject_id.as_str()).collect()
    }

    #[test]
    fn a_group_skips_busy_subjects_and_keeps_queue_order() {
        let mut queue = Queue::default();
        queue.busy.insert("b".into());
        queue.waiting.extend(["a", "b", "c", "a", "b"].map(waiter));
        let group = queue.take();
        assert_eq!(subjects(&group), ["a", "c", "a"]);
        assert_eq!(queue.waiting.iter().map(|w| w.episode.subject_id.as_str()).collect::<Vec<_>>(), ["b", "b"]);
        // Its subjects are now busy: nothing else may go until they are freed.
        assert!(queue.busy.contains("a") && queue.busy.contains("c"));
        assert!(queue.take().is_empty());
        queue.busy.remove("b");
        assert_eq!(subjects(&queue.take()), ["b", "b"]);
    }

    #[test]
    fn a_full_group_leaves_the_rest_of_its_subjects_for_later() {
        let mut queue = Queue::default();
        queue.waiting.extend((0..MAX_GROUP + 2).map(|i| waiter(if i % 2 == 0 { "x" } else { "y" })));
        assert_eq!(queue.take().len(), MAX_GROUP);
        // "x" and "y" are in flight: their later writes wait for that statement.
        assert!(queue.take().is_empty());
        assert_eq!(queue.waiting.len(), 2);
    }
}
