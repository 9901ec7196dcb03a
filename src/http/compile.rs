//! `POST /v1/memories/compile` (sync or async) and `GET /v1/memories/compile/{job_id}`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::db;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::{JsonBody, Tenant};
use crate::http::input::object_at;
use crate::services::compile::{compile_batch, CompileError};
use crate::services::jobs::{self, COMPILATION_FAILED};
use crate::state::AppState;

fn compile_error(e: CompileError) -> ApiError {
    match e {
        CompileError::Failed(cause) => {
            tracing::error!(request_id = crate::error::current_request_id().unwrap_or_default(),
                            error = %format!("{cause:#}"), "compilation failed");
            ApiError::client(StatusCode::BAD_GATEWAY, "compilation_failed", COMPILATION_FAILED)
        }
        CompileError::Db(e) => ApiError::Internal(e.into()),
    }
}

/// Compiles one bounded batch now, or queues a job (`"async": true`).
pub async fn compile(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    let mut errors = Vec::new();
    let parsed = object_at(&body, vec!["body".into()], &mut errors)
        .map(|mut r| (r.req_str("subject_id", 1, 256), r.opt_bool("async").unwrap_or(false)));
    let (subject_id, is_async) = match parsed {
        Some(p) if errors.is_empty() => p,
        _ => return Err(ApiError::validation(errors)),
    };
    if is_async {
        let (job, attached) = jobs::submit(&st.pool, &tenant, &subject_id, st.config.job_stale_secs).await?;
        st.job_notify.notify_one();
        let mut out = json!({ "job_id": job.id, "status": "pending", "subject_id": subject_id });
        if attached {
            out["attached"] = json!(true);
        }
        return Ok((StatusCode::ACCEPTED, Json(out)).into_response());
    }
    let batch =
        compile_batch(&st.pool, &st.embedder, &st.webhooks, &tenant, &subject_id, st.config.compile_batch_size, None)
            .await
            .map_err(compile_error)?;
    Ok(Json(json!({
        "subject_id": subject_id,
        "memories_created": batch.memories.len(),
        "memories": batch.memories,
        "has_more": batch.has_more,
        "remaining_episodes": batch.remaining,
    }))
    .into_response())
}

/// Polls a job of the caller's tenant.
pub async fn status(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path(job_id): Path<String>,
) -> ApiResult<Json<Value>> {
    let mut conn = db::scope::begin(&st.pool, &tenant).await?;
    let job = db::jobs::get(&mut conn, &tenant, &job_id)
        .await?
        .ok_or_else(|| ApiError::not_found("Job not found or expired"))?;
    let mut out = json!({ "job_id": job.id, "status": job.status, "subject_id": job.subject_id });
    match job.status.as_str() {
        "completed" => {
            out["memories_created"] = json!(job.memories_created);
            out["memories"] = json!([]);
        }
        "failed" => out["error"] = json!(job.error.unwrap_or_else(|| jobs::INTERNAL_FAILURE.to_string())),
        _ => {}
    }
    Ok(Json(out))
}
