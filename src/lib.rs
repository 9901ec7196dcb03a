#![recursion_limit = "256"]
//! mnemo: a self-hosted memory service for AI agents, speaking the Statewave v1 HTTP API.

pub mod compile;
pub mod config;
pub mod context;
pub mod db;
pub mod embed;
pub mod error;
pub mod http;
pub mod mcp;
pub mod metrics;
pub mod model;
pub mod openapi;
pub mod pg;
pub mod policy;
pub mod progress;
pub mod receipts;
pub mod services;
pub mod sessions;
pub mod state;
pub mod templates;
pub mod transfer;

use std::future::Future;
use std::net::SocketAddr;

use axum::Router;
use tokio::net::TcpListener;

pub use state::{AppState, RuntimeConfig};

/// The application router for a state.
pub fn app(state: AppState) -> Router {
    http::router(state)
}

/// Serves the app on `listener` until `shutdown` resolves, then drains in-flight requests.
pub async fn serve<F>(listener: TcpListener, state: AppState, shutdown: F) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let worker =
        state.config.run_worker.then(|| tokio::spawn(services::jobs::run_worker(state.clone(), stop_rx.clone())));
    let dispatcher = state.webhooks.is_enabled().then(|| {
        tokio::spawn(services::webhooks::dispatch::run_dispatcher(state.pool.clone(), state.webhooks.clone(), stop_rx))
    });
    let result = axum::serve(listener, app(state).into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(shutdown)
        .await;
    // The worker finishes its current batch (a transaction), the dispatcher its deliveries in
    // flight, before they stop.
    let _ = stop_tx.send(true);
    for task in [worker, dispatcher].into_iter().flatten() {
        let _ = task.await;
    }
    result
}

/// Serves `/metrics` (Prometheus text) on its own listener until `shutdown` resolves.
pub async fn serve_metrics<F>(listener: TcpListener, state: AppState, shutdown: F) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    let router = Router::new().route(
        "/metrics",
        axum::routing::get(|axum::extract::State(st): axum::extract::State<AppState>| async move {
            let pool = (st.pool.size(), st.pool.num_idle(), st.pool.options().get_max_connections());
            ([(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4")], st.metrics.render(pool))
        }),
    );
    axum::serve(listener, router.with_state(state)).with_graceful_shutdown(shutdown).await
}
