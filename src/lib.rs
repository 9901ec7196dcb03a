#![recursion_limit = "256"]
//! mnemo: a self-hosted memory service for AI agents, speaking the Statewave v1 HTTP API.

pub mod api;
pub mod bundle;
pub mod cli;
pub mod compile;
pub mod console;
pub mod db;
pub mod embed;
pub mod error;
pub mod eval;
pub mod http;
pub mod input;
pub mod lexemes;
pub mod mcp;
pub mod metrics;
pub mod model;
pub mod patterns;
pub mod pg;
pub mod policy;
pub mod progress;
pub mod receipts;
pub mod services;
pub mod sessions;
pub mod state;
pub mod telemetry;
pub mod templates;

use std::future::Future;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::Router;
use tokio::net::TcpListener;
use tower::ServiceBuilder;
use tower_http::timeout::TimeoutLayer;

pub use state::{AppState, RuntimeConfig};

/// CORS for the configured origins; None (no CORS headers at all) when none are configured.
fn cors_layer(origins: &[String]) -> Option<tower_http::cors::CorsLayer> {
    use axum::http::{header, HeaderName, HeaderValue, Method};
    use tower_http::cors::{AllowOrigin, CorsLayer};
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST, Method::PUT, Method::PATCH, Method::DELETE])
            .allow_headers([
                header::CONTENT_TYPE,
                header::AUTHORIZATION,
                HeaderName::from_static("x-api-key"),
                HeaderName::from_static("x-tenant-id"),
                HeaderName::from_static("x-request-id"),
            ])
            .expose_headers([HeaderName::from_static("x-request-id"), header::RETRY_AFTER]),
    )
}

/// The application router for a state: the doors (REST, MCP, console) and the middleware stack.
pub fn app(state: AppState) -> Router {
    let cfg = state.config.clone();
    let routes = http::routes()
        // MCP is served beside the documented routes (it is not part of the OpenAPI document).
        .merge(crate::mcp::routes(&state))
        .fallback(http::middleware::not_found);
    let routes = routes.layer(
        ServiceBuilder::new()
            .layer(axum::middleware::from_fn(crate::mcp::challenge))
            .layer(axum::middleware::from_fn_with_state(state.clone(), http::auth::authenticate))
            .layer(TimeoutLayer::with_status_code(
                axum::http::StatusCode::REQUEST_TIMEOUT,
                Duration::from_secs(cfg.request_timeout_secs),
            ))
            .layer(DefaultBodyLimit::max(cfg.max_body_bytes)),
    );
    // The console authenticates with its own session cookie, so it sits outside the key middleware.
    let routes = routes.merge(crate::console::routes(&state));
    // Host, Origin and Content-Type, for API, MCP and console alike, before anything else runs.
    let routes = routes.layer(axum::middleware::from_fn_with_state(state.clone(), http::origin::check));
    let routes = http::layers::observed(routes);
    // Outermost, so preflight requests are answered before authentication.
    let routes = match cors_layer(&cfg.cors_origins) {
        Some(cors) => routes.layer(cors),
        None => routes,
    };
    routes.with_state(state)
}

/// Resolves on Ctrl-C or SIGTERM: the `shutdown` that `mnemo serve` hands to [`serve`].
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutdown requested; draining requests");
}

/// Serves the app on `listener` until `shutdown` resolves, then drains in-flight requests.
///
/// From the moment `shutdown` resolves `/readyz` answers 503; the listener keeps accepting for
/// `shutdown_drain_secs` (load balancers see the 503 and stop routing here), then closes, and
/// requests in flight have the shutdown grace period to finish (see [`http::conn`]).
pub async fn serve<F>(listener: TcpListener, state: AppState, shutdown: F) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    let shutting_down = state.shutting_down.clone();
    let drain = std::time::Duration::from_secs(state.config.shutdown_drain_secs);
    let shutdown = async move {
        shutdown.await;
        shutting_down.store(true, std::sync::atomic::Ordering::Release);
        tokio::time::sleep(drain).await;
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let worker =
        state.config.run_worker.then(|| tokio::spawn(services::jobs::run_worker(state.worker(), stop_rx.clone())));
    // Long episodes' passages get their vectors in the background, where compile jobs run.
    let passages = state.config.run_worker.then(|| {
        tokio::spawn(services::passages::run_worker(state.pool.clone(), state.embedder.clone(), stop_rx.clone()))
    });
    // Copies of subjects erased elsewhere (another server, the console, `mnemo erase`) go too.
    let erased = Some(tokio::spawn(services::context::erased::watch(
        state.pool.clone(),
        state.subjects.clone(),
        stop_rx.clone(),
    )));
    let dispatcher = state.webhooks.is_enabled().then(|| {
        tokio::spawn(services::webhooks::dispatch::run_dispatcher(state.pool.clone(), state.webhooks.clone(), stop_rx))
    });
    let limits = state.config.connections;
    http::conn::run(listener, app(state), limits, shutdown).await;
    // The worker finishes its current batch (a transaction), the dispatcher its deliveries in
    // flight, before they stop.
    let _ = stop_tx.send(true);
    for task in [worker, passages, dispatcher, erased].into_iter().flatten() {
        let _ = task.await;
    }
    Ok(())
}

/// Serves `/metrics` (Prometheus text) on its own listener until `shutdown` resolves.
///
/// Installs the process-wide recorder when called, so requests served afterwards are counted.
pub fn serve_metrics<F>(
    listener: TcpListener,
    state: AppState,
    shutdown: F,
) -> impl Future<Output = std::io::Result<()>> + Send + 'static
where
    F: Future<Output = ()> + Send + 'static,
{
    let handle = crate::metrics::handle();
    let router = Router::new().route(
        "/metrics",
        axum::routing::get(move || async move {
            let pool = &state.pool;
            crate::metrics::record_pool(pool.size(), pool.num_idle(), pool.options().get_max_connections());
            ([(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4")], handle.render())
        }),
    );
    async move {
        // Histogram samples pile up until folded into buckets: fold them even when nobody scrapes.
        let upkeep = tokio::spawn(async move {
            let mut tick = tokio::time::interval(crate::metrics::UPKEEP_INTERVAL);
            loop {
                tick.tick().await;
                handle.run_upkeep();
            }
        });
        let result = axum::serve(listener, router).with_graceful_shutdown(shutdown).await;
        upkeep.abort();
        result
    }
}
