//! `POST /v1/memories/compile` and its jobs: the request, the result of a call, a job's status,
//! and the error mapping of a failed compile (REST and MCP).

use crate::error::ApiError;
use crate::input::rules::{chars, no_nul};
use crate::model::memory::Memory;
use crate::services::compile::CompileError;
use crate::services::jobs::COMPILATION_FAILED;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

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

impl CompileJob {
    /// A job's status with no progress or result yet.
    pub fn new(job_id: String, status: String, subject_id: String) -> Self {
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
