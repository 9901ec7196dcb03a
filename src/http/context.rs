//! `POST /v1/context`: the ranked, token-bounded bundle an agent reads before its prompt.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult};
use crate::http::body::valid;
use crate::http::extract::{JsonBody, Tenant};
use crate::http::schema::{CommonErrors, TenantHeader};
use crate::input::rules::{between, chars, datetime, no_nul};
use crate::model::episode::Episode;
use crate::model::memory::Memory;
use crate::services::context::{self as assemble, provenance, Bundle, SessionInfo};
use crate::services::context_call::{context_call, CallError};
use crate::services::receipts::ReceiptMeta;
use crate::state::AppState;

/// Default budget when the request names none.
pub const DEFAULT_MAX_TOKENS: i64 = 4000;

/// `POST /v1/context`. Unknown fields are ignored; optional fields may be `null` (absent).
#[derive(Debug, Deserialize, ToSchema, garde::Validate)]
pub struct ContextRequest {
    #[garde(custom(chars(1, 256)), custom(no_nul))]
    #[schema(min_length = 1, max_length = 256)]
    pub subject_id: String,
    #[garde(custom(chars(1, 4000)), custom(no_nul))]
    #[schema(min_length = 1, max_length = 4000)]
    pub task: String,
    #[serde(default)]
    #[garde(custom(between(1, 128_000)))]
    #[schema(minimum = 1, maximum = 128000, default = 4000)]
    pub max_tokens: Option<i64>,
    #[serde(default)]
    #[garde(custom(chars(0, 256)), custom(no_nul))]
    #[schema(max_length = 256)]
    pub session_id: Option<String>,
    /// mnemo extension: assemble from what was believed at this instant
    #[serde(default, deserialize_with = "datetime")]
    #[garde(skip)]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub as_of: Option<DateTime<Utc>>,
    #[serde(default)]
    #[garde(skip)]
    pub emit_receipt: Option<bool>,
    #[serde(default)]
    #[garde(custom(chars(0, 64)), custom(no_nul))]
    #[schema(max_length = 64)]
    pub query_id: Option<String>,
    #[serde(default)]
    #[garde(custom(chars(0, 64)), custom(no_nul))]
    #[schema(max_length = 64)]
    pub task_id: Option<String>,
    #[serde(default)]
    #[garde(custom(chars(0, 26)), custom(no_nul))]
    #[schema(max_length = 26)]
    pub parent_receipt_id: Option<String>,
    #[serde(default)]
    #[garde(custom(chars(0, 256)), custom(no_nul))]
    #[schema(max_length = 256)]
    pub caller_id: Option<String>,
    #[serde(default)]
    #[garde(custom(chars(0, 64)), custom(no_nul))]
    #[schema(max_length = 64)]
    pub caller_type: Option<String>,
}

/// The bundle an agent reads: ranked facts, procedures and episodes, and their rendering.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContextBundle {
    pub subject_id: String,
    pub task: String,
    pub facts: Vec<Memory>,
    pub episodes: Vec<Episode>,
    pub procedures: Vec<Memory>,
    /// Ids of what was included, by kind.
    #[schema(value_type = Object)]
    pub provenance: Value,
    pub assembled_context: String,
    pub token_estimate: usize,
    pub sessions: Vec<SessionInfo>,
    #[schema(format = DateTime)]
    pub as_of: String,
    pub receipt_emitted: bool,
    pub receipt_id: Option<String>,
}

impl ContextBundle {
    /// The wire shape of an assembled bundle for the request's subject and task.
    pub(crate) fn new(bundle: Bundle, subject_id: String, task: String, receipt_id: Option<String>) -> ContextBundle {
        ContextBundle {
            provenance: provenance(&bundle),
            as_of: crate::model::time::format(&bundle.as_of),
            subject_id,
            task,
            facts: bundle.facts,
            episodes: bundle.episodes,
            procedures: bundle.procedures,
            assembled_context: bundle.assembled_context,
            token_estimate: bundle.token_estimate,
            sessions: bundle.sessions,
            receipt_emitted: receipt_id.is_some(),
            receipt_id,
        }
    }
}

/// The answer to a refused context or handoff call (401 for the caller-identity gate).
pub(crate) fn refused(e: CallError) -> ApiError {
    match e {
        CallError::CallerIdentityRequired => ApiError::client(
            StatusCode::UNAUTHORIZED,
            "http_error",
            "tenant config requires caller_id and caller_type on every context assembly call",
        ),
        CallError::Internal(e) => ApiError::Internal(e),
    }
}

/// Validates the request, applies the caller-identity gate, assembles the bundle.
#[utoipa::path(post, path = "/v1/context", tag = "context", summary = "Ranked, token-bounded context bundle",
    params(TenantHeader), request_body = ContextRequest,
    responses((status = 200, description = "Bundle", body = ContextBundle), CommonErrors))]
pub async fn context(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<ContextBundle>> {
    let body: ContextRequest = valid(body)?;
    let meta = ReceiptMeta {
        query_id: body.query_id,
        task_id: body.task_id,
        parent_receipt_id: body.parent_receipt_id,
        caller_id: body.caller_id,
        caller_type: body.caller_type,
    };
    let emit_receipt = body.emit_receipt;
    let req = assemble::ContextRequest {
        subject_id: body.subject_id,
        task: body.task,
        max_tokens: body.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS) as usize,
        session_id: body.session_id,
        as_of: body.as_of.map(crate::model::time::truncate_micros),
        options: Default::default(),
        policy: Default::default(),
    };
    let (bundle, receipt_id) = match context_call(&st, &tenant, &req, emit_receipt, &meta).await {
        Ok(done) => done,
        Err(e) => return Err(refused(e)),
    };
    Ok(Json(ContextBundle::new(bundle, req.subject_id, req.task, receipt_id)))
}
