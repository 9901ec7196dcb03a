//! `POST /v1/context`: the request and the bundle (REST and MCP).

use crate::error::ApiError;
use crate::input::rules::{between, chars, datetime, no_nul};
use crate::model::episode::Episode;
use crate::model::limits::{MAX_BUDGET_TOKENS, MAX_TASK_CHARS};
use crate::model::memory::Memory;
use crate::services::context::{provenance, Bundle, SessionInfo};
use crate::services::context_call::CallError;
use crate::services::receipts::ReceiptMeta;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// `POST /v1/context`. Unknown fields are ignored; optional fields may be `null` (absent).
#[derive(Debug, Deserialize, ToSchema, garde::Validate)]
pub struct ContextRequest {
    #[garde(custom(chars(1, 256)), custom(no_nul))]
    #[schema(min_length = 1, max_length = 256)]
    pub subject_id: String,
    #[garde(custom(chars(1, MAX_TASK_CHARS)), custom(no_nul))]
    #[schema(min_length = 1, max_length = 4000)]
    pub task: String,
    #[serde(default)]
    #[garde(custom(between(1, MAX_BUDGET_TOKENS)))]
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
    /// Whether a receipt is written, and what it records of the caller.
    #[serde(flatten)]
    #[garde(dive)]
    pub receipt: ReceiptFields,
}

/// What a request for a bundle (`/v1/context`, `/v1/handoff`) may say of its receipt: whether
/// one is written (the tenant's default otherwise) and the caller's ids it records.
#[derive(Debug, Default, Deserialize, ToSchema, garde::Validate)]
pub struct ReceiptFields {
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

impl ReceiptFields {
    /// Whether the caller asked for a receipt (None: the tenant's default), and what it records.
    pub fn into_meta(self) -> (Option<bool>, ReceiptMeta) {
        let meta = ReceiptMeta {
            query_id: self.query_id,
            task_id: self.task_id,
            parent_receipt_id: self.parent_receipt_id,
            caller_id: self.caller_id,
            caller_type: self.caller_type,
        };
        (self.emit_receipt, meta)
    }
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
