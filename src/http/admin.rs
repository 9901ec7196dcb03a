//! `/admin`: the operator's tenant endpoints (admin keys only; see `http::auth`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use crate::error::{ApiError, ApiResult, FieldError};
use crate::http::extract::{valid_tenant_id, JsonBody};
use crate::model::time::isoformat;
use crate::services::tenant_config::{self as svc, PatchError};
use crate::state::AppState;

fn checked_tenant(tenant_id: &str) -> ApiResult<()> {
    if !valid_tenant_id(tenant_id) {
        return Err(ApiError::validation(vec![FieldError {
            loc: vec!["path".into(), "tenant_id".into()],
            msg: "must be 1-256 printable characters".into(),
            kind: "string_length",
        }]));
    }
    Ok(())
}

/// Every tenant mnemo has seen.
pub async fn list_tenants(State(st): State<AppState>) -> ApiResult<Json<Value>> {
    let rows = svc::list_tenants(&st.pool).await?;
    let tenants: Vec<Value> =
        rows.iter().map(|(t, created)| json!({"tenant_id": t, "created_at": isoformat(created)})).collect();
    Ok(Json(json!({ "tenants": tenants, "total": tenants.len() })))
}

/// The tenant's config document (`{}` at version 0 when never written).
pub async fn get_config(State(st): State<AppState>, Path(tenant_id): Path<String>) -> ApiResult<Json<Value>> {
    checked_tenant(&tenant_id)?;
    Ok(Json(svc::get(&st.pool, &tenant_id).await?.to_json()))
}

/// Partially updates the tenant's config: version+1, 409 on a stale `expected_version`.
pub async fn patch_config(
    State(st): State<AppState>,
    Path(tenant_id): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<Value>> {
    checked_tenant(&tenant_id)?;
    let refused = |e: PatchError| match e {
        PatchError::Invalid(errors) => ApiError::validation(errors),
        PatchError::InvalidPin(message) => {
            ApiError::client(StatusCode::UNPROCESSABLE_ENTITY, "residency.invalid_pin", message)
        }
        PatchError::VersionConflict { expected, actual } => ApiError::client(
            StatusCode::CONFLICT,
            "version_conflict",
            format!("expected_version {expected} does not match the current version {actual}"),
        ),
    };
    let patch = svc::parse_patch(&body, st.config.access.region.as_deref()).map_err(refused)?;
    let doc = svc::update(&st.pool, &tenant_id, &patch).await?.map_err(refused)?;
    Ok(Json(doc.to_json()))
}
