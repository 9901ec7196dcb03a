//! `POST /v1/memories/compile` (sync or async) and `GET /v1/memories/compile/{job_id}`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::api::compile::{compile_error, CompileJob, CompileRequest, CompileResult, JobProgress, LlmTokens};
use crate::api::extract::{JsonBody, Tenant};
use crate::api::schema::{CommonErrors, TenantHeader};
use crate::db;
use crate::error::{ApiError, ApiResult, Envelope};
use crate::http::body::valid;
use crate::services::compile::compile_call;
use crate::services::jobs::{self};
use crate::state::AppState;

/// Compiles what fits in the call's time budget now (committed; `has_more` when episodes are
/// left), or queues a job (`"async": true`).
#[utoipa::path(post, path = "/v1/memories/compile", tag = "memories",
    summary = "Compile pending episodes (sync batch or async job)",
    params(TenantHeader), request_body = CompileRequest,
    responses((status = 200, description = "What fitted in the call's time budget compiled and committed", body = CompileResult),
              (status = 202, description = "Job queued or attached", body = CompileJob),
              (status = 502, description = "Compiler or embedder unavailable; nothing consumed", body = Envelope),
              CommonErrors))]
pub async fn compile(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    let req: CompileRequest = valid(body)?;
    let (subject_id, is_async) = (req.subject_id, req.is_async.unwrap_or(false));
    if is_async {
        let (job, attached) = jobs::submit(&st.pool, &tenant, &subject_id, st.config.job_stale_secs).await?;
        st.job_notify.notify_one();
        let mut out = CompileJob::new(job.id, "pending".into(), subject_id);
        out.attached = attached.then_some(true);
        return Ok((StatusCode::ACCEPTED, Json(out)).into_response());
    }
    let batch = compile_call(st.compile_deps(), st.compile_limits(), &tenant, &subject_id, None)
        .await
        .map_err(compile_error)?;
    Ok(Json(CompileResult {
        subject_id,
        memories_created: batch.memories.len(),
        memories: batch.memories,
        has_more: batch.has_more,
        remaining_episodes: batch.remaining,
        llm_tokens: LlmTokens::of(batch.llm),
    })
    .into_response())
}

/// Polls a job of the caller's tenant.
#[utoipa::path(get, path = "/v1/memories/compile/{job_id}", tag = "memories", summary = "Poll a compile job",
    params(TenantHeader, ("job_id" = String, Path, description = "Identifier.")),
    responses((status = 200, description = "Job", body = CompileJob),
              (status = 404, description = "Job not found or expired", body = Envelope)))]
pub async fn status(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path(job_id): Path<String>,
) -> ApiResult<Json<CompileJob>> {
    let mut conn = db::scope::begin(&st.pool, &tenant).await?;
    let job = db::jobs::get(&mut conn, &tenant, &job_id)
        .await?
        .ok_or_else(|| ApiError::not_found("Job not found or expired"))?;
    let mut out = CompileJob::new(job.id, job.status, job.subject_id);
    out.progress = job.episodes_total.map(|total| JobProgress { processed: job.episodes_done, total });
    if job.llm_tokens_in + job.llm_tokens_out > 0 {
        out.llm_tokens =
            Some(LlmTokens { input: job.llm_tokens_in.max(0) as u64, output: job.llm_tokens_out.max(0) as u64 });
    }
    match out.status.as_str() {
        "completed" => {
            out.memories_created = Some(job.memories_created);
            out.memories = Some(Vec::new());
        }
        "failed" => out.error = Some(job.error.unwrap_or_else(|| jobs::INTERNAL_FAILURE.to_string())),
        _ => {}
    }
    Ok(Json(out))
}
