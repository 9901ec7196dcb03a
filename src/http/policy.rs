//! `/admin/policy/*`: uploading, reading and activating sensitivity-label policy bundles.
//! `tenant_id` (body or query) names the tenant; absent, the caller's tenant.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::api::extract::{Caller, JsonBody};
use crate::api::query::{query, TargetTenant};
use crate::api::schema::CommonErrors;
use crate::error::{ApiError, ApiResult, Envelope};
use crate::http::body::valid;
use crate::input::rules::{chars, no_nul, NOT_TEXT, REQUIRED};
use crate::services::policy as svc;
use crate::state::AppState;

fn query_tenant(raw: Option<&str>, caller: &Caller) -> ApiResult<String> {
    caller.target(query::<TargetTenant>(raw)?.tenant_id)
}

fn bundle_not_found() -> ApiError {
    ApiError::not_found("policy bundle not found")
}

/// A stored bundle: its hash, rule count and normalised form.
#[derive(Debug, Serialize, ToSchema)]
pub struct StoredBundle {
    pub tenant_id: String,
    pub bundle_hash: String,
    pub rules: usize,
    #[schema(value_type = Object)]
    pub bundle: Value,
}

/// A tenant's bundles.
#[derive(Debug, Serialize, ToSchema)]
pub struct BundleList {
    #[schema(value_type = Vec<Object>)]
    pub bundles: Vec<Value>,
}

/// The answer to a reload.
#[derive(Debug, Serialize, ToSchema)]
pub struct Reloaded {
    pub reloaded: bool,
    /// Always false: nothing is cached.
    pub cached: bool,
}

/// `POST /admin/policy/bundles`. Unknown fields are ignored.
#[derive(Debug, Deserialize, ToSchema, garde::Validate)]
pub struct PolicyUpload {
    #[serde(default)]
    #[garde(custom(chars(0, 256)), custom(no_nul))]
    #[schema(max_length = 256)]
    pub tenant_id: Option<String>,
    /// YAML or JSON text, or a JSON object.
    #[garde(custom(text_or_object))]
    #[schema(value_type = Value)]
    pub bundle: Value,
}

/// garde rule: a bundle is text or a JSON object (null is a missing bundle).
fn text_or_object(bundle: &Value, _: &()) -> garde::Result {
    match bundle {
        Value::String(_) | Value::Object(_) => Ok(()),
        Value::Null => Err(garde::Error::new(REQUIRED)),
        _ => Err(garde::Error::new(NOT_TEXT)),
    }
}

/// `POST /admin/policy/activate`. Unknown fields are ignored.
#[derive(Debug, Deserialize, ToSchema, garde::Validate)]
pub struct PolicyActivation {
    #[serde(default)]
    #[garde(custom(chars(0, 256)), custom(no_nul))]
    #[schema(max_length = 256)]
    pub tenant_id: Option<String>,
    #[garde(custom(chars(1, 64)), custom(no_nul))]
    #[schema(min_length = 1, max_length = 64)]
    pub bundle_hash: String,
}

/// Stores a bundle (YAML or JSON text, or a JSON object); 400 when it does not load.
#[utoipa::path(post, path = "/admin/policy/bundles", tag = "admin",
    summary = "Upload a policy bundle (YAML or JSON text in `bundle`); 400 policy.invalid_bundle when it does not load",
    request_body = PolicyUpload,
    responses((status = 201, description = "Stored", body = StoredBundle),
              (status = 400, description = "invalid bundle", body = Envelope), CommonErrors))]
pub async fn upload(
    State(st): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<(StatusCode, Json<StoredBundle>)> {
    let upload: PolicyUpload = valid(body)?;
    let text = match upload.bundle {
        Value::String(s) => s,
        object => object.to_string(),
    };
    let tenant = caller.target(upload.tenant_id)?;
    let (hash, bundle) = svc::store(&st.pool, &tenant, &text)
        .await?
        .map_err(|e| ApiError::bad_request("policy.invalid_bundle", e.to_string()))?;
    let stored =
        StoredBundle { tenant_id: tenant, bundle_hash: hash, rules: bundle.rules().len(), bundle: bundle.to_json() };
    Ok((StatusCode::CREATED, Json(stored)))
}

/// The tenant's bundles.
#[utoipa::path(get, path = "/admin/policy/bundles", tag = "admin", summary = "A tenant's policy bundles",
    params(TargetTenant),
    responses((status = 200, description = "Bundles", body = BundleList), CommonErrors))]
pub async fn list(State(st): State<AppState>, caller: Caller, RawQuery(raw): RawQuery) -> ApiResult<Json<BundleList>> {
    let tenant = query_tenant(raw.as_deref(), &caller)?;
    Ok(Json(BundleList { bundles: svc::list(&st.pool, &tenant).await? }))
}

/// One bundle: the uploaded text and its normalised form.
#[utoipa::path(get, path = "/admin/policy/bundles/{bundle_hash}", tag = "admin",
    summary = "One policy bundle with its uploaded text",
    params(("bundle_hash" = String, Path, description = "Identifier."), TargetTenant),
    responses((status = 200, description = "Bundle", body = Object),
              (status = 404, description = "not found", body = Envelope), CommonErrors))]
pub async fn get(
    State(st): State<AppState>,
    caller: Caller,
    Path(hash): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let tenant = query_tenant(raw.as_deref(), &caller)?;
    Ok(Json(svc::get(&st.pool, &tenant, &hash).await?.ok_or_else(bundle_not_found)?))
}

/// Makes a stored bundle the tenant's active one (takes effect on the next request everywhere).
#[utoipa::path(post, path = "/admin/policy/activate", tag = "admin",
    summary = "Make a stored bundle the tenant's active one",
    request_body = PolicyActivation,
    responses((status = 200, description = "Activated", body = Object),
              (status = 404, description = "not found", body = Envelope), CommonErrors))]
pub async fn activate(State(st): State<AppState>, caller: Caller, JsonBody(body): JsonBody) -> ApiResult<Json<Value>> {
    let activation: PolicyActivation = valid(body)?;
    let (tenant, hash) = (caller.target(activation.tenant_id)?, activation.bundle_hash);
    Ok(Json(svc::activate(&st.pool, &tenant, &hash).await?.ok_or_else(bundle_not_found)?))
}

/// Bundles are resolved on every request (no cache), so a reload has nothing to do.
#[utoipa::path(post, path = "/admin/policy/reload", tag = "admin", summary = "No-op: bundles are resolved on every request",
    responses((status = 200, description = "Reloaded", body = Reloaded), CommonErrors))]
pub async fn reload() -> Json<Reloaded> {
    Json(Reloaded { reloaded: true, cached: false })
}

/// The tenant's active bundle, or `null`.
#[utoipa::path(get, path = "/admin/policy/active", tag = "admin", summary = "The tenant's active bundle, or null",
    params(TargetTenant),
    responses((status = 200, description = "Active bundle or null", body = Option<Object>), CommonErrors))]
pub async fn active(State(st): State<AppState>, caller: Caller, RawQuery(raw): RawQuery) -> ApiResult<Json<Value>> {
    let tenant = query_tenant(raw.as_deref(), &caller)?;
    Ok(Json(svc::active_doc(&st.pool, &tenant).await?.unwrap_or(Value::Null)))
}
