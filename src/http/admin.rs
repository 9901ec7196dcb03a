//! `/admin`: the operator's tenant endpoints (admin keys, for their own tenant; operators for
//! any; see `http::auth`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::api::extract::{valid_tenant_id, Caller, JsonBody};
use crate::api::schema::CommonErrors;
use crate::error::{ApiError, ApiResult, Envelope, FieldError};
use crate::model::tenant_config::ConfigDoc;
use crate::model::time::isoformat;
use crate::services::tenant_config::{self as svc, PatchError, TenantConfigPatch};
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

/// The tenants mnemo has seen.
#[derive(Debug, Serialize, ToSchema)]
pub struct TenantList {
    pub tenants: Vec<TenantEntry>,
    pub total: usize,
}

/// A tenant and when mnemo first saw it.
#[derive(Debug, Serialize, ToSchema)]
pub struct TenantEntry {
    pub tenant_id: String,
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// Every tenant mnemo has seen.
#[utoipa::path(get, path = "/admin/tenants", tag = "admin", summary = "Every tenant mnemo has seen (admin key)",
    responses((status = 200, description = "Tenants", body = TenantList), CommonErrors))]
pub async fn list_tenants(State(st): State<AppState>) -> ApiResult<Json<TenantList>> {
    let rows = svc::list_tenants(&st.pool).await?;
    let tenants: Vec<TenantEntry> = rows
        .into_iter()
        .map(|(tenant_id, created)| TenantEntry { tenant_id, created_at: isoformat(&created) })
        .collect();
    Ok(Json(TenantList { total: tenants.len(), tenants }))
}

/// The tenant's config document (`{}` at version 0 when never written).
#[utoipa::path(get, path = "/admin/tenants/{tenant_id}/config", tag = "admin",
    summary = "A tenant's configuration document (admin key)",
    params(("tenant_id" = String, Path, description = "Identifier.")),
    responses((status = 200, description = "Config", body = ConfigDoc), CommonErrors))]
pub async fn get_config(
    State(st): State<AppState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
) -> ApiResult<Json<ConfigDoc>> {
    checked_tenant(&tenant_id)?;
    let tenant_id = caller.target(Some(tenant_id))?;
    Ok(Json(svc::get(&st.pool, &tenant_id).await?))
}

/// Partially updates the tenant's config: version+1, 409 on a stale `expected_version`.
#[utoipa::path(patch, path = "/admin/tenants/{tenant_id}/config", tag = "admin",
    summary = "Partially update a tenant's configuration (version+1; 409 on a stale expected_version)",
    params(("tenant_id" = String, Path, description = "Identifier.")), request_body = TenantConfigPatch,
    responses((status = 200, description = "Config", body = ConfigDoc),
              (status = 409, description = "version conflict", body = Envelope), CommonErrors))]
pub async fn patch_config(
    State(st): State<AppState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<ConfigDoc>> {
    checked_tenant(&tenant_id)?;
    let tenant_id = caller.target(Some(tenant_id))?;
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
    Ok(Json(doc))
}
