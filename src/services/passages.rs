//! The passage worker: gives the passages compile wrote (`db::passages`) their vectors, in the
//! background, so compile's pace does not depend on how long messages are. Every process that
//! runs the compile-job worker runs it; passages are leased (`mnemo_claim_passages`), so
//! replicas share the work and a passage whose worker died is taken again after a minute.
//! A passage counts for retrieval from when its vector is written (`embedded_at`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pgvector::Vector;
use sqlx::PgPool;
use tokio::sync::watch;

use crate::compile::text::{char_range, episode_text, passages};
use crate::db;
use crate::db::passages::{Claimed, PassageRange};
use crate::embed::{embed_texts, Embedder};

/// Passages embedded per batch: about half a second of MiniLM on two cores, so a compile call
/// arriving meanwhile waits little.
const BATCH: i32 = 16;
/// Episodes one backfill step reads (passages of episodes compiled before them).
const BACKFILL_SLICE: i64 = 200;
/// How long a backfill step waits for a subject a compile holds before trying later.
const BACKFILL_LOCK_WAIT: Duration = Duration::from_millis(100);
/// How often the worker looks for passages when nothing woke it.
const POLL: Duration = Duration::from_secs(2);
/// How often it looks again while a compile runs in this process (compile goes first: an
/// agent waits on it).
const YIELD: Duration = Duration::from_millis(50);

/// Compile calls running in this process; the worker waits while there are any.
static COMPILES: AtomicUsize = AtomicUsize::new(0);

/// Held by a running compile call (see [`COMPILES`]).
pub struct CompileRunning(());

impl CompileRunning {
    /// Marks a compile call as running until the value is dropped.
    pub fn start() -> Self {
        COMPILES.fetch_add(1, Ordering::SeqCst);
        CompileRunning(())
    }
}

impl Drop for CompileRunning {
    fn drop(&mut self) {
        COMPILES.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The passages of an episode's text (`compile::text::passages`) as rows to store, numbered
/// from 1 in text order; none for a short text.
pub fn ranges(episode_id: uuid::Uuid, text: &str) -> Vec<PassageRange> {
    passages(text)
        .into_iter()
        .zip(1i16..)
        .map(|((start, end), passage)| PassageRange {
            episode_id,
            passage,
            start_char: i32::try_from(start).unwrap_or(i32::MAX),
            end_char: i32::try_from(end).unwrap_or(i32::MAX),
        })
        .collect()
}

/// Embeds one batch of waiting passages; returns how many it leased.
pub async fn fill_batch(pool: &PgPool, embedder: &Arc<dyn Embedder>, limit: i32) -> anyhow::Result<usize> {
    let claimed = {
        let mut conn = pool.acquire().await?;
        db::passages::claim(&mut conn, limit).await?
    };
    if claimed.is_empty() {
        return Ok(0);
    }
    let texts: Vec<String> = claimed.iter().map(passage_text).collect();
    let vectors = embed_texts(embedder, texts).await?;
    let model = embedder.model_id();
    let mut by_subject: BTreeMap<(&str, &str), Vec<(&PassageRange, Vector)>> = BTreeMap::new();
    for (c, v) in claimed.iter().zip(vectors) {
        by_subject.entry((&c.tenant_id, &c.subject_id)).or_default().push((&c.range, Vector::from(v)));
    }
    for ((tenant, subject), rows) in by_subject {
        let mut tx = db::scope::begin(pool, tenant).await?;
        db::passages::fill(&mut tx, tenant, subject, &rows, model).await?;
        tx.commit().await?;
    }
    Ok(claimed.len())
}

/// The text of a leased passage: its range of its episode's text.
fn passage_text(c: &Claimed) -> String {
    let range = (usize::try_from(c.range.start_char).unwrap_or(0), usize::try_from(c.range.end_char).unwrap_or(0));
    char_range(&episode_text(&c.payload), range)
}

/// Embeds waiting passages until `shutdown` flips to true (compile's passages are found
/// within [`POLL`], or as soon as the compile calls of this process end).
pub async fn run_worker(pool: PgPool, embedder: Arc<dyn Embedder>, mut shutdown: watch::Receiver<bool>) {
    loop {
        if *shutdown.borrow() {
            return;
        }
        if COMPILES.load(Ordering::SeqCst) > 0 {
            tokio::select! {
                _ = tokio::time::sleep(YIELD) => {}
                _ = shutdown.changed() => {}
            }
            continue;
        }
        match fill_batch(&pool, &embedder, BATCH).await {
            Ok(0) => {}
            Ok(_) => continue,
            Err(e) => tracing::warn!(error = %format!("{e:#}"), "embedding passages failed"),
        }
        // Nothing to embed: write the passages older episodes lack, a slice at a time.
        match backfill_step(&pool).await {
            Ok(true) => continue,
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %format!("{e:#}"), "writing older episodes' passages failed"),
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// Writes the missing passages of one slice of the older episodes of a subject compiled before
/// passages existed (`compile_cursors.passages_through`, walked down to nothing); the worker
/// then embeds them as it does compile's. Returns false when no subject needs it, or the one
/// that does is held by a compile (tried again later).
pub async fn backfill_step(pool: &PgPool) -> anyhow::Result<bool> {
    let next = {
        let mut conn = pool.acquire().await?;
        db::passages::to_backfill(&mut conn).await?
    };
    let Some((tenant, subject)) = next else { return Ok(false) };
    let mut tx = db::scope::begin(pool, &tenant).await?;
    if !db::compile::lock_subject_within(&mut tx, &tenant, &subject, BACKFILL_LOCK_WAIT).await? {
        return Ok(false);
    }
    let Some(through) = db::passages::backfill_through(&mut tx, &tenant, &subject).await? else {
        tx.commit().await?;
        return Ok(true);
    };
    let rows = db::passages::without_passages(&mut tx, &tenant, &subject, through, BACKFILL_SLICE).await?;
    let missing: Vec<PassageRange> =
        rows.iter().flat_map(|(id, _, payload)| ranges(*id, &episode_text(payload))).collect();
    db::passages::insert(&mut tx, &tenant, &subject, &missing).await?;
    let full = i64::try_from(rows.len()).unwrap_or(i64::MAX) >= BACKFILL_SLICE;
    let rest = rows.iter().map(|(_, seq, _)| *seq).min().filter(|_| full).map(|s| s - 1).filter(|&s| s > 0);
    db::passages::set_backfill_through(&mut tx, &tenant, &subject, rest).await?;
    tx.commit().await?;
    Ok(true)
}

/// Embeds every waiting passage now (for `mnemo reembed` and benchmarks); returns how many.
pub async fn fill_all(pool: &PgPool, embedder: &Arc<dyn Embedder>) -> anyhow::Result<usize> {
    let mut total = 0;
    loop {
        let n = fill_batch(pool, embedder, 64).await?;
        if n == 0 {
            return Ok(total);
        }
        total += n;
    }
}
