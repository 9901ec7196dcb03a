//! `POST /v1/memories/compile` (sync or async) and `GET /v1/memories/compile/{job_id}`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::extract::{JsonBody, Tenant};
use crate::api::schema::{CommonErrors, TenantHeader};
use crate::db;
use crate::error::{ApiError, ApiResult, Envelope};
use crate::http::body::valid;
use crate::input::rules::{chars, no_nul};
use crate::model::memory::Memory;
use crate::services::compile::{compile_batch_for, CompileError};
use crate::services::jobs::{self, COMPILATION_FAILED};
use crate::state::AppState;

/// The answer to a failed compile: 502 with the static message (cause logged), or internal.
pub(crate) fn compile_error(e: CompileError) -> ApiError {
    match e {
        CompileError::Failed(cause) => {
            tracing::error!(request_id = crate::error::current_request_id().unwrap_or_default(),
                            error = %format!("{cause:#}"), "compilation failed");
            ApiError::client(StatusCode::BAD_GATEWAY, "compilation_failed", COMPILATION_FAILED)
        }
        CompileError::Db(e) => ApiError::Internal(e.into()),
    }
}

/// `POST /v1/memories/compile`.
#[derive(Debug, Deserialize, ToSchema, garde::Validate)]
pub struct CompileRequest {
    #[garde(custom(chars(1, 256)), custom(no_nul))]
    #[schema(min_length = 1, max_length = 256)]
    pub subject_id: String,
    /// Queue a job and answer 202 instead of compiling one batch now.
    #[serde(rename = "async", default)]
    #[garde(skip)]
    #[schema(default = false)]
    pub is_async: Option<bool>,
}

/// What one synchronous call compiled (within its time budget; call again while `has_more`).
#[derive(Debug, Serialize, ToSchema)]
pub struct CompileResult {
    pub subject_id: String,
    pub memories_created: usize,
    pub memories: Vec<Memory>,
    pub has_more: bool,
    pub remaining_episodes: i64,
    /// What the batch cost the LLM compiler (absent with the heuristic compiler).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub llm_tokens: Option<LlmTokens>,
}

/// Tokens sent to (`input`) and received from (`output`) the LLM compiler's model.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct LlmTokens {
    pub input: u64,
    pub output: u64,
}

impl LlmTokens {
    pub(crate) fn of(cost: Option<crate::services::compile::LlmCost>) -> Option<LlmTokens> {
        cost.map(|c| LlmTokens { input: c.tokens_in, output: c.tokens_out })
    }
}

/// A compile job as submitted or polled.
#[derive(Debug, Serialize, ToSchema)]
pub struct CompileJob {
    pub job_id: String,
    #[schema(value_type = JobStatus, inline)]
    pub status: String,
    pub subject_id: String,
    /// True when the submit joined a job already queued for the subject.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub attached: Option<bool>,
    /// Set once completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub memories_created: Option<i32>,
    /// Empty once completed (poll the timeline for the memories).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub memories: Option<Vec<Memory>>,
    /// Set once failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub error: Option<String>,
    /// What the job has cost the LLM compiler so far (absent when it used no model).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub llm_tokens: Option<LlmTokens>,
    /// Episodes compiled so far out of the job's total (absent until its first slice is done).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub progress: Option<JobProgress>,
}

/// How far a compile job has got: `processed` episodes out of `total` (what it compiled plus
/// what was still pending after its latest slice; episodes added meanwhile raise it).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct JobProgress {
    pub processed: i64,
    pub total: i64,
}

/// A compile job's status.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum JobStatus {
    Pending,
    Running,
    Completed,
    Failed,
}

impl CompileJob {
    fn new(job_id: String, status: String, subject_id: String) -> Self {
        CompileJob {
            job_id,
            status,
            subject_id,
            attached: None,
            memories_created: None,
            memories: None,
            error: None,
            llm_tokens: None,
            progress: None,
        }
    }
}

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
    let batch = compile_batch_for(&st, &tenant, &subject_id, None).await.map_err(compile_error)?;
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
