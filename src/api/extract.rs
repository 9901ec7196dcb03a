//! Extractors that turn request parts into checked values or Statewave-style errors.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use serde_json::Value;

use crate::error::{ApiError, FieldError};

/// The header that selects the tenant.
pub const TENANT_HEADER: &str = "x-tenant-id";
pub use crate::model::text::{valid_tenant_id, DEFAULT_TENANT};

/// Who is calling: set by the authentication middleware on every non-public request.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The tenant the request acts for.
    pub tenant: String,
    /// The stored API key used, if any (None: the operator key, or open mode).
    pub key_id: Option<String>,
    /// May reach `/admin` (for [`Caller::tenant`] only, unless `operator`).
    pub admin: bool,
    /// May act on every tenant: the operator key (`MNEMO_API_KEY`), a stored operator key, or
    /// open mode.
    pub operator: bool,
}

impl Caller {
    /// The tenant a request names (query, body or path; None: the caller's own), when the caller
    /// may act on it: its own tenant always, another only as an operator.
    pub fn target(&self, named: Option<String>) -> Result<String, ApiError> {
        match named {
            Some(t) if t != self.tenant && !self.operator => Err(tenant_mismatch()),
            Some(t) => Ok(t),
            None => Ok(self.tenant.clone()),
        }
    }

    /// Refuses callers that are not operators (endpoints that show or change every tenant).
    pub fn operator_only(&self) -> Result<(), ApiError> {
        if self.operator {
            Ok(())
        } else {
            Err(ApiError::client(
                StatusCode::FORBIDDEN,
                "operator_required",
                "This endpoint reaches across tenants: it needs the operator key or an operator API key.",
            ))
        }
    }
}

/// 403 for a key used on a tenant it is not bound to.
pub fn tenant_mismatch() -> ApiError {
    ApiError::client(StatusCode::FORBIDDEN, "tenant_mismatch", "This API key belongs to another tenant.")
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        // The authentication middleware sets it on every route that is not public.
        parts.extensions.get::<Caller>().cloned().ok_or_else(|| ApiError::Internal(anyhow::anyhow!("no caller")))
    }
}

/// The tenant a request acts for: the authenticated caller's, else the `X-Tenant-ID` header,
/// else `default`.
#[derive(Debug, Clone)]
pub struct Tenant(pub String);

impl<S: Send + Sync> FromRequestParts<S> for Tenant {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        if let Some(caller) = parts.extensions.get::<Caller>() {
            return Ok(Tenant(caller.tenant.clone()));
        }
        Ok(Tenant(header_tenant(&parts.headers)?.unwrap_or_else(|| DEFAULT_TENANT.to_string())))
    }
}

/// Reads and checks the tenant header; None when absent or blank.
pub fn header_tenant(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(raw) = headers.get(TENANT_HEADER) else {
        return Ok(None);
    };
    let value =
        raw.to_str().map_err(|_| ApiError::bad_request("invalid_tenant", "X-Tenant-ID must be visible ASCII"))?.trim();
    if value.is_empty() {
        return Ok(None);
    }
    if !valid_tenant_id(value) {
        return Err(ApiError::bad_request("invalid_tenant", "X-Tenant-ID must be 1-256 printable characters"));
    }
    Ok(Some(value.to_string()))
}

/// A JSON body parsed to a value; size-limited, syntax errors reported as 422.
pub struct JsonBody(pub Value);

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::client(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "payload_too_large",
                    "Request body exceeds the configured size limit",
                )
            } else {
                ApiError::bad_request("invalid_body", "Request body could not be read")
            }
        })?;
        if bytes.is_empty() {
            return Err(ApiError::validation(vec![FieldError {
                loc: vec!["body".into()],
                msg: "a JSON body is required".into(),
                kind: "missing",
            }]));
        }
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
            ApiError::validation(vec![FieldError {
                loc: vec!["body".into()],
                msg: format!("invalid JSON at line {} column {}", e.line(), e.column()),
                kind: "json_invalid",
            }])
        })?;
        Ok(JsonBody(value))
    }
}
