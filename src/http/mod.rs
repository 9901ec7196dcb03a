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
use axum::routing::{get, post};
use axum::Router;
use tower::ServiceBuilder;
use tower_http::timeout::TimeoutLayer;

use crate::state::AppState;

/// Builds the router with every route and the middleware stack.
pub fn router(state: AppState) -> Router {
    let cfg = state.config.clone();
    let routes = Router::new()
        .route("/healthz", get(meta::healthz))
        .route("/health", get(meta::healthz))
        .route("/readyz", get(meta::readyz))
        .route("/ready", get(meta::readyz))
        .route("/v1/version", get(meta::version))
        .route("/v1/episodes", post(episodes::create))
        .route("/v1/episodes/batch", post(episodes::create_batch))
        .route("/v1/context", post(context::context))
        .route("/v1/memories/compile", post(compile::compile))
        .route("/v1/memories/compile/{job_id}", get(compile::status))
        .route("/v1/memories/search", get(memories::search))
        .route("/v1/memories/{id}/labels", axum::routing::patch(memories::set_labels))
        .route("/v1/receipts", get(receipts::list))
        .route("/v1/receipts/chain/verify", get(receipts::verify_tenant_chain))
        .route("/v1/receipts/{id}", get(receipts::get))
        .route("/v1/receipts/{id}/verify", get(receipts::verify))
        .route("/v1/receipts/{id}/replay", post(receipts::replay))
        .route("/v1/timeline", get(timeline::get))
        .route("/v1/subjects", get(subjects::list))
        .route("/v1/subjects/{subject_id}", axum::routing::delete(subjects::delete))
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
