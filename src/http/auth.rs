//! Authentication and per-request access: API keys, tenant binding, admin scope, residency
//! and rate limits. Runs before routing; sets the [`Caller`] every handler's tenant comes from.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::api::extract::{header_tenant, tenant_mismatch, Caller, DEFAULT_TENANT};
use crate::error::ApiError;
use crate::services::access::{self, Refusal};
use crate::services::keys::{self, Scope};
use crate::state::AppState;

/// Paths reachable without an API key (and exempt from rate limits and residency).
pub const PUBLIC_PATHS: &[&str] = &[
    "/healthz",
    "/health",
    "/readyz",
    "/ready",
    "/v1/version",
    "/openapi.json",
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/mcp",
];

/// `/admin` paths that show or change every tenant at once: the tenant list and the webhook
/// outbox (its events are found by id across tenants). Routes that name one tenant check it
/// with [`Caller::target`] instead.
fn operator_path(path: &str) -> bool {
    path == "/admin/tenants" || path == "/admin/webhooks" || path.starts_with("/admin/webhooks/")
}

/// The key a request presents: `X-API-Key`, a bearer token, or (when allowed) `?api_key=`.
fn presented_key(req: &Request, allow_query: bool) -> Option<String> {
    if let Some(v) = req.headers().get("x-api-key").and_then(|v| v.to_str().ok()) {
        return Some(v.to_string());
    }
    // MCP clients send a configured key as a bearer token.
    let bearer = req.headers().get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| {
        let (scheme, token) = v.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim().to_string())
    });
    if let Some(token) = bearer.filter(|t| !t.is_empty()) {
        return Some(token);
    }
    if !allow_query {
        return None;
    }
    let q = req.uri().query()?;
    form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "api_key").map(|(_, v)| v.into_owned())
}

fn refuse(status: StatusCode, code: &str, message: &str) -> ApiError {
    ApiError::client(status, code, message)
}

/// 429 for a client or key prefix with too many failed attempts in the last minute.
pub fn throttled(retry_after: std::time::Duration) -> ApiError {
    let secs = retry_after.as_secs().max(1);
    ApiError::Client {
        status: StatusCode::TOO_MANY_REQUESTS,
        code: "too_many_failed_attempts".into(),
        message: format!("Too many failed API key attempts; retry after {secs} s."),
        details: None,
        retry_after: Some(secs),
    }
}

/// Resolves the caller from the presented key and the tenant header.
async fn resolve(
    st: &AppState,
    addr: Option<IpAddr>,
    presented: Option<String>,
    header: Option<String>,
) -> Result<Caller, ApiError> {
    let or_default = |h: Option<String>| h.unwrap_or_else(|| DEFAULT_TENANT.to_string());
    let operator = |tenant: String| Caller { tenant, key_id: None, admin: true, operator: true };
    let Some(key) = presented else {
        if st.keyed().await? {
            return Err(refuse(StatusCode::UNAUTHORIZED, "missing_api_key", "X-API-Key header is required."));
        }
        // Open mode: no operator key and no key ever stored (local development).
        return Ok(operator(or_default(header)));
    };
    // A blocked client or key prefix is refused before any key is checked: no guess made
    // meanwhile can succeed.
    if let Some(left) = st.auth_throttle.blocked(addr, &key) {
        return Err(throttled(left));
    }
    if let Some(expected) = st.config.api_key_sha256 {
        // Digests are compared, so the comparison is constant-time and length-independent.
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        if bool::from(digest.ct_eq(&expected)) {
            return Ok(operator(or_default(header)));
        }
    }
    let Some(stored) = keys::lookup(&st.pool, &key).await? else {
        st.auth_throttle.failed(addr, &key);
        return Err(refuse(StatusCode::FORBIDDEN, "invalid_api_key", "Invalid API key."));
    };
    let key_id = Some(stored.key_id);
    if stored.scope == Scope::Operator {
        return Ok(Caller { key_id, ..operator(header.unwrap_or(stored.tenant)) });
    }
    // Tenant and admin keys are bound to their tenant.
    if header.as_deref().is_some_and(|h| h != stored.tenant) {
        return Err(tenant_mismatch());
    }
    Ok(Caller { tenant: stored.tenant, key_id, admin: stored.scope == Scope::Admin, operator: false })
}

/// Authenticates every non-public request, then applies residency and rate limits.
pub async fn authenticate(State(st): State<AppState>, mut req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    // No resource has a NUL in its id, and Postgres would refuse the text: answer as for any
    // unknown path instead of failing the query.
    if path.to_ascii_lowercase().contains("%00") {
        return ApiError::not_found("Not Found").into_response();
    }
    if PUBLIC_PATHS.contains(&path.as_str()) {
        return next.run(req).await;
    }
    let header = match header_tenant(req.headers()) {
        Ok(h) => h,
        Err(e) => return e.into_response(),
    };
    let addr = req.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
    let presented = presented_key(&req, st.config.allow_query_api_key);
    let caller = match resolve(&st, addr, presented, header).await {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    if path.starts_with("/admin") && !caller.admin {
        return refuse(StatusCode::FORBIDDEN, "admin_required", "This endpoint needs an admin API key.")
            .into_response();
    }
    if operator_path(&path) {
        if let Err(e) = caller.operator_only() {
            return e.into_response();
        }
    }
    if st.config.access.active() {
        match access::check(&st.pool, &st.config.access, &caller.tenant, caller.key_id.as_deref()).await {
            Ok(()) => {}
            Err(Refusal::Residency { message }) => {
                return refuse(StatusCode::FORBIDDEN, "residency.mismatch", &message).into_response();
            }
            Err(Refusal::RateLimited { rpm, retry_after_secs }) => {
                let message = format!("Rate limit exceeded. Max {rpm} requests per minute.");
                let mut resp = refuse(StatusCode::TOO_MANY_REQUESTS, "rate_limited", &message).into_response();
                if let Ok(v) = HeaderValue::from_str(&retry_after_secs.to_string()) {
                    resp.headers_mut().insert("retry-after", v);
                }
                return resp;
            }
        }
    }
    req.extensions_mut().insert(caller);
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_and_version_are_public_but_data_is_not() {
        for p in ["/healthz", "/readyz", "/v1/version"] {
            assert!(PUBLIC_PATHS.contains(&p));
        }
        assert!(!PUBLIC_PATHS.contains(&"/v1/episodes"));
        assert!(!PUBLIC_PATHS.iter().any(|p| p.starts_with("/admin")));
    }

    #[test]
    fn the_tenant_list_and_the_webhook_outbox_are_for_operators() {
        for p in ["/admin/tenants", "/admin/webhooks", "/admin/webhooks/stats", "/admin/webhooks/e1/retry"] {
            assert!(operator_path(p), "{p}");
        }
        for p in ["/admin/tenants/acme/config", "/admin/export/u1", "/admin/import", "/admin/webhooksx"] {
            assert!(!operator_path(p), "{p}");
        }
    }
}
