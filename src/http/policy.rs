//! `/admin/policy/*`: uploading, reading and activating sensitivity-label policy bundles.
//! `tenant_id` (body or query) names the tenant; absent, the caller's tenant.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use crate::error::{ApiError, ApiResult};
use crate::http::extract::{JsonBody, Tenant};
use crate::http::input::{object_at, Query};
use crate::services::policy as svc;
use crate::state::AppState;

fn query_tenant(raw: Option<&str>, fallback: String) -> ApiResult<String> {
    let mut q = Query::parse(raw);
    let t = q.opt_str("tenant_id", 256);
    q.finish()?;
    Ok(t.unwrap_or(fallback))
}

fn bundle_not_found() -> ApiError {
    ApiError::not_found("policy bundle not found")
}

/// Stores a bundle (YAML or JSON text, or a JSON object); 400 when it does not load.
pub async fn upload(
    State(st): State<AppState>,
    Tenant(caller): Tenant,
    JsonBody(body): JsonBody,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let mut errors = Vec::new();
    let parsed = object_at(&body, vec!["body".into()], &mut errors).map(|mut r| {
        let tenant = r.opt_str("tenant_id", 256);
        let text = match r.raw("bundle") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(v @ Value::Object(_)) => Some(v.to_string()),
            _ => {
                r.req_str("bundle", 1, crate::policy::bundle::MAX_BUNDLE_BYTES);
                None
            }
        };
        (tenant, text)
    });
    let (tenant, Some(text)) = parsed.filter(|_| errors.is_empty()).ok_or_else(|| ApiError::validation(errors))? else {
        return Err(ApiError::bad_request("policy.invalid_bundle", "bundle must be YAML or JSON text"));
    };
    let tenant = tenant.unwrap_or(caller);
    let (hash, bundle) = svc::store(&st.pool, &tenant, &text)
        .await?
        .map_err(|e| ApiError::bad_request("policy.invalid_bundle", e.to_string()))?;
    Ok((
        StatusCode::CREATED,
        Json(
            json!({"tenant_id": tenant, "bundle_hash": hash, "rules": bundle.rules().len(), "bundle": bundle.to_json()}),
        ),
    ))
}

/// The tenant's bundles.
pub async fn list(
    State(st): State<AppState>,
    Tenant(caller): Tenant,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let tenant = query_tenant(raw.as_deref(), caller)?;
    Ok(Json(json!({ "bundles": svc::list(&st.pool, &tenant).await? })))
}

/// One bundle: the uploaded text and its normalised form.
pub async fn get(
    State(st): State<AppState>,
    Tenant(caller): Tenant,
    Path(hash): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let tenant = query_tenant(raw.as_deref(), caller)?;
    Ok(Json(svc::get(&st.pool, &tenant, &hash).await?.ok_or_else(bundle_not_found)?))
}

/// Makes a stored bundle the tenant's active one (takes effect on the next request everywhere).
pub async fn activate(
    State(st): State<AppState>,
    Tenant(caller): Tenant,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<Value>> {
    let mut errors = Vec::new();
    let parsed = object_at(&body, vec!["body".into()], &mut errors)
        .map(|mut r| (r.opt_str("tenant_id", 256), r.req_str("bundle_hash", 1, 64)));
    let (tenant, hash) = parsed.filter(|_| errors.is_empty()).ok_or_else(|| ApiError::validation(errors))?;
    let tenant = tenant.unwrap_or(caller);
    Ok(Json(svc::activate(&st.pool, &tenant, &hash).await?.ok_or_else(bundle_not_found)?))
}

/// Bundles are resolved on every request (no cache), so a reload has nothing to do.
pub async fn reload() -> Json<Value> {
    Json(json!({"reloaded": true, "cached": false}))
}

/// The tenant's active bundle, or `null`.
pub async fn active(
    State(st): State<AppState>,
    Tenant(caller): Tenant,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let tenant = query_tenant(raw.as_deref(), caller)?;
    Ok(Json(svc::active_doc(&st.pool, &tenant).await?.unwrap_or(Value::Null)))
}
