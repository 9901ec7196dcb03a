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
        let _emit_receipt = r.opt_bool("emit_receipt");
        let _ids = (r.opt_str("query_id", 64), r.opt_str("task_id", 64), r.opt_str("parent_receipt_id", 26));
        let caller = (r.opt_str("caller_id", 256), r.opt_str("caller_type", 64));
        (req, caller)
    });
    let (req, (caller_id, caller_type)) = match parsed {
        Some(p) if errors.is_empty() => p,
        _ => return Err(ApiError::validation(errors)),
    };
    let mut conn = st.pool.acquire().await?;
    let config = db::compile::tenant_config(&mut conn, &tenant).await?;
    drop(conn);
    let identified = caller_id.is_some_and(|s| !s.is_empty()) && caller_type.is_some_and(|s| !s.is_empty());
    if config.get("require_caller_identity") == Some(&json!(true)) && !identified {
        return Err(ApiError::client(
            StatusCode::UNAUTHORIZED,
            "http_error",
            "tenant config requires caller_id and caller_type on every context assembly call",
        ));
    }
    let bundle = assemble(&st.pool, &st.embedder, &st.task_vectors, &tenant, &req).await?;
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
        "receipt_id": null,
        "receipt_emitted": false,
    })))
}
