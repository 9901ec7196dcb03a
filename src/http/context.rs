//! `POST /v1/context`: the ranked, token-bounded bundle an agent reads before its prompt.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use crate::db;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::{JsonBody, Tenant};
use crate::http::input::object_at;
use crate::services::context::{assemble, provenance, ContextRequest};
use crate::services::receipts::{build_body, emit, should_emit, ReceiptMeta};
use crate::state::AppState;

/// Default budget when the request names none.
pub const DEFAULT_MAX_TOKENS: i64 = 4000;

/// Validates the request, applies the caller-identity gate, assembles the bundle.
pub async fn context(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<Value>> {
    let mut errors = Vec::new();
    let parsed = object_at(&body, vec!["body".into()], &mut errors).map(|mut r| {
        let req = ContextRequest {
            subject_id: r.req_str("subject_id", 1, 256),
            task: r.req_str("task", 1, 4000),
            max_tokens: r.opt_int("max_tokens", 1, 128_000).unwrap_or(DEFAULT_MAX_TOKENS) as usize,
            session_id: r.opt_str("session_id", 256),
            as_of: r.opt_datetime("as_of").map(crate::model::time::truncate_micros),
            options: Default::default(),
        };
        let emit_receipt = r.opt_bool("emit_receipt");
        let meta = ReceiptMeta {
            query_id: r.opt_str("query_id", 64),
            task_id: r.opt_str("task_id", 64),
            parent_receipt_id: r.opt_str("parent_receipt_id", 26),
            caller_id: r.opt_str("caller_id", 256),
            caller_type: r.opt_str("caller_type", 64),
        };
        (req, emit_receipt, meta)
    });
    let (req, emit_receipt, meta) = match parsed {
        Some(p) if errors.is_empty() => p,
        _ => return Err(ApiError::validation(errors)),
    };
    let mut conn = st.pool.acquire().await?;
    let config = db::compile::tenant_config(&mut conn, &tenant).await?;
    drop(conn);
    let identified = meta.caller_id.as_deref().is_some_and(|s| !s.is_empty())
        && meta.caller_type.as_deref().is_some_and(|s| !s.is_empty());
    if config.get("require_caller_identity") == Some(&json!(true)) && !identified {
        return Err(ApiError::client(
            StatusCode::UNAUTHORIZED,
            "http_error",
            "tenant config requires caller_id and caller_type on every context assembly call",
        ));
    }
    let bundle = assemble(&st.pool, &st.embedder, &st.task_vectors, &tenant, &req).await?;
    let mut receipt_id = None;
    if should_emit(&config, emit_receipt) {
        let body = build_body(&tenant, &req, &bundle, &meta, "retrieval", st.embedder.model_id());
        // A receipt that cannot be written never fails the context call (it says so instead).
        match emit(&st.pool, &st.signing_keys, &config, &tenant, body).await {
            Ok(id) => receipt_id = Some(id),
            Err(e) => tracing::error!(error = %format!("{e:#}"), "receipt write failed"),
        }
    }
    Ok(Json(json!({
        "subject_id": req.subject_id,
        "task": req.task,
        "facts": bundle.facts,
        "episodes": bundle.episodes,
        "procedures": bundle.procedures,
        "provenance": provenance(&bundle),
        "assembled_context": bundle.assembled_context,
        "token_estimate": bundle.token_estimate,
        "sessions": bundle.sessions,
        "as_of": crate::model::time::format(&bundle.as_of),
        "receipt_emitted": receipt_id.is_some(),
        "receipt_id": receipt_id,
    })))
}
