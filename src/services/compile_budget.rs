//! A compile call bounded by time: batches sized to fit what is left of the call's budget, each
//! committed on its own, so every call makes progress and answers in time.
//!
//! A subject's backlog may hold far more work than one request can do (a long chat's messages,
//! a bulk import). A call compiles a first small batch, measures what an episode cost, and sizes
//! the next batch to fit the time left (with a margin, growing at most fourfold at a time) until
//! the budget or the call's episode cap is spent or nothing is pending. Each batch is a whole
//! compile (lock, cursor, memories, supersession, cursor moved, commit), so a call that stops
//! early has still committed what it did and answers `has_more`; the client's next call goes on
//! from the cursor. Batch boundaries never change the memories made (the pipeline is
//! independent of how a backlog is split; `tests/api/compile.rs` checks it).

use std::time::{Duration, Instant};

use sqlx::PgPool;

use crate::db;
use crate::services::compile::{compile_batch_waiting, BatchOutcome, CompileDeps, CompileError, LlmCost};

/// Episodes in a call's first batch: small enough to be quick on long messages, large enough
/// that a batch's fixed costs (reads, commit) stay a small share.
pub const FIRST_BATCH: i64 = 16;
/// Most episodes in one batch of a call (a batch is one transaction).
const MAX_BATCH: i64 = 500;
/// Share of the time left that the next batch is sized to take (the rest is margin for an
/// episode dearer than the ones measured).
const FILL: f64 = 0.6;
/// Least time a call waits for another compile of the subject to release its lock.
const MIN_LOCK_WAIT: Duration = Duration::from_secs(1);

/// How much one compile call may do.
#[derive(Debug, Clone, Copy)]
pub struct CallLimits {
    /// Most episodes the call consumes.
    pub max_episodes: i64,
    /// Wall time after which the call starts no further batch.
    pub budget: Duration,
}

/// Compiles batches until `limits` are spent or nothing is pending; the outcome sums the
/// batches (memories, episodes, costs, phases) and carries the last one's `has_more`.
pub async fn compile_within(
    deps: CompileDeps<'_>,
    tenant: &str,
    subject_id: &str,
    limits: CallLimits,
    job_id: Option<&str>,
) -> Result<BatchOutcome, CompileError> {
    let started = Instant::now();
    let max = limits.max_episodes.max(1);
    let mut total = BatchOutcome::default();
    let mut size = FIRST_BATCH.min(max);
    loop {
        let left = limits.budget.saturating_sub(started.elapsed());
        let t = Instant::now();
        let out = compile_batch_waiting(deps, tenant, subject_id, size, job_id, Some(left.max(MIN_LOCK_WAIT))).await?;
        let spent = t.elapsed();
        let done = out.episodes;
        merge(&mut total, out);
        let consumed = total.episodes as i64;
        if !total.has_more || done == 0 || consumed >= max {
            return Ok(total);
        }
        match next_size(limits.budget.saturating_sub(started.elapsed()), spent, done, size) {
            Some(n) => size = n.min(max - consumed),
            None => return Ok(total),
        }
    }
}

/// The next batch's size: what fits [`FILL`] of the time `left` at the rate the last batch of
/// `last_size` took (`spent` for `done` episodes), at most four times the last size; None when
/// not even one episode fits.
fn next_size(left: Duration, spent: Duration, done: usize, last_size: i64) -> Option<i64> {
    let per_episode = spent.as_secs_f64() / done.max(1) as f64;
    let fits = (left.as_secs_f64() * FILL / per_episode.max(1e-6)).floor();
    if fits < 1.0 {
        return None;
    }
    Some((fits as i64).min(last_size.saturating_mul(4)).clamp(1, MAX_BATCH))
}

/// Wall time of a batch's phases (for benchmarks and logs; never part of a response).
#[derive(Debug, Clone, Copy, Default)]
pub struct Phases {
    /// Lock, cursor, pending episodes, tenant config.
    pub read: Duration,
    /// Drafts from the episodes (heuristic patterns, sanitising) and their texts.
    pub extract: Duration,
    /// Linking updates to the current facts (reads included).
    pub link: Duration,
    /// The embedder, on the blocking pool.
    pub embed: Duration,
    /// Memory and episode-vector inserts.
    pub insert: Duration,
    /// Reading the active set, deciding and writing supersessions.
    pub supersede: Duration,
    /// Session digests: sizes, the due sessions' user messages, the digests' vectors and rows.
    pub digest: Duration,
    /// Requests to forget, term counts, cursor, remaining count, webhook, commit.
    pub finish: Duration,
}

impl Phases {
    /// Adds another batch's phases to these.
    pub fn add(&mut self, o: &Phases) {
        self.read += o.read;
        self.extract += o.extract;
        self.link += o.link;
        self.embed += o.embed;
        self.insert += o.insert;
        self.supersede += o.supersede;
        self.digest += o.digest;
        self.finish += o.finish;
    }
}

/// The answer of a batch that found the subject's lock held past its wait: nothing consumed,
/// and what is pending as of now.
pub(crate) async fn busy_outcome(pool: &PgPool, tenant: &str, subject_id: &str) -> Result<BatchOutcome, CompileError> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    let cursor = db::compile::cursor(&mut tx, tenant, subject_id).await?;
    let remaining = db::compile::remaining(&mut tx, tenant, subject_id, cursor).await?;
    tx.commit().await?;
    Ok(BatchOutcome { has_more: remaining > 0, remaining, ..BatchOutcome::default() })
}

fn merge(total: &mut BatchOutcome, out: BatchOutcome) {
    total.memories.extend(out.memories);
    total.episodes += out.episodes;
    total.has_more = out.has_more;
    total.remaining = out.remaining;
    total.phases.add(&out.phases);
    if let Some(c) = out.llm {
        let t = total.llm.get_or_insert_with(LlmCost::default);
        t.tokens_in += c.tokens_in;
        t.tokens_out += c.tokens_out;
        t.calls += c.calls;
        t.fallback_episodes += c.fallback_episodes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn the_next_batch_fits_the_time_left_with_a_margin() {
        // 10 ms an episode, 1 s left: 60 fit, but at most four times the last batch.
        assert_eq!(next_size(MS(1000), MS(160), 16, 16), Some(60));
        assert_eq!(next_size(MS(10_000), MS(160), 16, 16), Some(64));
        assert_eq!(next_size(MS(100_000), MS(1600), 160, 400), Some(MAX_BATCH));
    }

    #[test]
    fn no_batch_when_not_one_episode_fits() {
        assert_eq!(next_size(MS(10), MS(160), 16, 16), None);
        assert_eq!(next_size(Duration::ZERO, MS(1), 16, 16), None);
    }

    #[test]
    fn merging_sums_work_and_keeps_the_last_state() {
        let mut total = BatchOutcome::default();
        let one = BatchOutcome {
            episodes: 3,
            has_more: true,
            remaining: 5,
            llm: Some(LlmCost { tokens_in: 10, tokens_out: 2, calls: 1, fallback_episodes: 0 }),
            ..BatchOutcome::default()
        };
        merge(&mut total, one.clone());
        merge(&mut total, BatchOutcome { episodes: 5, has_more: false, remaining: 0, ..one });
        assert_eq!((total.episodes, total.has_more, total.remaining), (8, false, 0));
        assert_eq!(total.llm.map(|c| (c.tokens_in, c.calls)), Some((20, 2)));
    }
}
