//! `POST /v1/context`: the ranked, token-bounded bundle an agent reads before its prompt.

use axum::extract::State;
use axum::Json;

use crate::api::context::{refused, ContextBundle, ContextRequest};
use crate::api::extract::{JsonBody, Tenant};
use crate::api::schema::{CommonErrors, TenantHeader};
use crate::error::ApiResult;
use crate::http::body::valid;
use crate::model::limits::DEFAULT_BUDGET_TOKENS;
use crate::services::context::{self as assemble};
use crate::services::context_call::context_call;
use crate::state::AppState;

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
    let (emit_receipt, meta) = body.receipt.into_meta();
    let req = assemble::ContextRequest {
        subject_id: body.subject_id,
        task: body.task,
        max_tokens: body.max_tokens.unwrap_or(DEFAULT_BUDGET_TOKENS) as usize,
        session_id: body.session_id,
        as_of: body.as_of.map(crate::model::time::truncate_micros),
        options: Default::default(),
        policy: Default::default(),
    };
    let (bundle, receipt_id) = match context_call(&st.context_deps(), &tenant, &req, emit_receipt, &meta).await {
        Ok(done) => done,
        Err(e) => return Err(refused(e)),
    };
    Ok(Json(ContextBundle::new(bundle, req.subject_id, req.task, receipt_id)))
}
