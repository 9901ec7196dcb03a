//! The HTTP surface: routes, extractors and middleware. Handlers are thin.

pub mod compile;
pub mod context;
pub mod episodes;
pub mod extract;
pub mod input;
pub mod memories;
pub mod meta;
pub mod middleware;
pub mod receipts;
pub mod subjects;
pub mod timeline;

use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{delete, get, patch, post, MethodRouter};
use axum::Router;
use tower::ServiceBuilder;
use tower_http::timeout::TimeoutLayer;

use crate::state::AppState;

/// Every route: (method, path, handler). The OpenAPI document is checked against this table.
fn route_table() -> Vec<(&'static str, &'static str, MethodRouter<AppState>)> {
    vec![
        ("GET", "/healthz", get(meta::healthz)),
        ("GET", "/health", get(meta::healthz)),
        ("GET", "/readyz", get(meta::readyz)),
        ("GET", "/ready", get(meta::readyz)),
        ("GET", "/v1/version", get(meta::version)),
        ("GET", "/openapi.json", get(meta::openapi)),
        ("POST", "/v1/episodes", post(episodes::create)),
        ("POST", "/v1/episodes/batch", post(episodes::create_batch)),
        ("POST", "/v1/context", post(context::context)),
        ("POST", "/v1/memories/compile", post(compile::compile)),
        ("GET", "/v1/memories/compile/{job_id}", get(compile::status)),
        ("GET", "/v1/memories/search", get(memories::search)),
        ("PATCH", "/v1/memories/{id}/labels", patch(memories::set_labels)),
        ("GET", "/v1/receipts", get(receipts::list)),
        ("GET", "/v1/receipts/chain/verify", get(receipts::verify_tenant_chain)),
        ("GET", "/v1/receipts/{id}", get(receipts::get)),
        ("GET", "/v1/receipts/{id}/verify", get(receipts::verify)),
        ("POST", "/v1/receipts/{id}/replay", post(receipts::replay)),
        ("GET", "/v1/timeline", get(timeline::get)),
        ("GET", "/v1/subjects", get(subjects::list)),
        ("DELETE", "/v1/subjects/{subject_id}", delete(subjects::delete)),
        ("GET", "/v1/erasures/{erasure_id}", get(subjects::erasure)),
    ]
}

/// (method, path) of every route, for the OpenAPI drift test.
pub fn endpoints() -> Vec<(&'static str, &'static str)> {
    route_table().into_iter().map(|(m, p, _)| (m, p)).collect()
}

/// Builds the router with every route and the middleware stack.
pub fn router(state: AppState) -> Router {
    let cfg = state.config.clone();
    let routes = route_table()
        .into_iter()
        .fold(Router::new(), |r, (_, path, handler)| r.route(path, handler))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), middleware::record_metrics))
        .fallback(middleware::not_found);
    routes
        .layer(
            ServiceBuilder::new()
                .layer(axum::middleware::from_fn(middleware::request_context))
                .layer(axum::middleware::from_fn_with_state(state.clone(), middleware::require_api_key))
                .layer(TimeoutLayer::with_status_code(
                    axum::http::StatusCode::REQUEST_TIMEOUT,
                    Duration::from_secs(cfg.request_timeout_secs),
                ))
                .layer(DefaultBodyLimit::max(cfg.max_body_bytes)),
        )
        .with_state(state)
}
