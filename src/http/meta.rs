//! Probes and version: `/healthz`, `/readyz`, `/v1/version`.

use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::state::AppState;

/// Liveness: the process answers.
pub async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

/// Readiness: the database answers within two seconds, else 503.
pub async fn readyz(State(st): State<AppState>) -> Response {
    let started = Instant::now();
    let probe =
        tokio::time::timeout(Duration::from_secs(2), sqlx::query_scalar::<_, i32>("SELECT 1").fetch_one(&st.pool))
            .await;
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    let (ok, detail) = match probe {
        Ok(Ok(_)) => (true, None),
        Ok(Err(_)) => (false, Some("database query failed")),
        Err(_) => (false, Some("database did not answer within 2s")),
    };
    let mut check = json!({ "name": "database", "status": if ok { "ok" } else { "fail" },
                            "latency_ms": (latency_ms * 100.0).round() / 100.0 });
    if let Some(d) = detail {
        check["detail"] = json!(d);
    }
    let status = if ok { "ready" } else { "not_ready" };
    let code = if ok { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (code, Json(json!({ "status": status, "checks": [check] }))).into_response()
}

/// The server version and API contract.
pub async fn version() -> Json<serde_json::Value> {
    Json(json!({ "version": env!("CARGO_PKG_VERSION"), "api_contract": "v1", "server": "mnemo" }))
}

/// The OpenAPI 3 document of this server.
pub async fn openapi() -> Json<serde_json::Value> {
    Json(crate::openapi::document())
}
