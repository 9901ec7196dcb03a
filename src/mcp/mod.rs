//! MCP (Model Context Protocol) at `/mcp`: streamable HTTP, stateless, JSON responses, inside
//! the same app, so authentication, tenancy, rate limits, policy and receipts are the HTTP
//! API's own. Tools call the same services as the HTTP handlers.

pub mod args;
pub mod bridge;
mod erase;
pub mod precheck;
pub mod server;
pub mod statewave;
mod statewave_args;
pub mod statewave_schema;
pub mod tools;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;

use crate::error::ApiError;
use crate::state::AppState;
pub use crate::state::{McpConfig, Toolset};

/// Where the MCP endpoint is mounted.
pub const PATH: &str = crate::api::MCP_PATH;
/// The protected-resource metadata document (RFC 9728), at the root and path-suffixed forms.
pub const METADATA_PATHS: [&str; 2] =
    ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"];

/// The `/mcp` route and the metadata documents.
pub fn routes(state: &AppState) -> Router<AppState> {
    let handler = server::MnemoMcp::new(state.clone());
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_sse_retry(None)
        // Host and Origin are checked for every route by the HTTP layer (`http::origin`).
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(state.config.max_body_bytes);
    let service =
        StreamableHttpService::new(move || Ok(handler.clone()), Arc::new(NeverSessionManager::default()), config);
    let mut router = Router::new()
        .route_service(PATH, service)
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), precheck::check));
    for path in METADATA_PATHS {
        router = router.route(path, get(protected_resource));
    }
    router
}

/// The externally visible base URL of this request (scheme from `X-Forwarded-Proto`, host from `Host`).
fn base_url(headers: &HeaderMap) -> String {
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("localhost");
    let proto = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .filter(|p| *p == "https" || *p == "http")
        .unwrap_or("http");
    format!("{proto}://{host}")
}

/// RFC 9728 protected-resource metadata for `/mcp`; 404 when the server runs open (no keys).
async fn protected_resource(State(st): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    if !st.keyed().await? {
        return Err(ApiError::not_found("Not Found"));
    }
    let base = base_url(&headers);
    Ok(Json(json!({
        "resource": format!("{base}{PATH}"),
        "resource_name": "mnemo",
        // mnemo issues its own API keys (`mnemo keys create`); there is no authorization server.
        "authorization_servers": [],
        "bearer_methods_supported": ["header"],
    }))
    .into_response())
}

/// Adds the `WWW-Authenticate` challenge to 401 answers on `/mcp`, pointing at the metadata.
pub async fn challenge(req: Request, next: Next) -> Response {
    let is_mcp = req.uri().path() == PATH;
    let base = base_url(req.headers());
    let mut resp = next.run(req).await;
    if is_mcp && resp.status() == StatusCode::UNAUTHORIZED {
        let value = format!("Bearer resource_metadata=\"{base}{}\"", METADATA_PATHS[1]);
        if let Ok(v) = HeaderValue::from_str(&value) {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
    }
    resp
}
