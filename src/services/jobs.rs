//! Async compile jobs: submission with attach/supersede, and the worker that drains them.
//!
//! Jobs live in Postgres. Every mnemo process runs a worker that claims jobs with
//! `FOR UPDATE SKIP LOCKED`, so replicas share the work and a job outlives the process
//! that accepted it: a pending job waits for any worker, and a running job whose heartbeat
//! went stale (its worker died) is claimed again.

use std::time::Duration;

use sqlx::PgPool;
use tokio::sync::watch;

use crate::db;
use crate::db::jobs::JobRow;
use crate::services::compile::{compile_batch_for, CompileError};
use crate::state::AppState;

/// Static message for compiler/provider failures (no internal detail reaches clients).
pub const COMPILATION_FAILED: &str =
    "Compilation failed: the compiler or embedding provider is unavailable or misconfigured. \
     The episodes were left uncompiled; see the server logs.";
/// Static message for other failures.
pub const INTERNAL_FAILURE: &str = "An internal error occurred during compilation.";
/// Upper bound on slices per job.
const MAX_ITERATIONS: usize = 2000;
/// Jobs that crashed their worker this many times are failed instead of retried forever.
const MAX_ATTEMPTS: i32 = 5;

fn new_job_id() -> String {
    format!("{:016x}", rand::random::<u64>())
}

/// Submits a job, or attaches to a live one of the same subject (`true` when attached).
pub async fn submit(pool: &PgPool, tenant: &str, subject_id: &str, stale_secs: i64) -> sqlx::Result<(JobRow, bool)> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    db::jobs::lock_submit(&mut tx, tenant, subject_id).await?;
    let now = chrono::Utc::now();
    for job in db::jobs::open_jobs(&mut tx, tenant, subject_id).await? {
        let last_sign = job.heartbeat_at.unwrap_or(job.created_at);
        if (now - last_sign).num_seconds() < stale_secs {
            tx.commit().await?;
            return Ok((job, true));
        }
        db::jobs::fail(&mut tx, tenant, &job.id, "superseded: no heartbeat from its worker").await?;
    }
    let job = db::jobs::insert(&mut tx, tenant, subject_id, &new_job_id()).await?;
    tx.commit().await?;
    Ok((job, false))
}

/// Runs jobs until `shutdown` flips to true.
pub async fn run_worker(state: AppState, mut shutdown: watch::Receiver<bool>) {
    let mut last_cleanup = std::time::Instant::now() - Duration::from_secs(3600);
    loop {
        if *shutdown.borrow() {
            return;
        }
        if last_cleanup.elapsed() >= Duration::from_secs(3600) {
            last_cleanup = std::time::Instant::now();
            cleanup(&state).await;
        }
        match claim(&state).await {
            Ok(Some(job)) => {
                drain(&state, job).await;
                continue;
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "claiming a compile job failed"),
        }
        tokio::select! {
            _ = state.job_notify.notified() => {}
            _ = tokio::time::sleep(Duration::from_millis(state.config.job_poll_ms)) => {}
            _ = shutdown.changed() => {}
        }
    }
}

async fn claim(state: &AppState) -> sqlx::Result<Option<JobRow>> {
    let mut conn = state.pool.acquire().await?;
    db::jobs::claim_next(&mut conn, state.config.job_stale_secs).await
}

async fn cleanup(state: &AppState) {
    match crate::services::receipts::apply_retention(&state.pool).await {
        Ok(n) if n > 0 => tracing::info!(tombstoned = n, "receipt retention applied"),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %format!("{e:#}"), "receipt retention failed"),
    }
    let Ok(mut conn) = state.pool.acquire().await else { return };
    match db::jobs::delete_finished(&mut conn, state.config.job_retention_hours).await {
        Ok(n) if n > 0 => tracing::info!(deleted = n, "expired compile jobs removed"),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "compile job retention failed"),
    }
}

async fn drain(state: &AppState, job: JobRow) {
    let pool = &state.pool;
    if job.attempts > MAX_ATTEMPTS {
        finish_failed(pool, &job, INTERNAL_FAILURE).await;
        return;
    }
    let mut created = job.memories_created;
    let mut done = job.episodes_done;
    for _ in 0..MAX_ITERATIONS {
        // One slice: what fits the compile budget, committed batch by batch, then a heartbeat
        // with the job's progress.
        let outcome = compile_batch_for(state, &job.tenant_id, &job.subject_id, Some(&job.id)).await;
        match outcome {
            Ok(batch) => {
                created += batch.memories.len() as i32;
                done += batch.episodes as i64;
                let progress = db::jobs::Progress {
                    memories_created: created,
                    episodes_done: done,
                    episodes_pending: batch.remaining,
                };
                if let Ok(mut tx) = db::scope::begin(pool, &job.tenant_id).await {
                    let mut ok = db::jobs::heartbeat(&mut tx, &job.tenant_id, &job.id, progress).await.is_ok();
                    if let Some(cost) = batch.llm.filter(|c| c.tokens_in + c.tokens_out > 0) {
                        ok &= db::jobs::add_tokens(&mut tx, &job.tenant_id, &job.id, cost.tokens_in, cost.tokens_out)
                            .await
                            .is_ok();
                    }
                    if ok {
                        let _ = tx.commit().await;
                    }
                }
                if !batch.has_more {
                    break;
                }
            }
            // The database went away (a failover, a restart): the batch's transaction did not
            // commit, so the job is left running; once its heartbeat is stale a worker claims
            // it again (counted against MAX_ATTEMPTS) and compiles what is still uncompiled.
            Err(CompileError::Db(e)) if crate::error::sqlx_unavailable(&e) => {
                tracing::warn!(job_id = %job.id, error = %e, "database unavailable: compile job left for a retry");
                return;
            }
            Err(CompileError::Failed(e)) if crate::error::database_unavailable(&e) => {
                tracing::warn!(job_id = %job.id, error = %format!("{e:#}"), "database unavailable: compile job left for a retry");
                return;
            }
            Err(CompileError::Failed(e)) => {
                tracing::error!(job_id = %job.id, error = %format!("{e:#}"), "compile job failed");
                finish_failed(pool, &job, COMPILATION_FAILED).await;
                crate::metrics::record_job(false);
                return;
            }
            Err(CompileError::Db(e)) => {
                tracing::error!(job_id = %job.id, error = %e, "compile job failed");
                finish_failed(pool, &job, INTERNAL_FAILURE).await;
                crate::metrics::record_job(false);
                return;
            }
        }
    }
    crate::metrics::record_job(true);
    let done = async {
        let mut tx = db::scope::begin(pool, &job.tenant_id).await?;
        db::jobs::complete(&mut tx, &job.tenant_id, &job.id, created).await?;
        tx.commit().await
    };
    if let Err(e) = done.await {
        tracing::error!(job_id = %job.id, error = %e, "marking job completed failed");
    }
}

async fn finish_failed(pool: &PgPool, job: &JobRow, message: &str) {
    let failed = async {
        let mut tx = db::scope::begin(pool, &job.tenant_id).await?;
        db::jobs::fail(&mut tx, &job.tenant_id, &job.id, message).await?;
        tx.commit().await
    };
    if let Err(e) = failed.await {
        tracing::error!(job_id = %job.id, error = %e, "marking job failed failed");
    }
}
