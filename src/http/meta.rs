//! Probes and version: `/healthz`, `/readyz`, `/v1/version`.

use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::state::AppState;

/// The liveness answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Liveness {
    #[schema(value_type = String, example = "ok")]
    pub status: &'static str,
}

/// The readiness answer: overall status and one entry per dependency checked.
#[derive(Debug, Serialize, ToSchema)]
pub struct Readiness {
    pub status: ReadyState,
    pub checks: Vec<ReadinessCheck>,
}

/// Overall readiness.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReadyState {
    Ready,
    /// Reserved by the Statewave contract; mnemo answers `ready` or `not_ready`.
    Degraded,
    NotReady,
}

/// One dependency's probe.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReadinessCheck {
    #[schema(value_type = String)]
    pub name: &'static str,
    /// `ok` or `fail`.
    #[schema(value_type = String)]
    pub status: &'static str,
    pub latency_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String)]
    pub detail: Option<&'static str>,
}

/// The server version and API contract.
#[derive(Debug, Serialize, ToSchema)]
pub struct Version {
    #[schema(value_type = String)]
    pub version: &'static str,
    #[schema(value_type = String, example = "v1")]
    pub api_contract: &'static str,
    #[schema(value_type = String, example = "mnemo")]
    pub server: &'static str,
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "meta", summary = "Liveness", security(()),
    responses((status = 200, description = "Alive", body = Liveness)))]
pub async fn healthz() -> Json<Liveness> {
    Json(Liveness { status: "ok" })
}

/// `/health`, an alias of [`healthz`] kept for Statewave clients.
#[utoipa::path(get, path = "/health", tag = "meta", summary = "Liveness (alias)", security(()),
    responses((status = 200, description = "Alive", body = Liveness)))]
pub async fn health() -> Json<Liveness> {
    healthz().await
}

/// Readiness: the database answers within two seconds and the server is not shutting down, else 503.
#[utoipa::path(get, path = "/readyz", tag = "meta", summary = "Readiness (database, shutdown)", security(()),
    responses((status = 200, description = "Ready", body = Readiness),
              (status = 503, description = "Not ready: the database did not answer, or the server is shutting down", body = Readiness)))]
pub async fn readyz(State(st): State<AppState>) -> Response {
    if st.shutting_down.load(Ordering::Acquire) {
        let check = ReadinessCheck {
            name: "shutdown",
            status: "fail",
            latency_ms: 0.0,
            detail: Some("server is shutting down"),
        };
        let body = Readiness { status: ReadyState::NotReady, checks: vec![check] };
        return (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response();
    }
    let probe = crate::services::health::database(&st.pool).await;
    let check = ReadinessCheck {
        name: "database",
        status: if probe.ok { "ok" } else { "fail" },
        latency_ms: probe.latency_ms,
        detail: probe.detail,
    };
    let (code, status) = if probe.ok {
        (StatusCode::OK, ReadyState::Ready)
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, ReadyState::NotReady)
    };
    (code, Json(Readiness { status, checks: vec![check] })).into_response()
}

/// `/ready`, an alias of [`readyz`] kept for Statewave clients.
#[utoipa::path(get, path = "/ready", tag = "meta", summary = "Readiness (alias)", security(()),
    responses((status = 200, description = "Ready", body = Readiness),
              (status = 503, description = "Not ready: the database did not answer, or the server is shutting down", body = Readiness)))]
pub async fn ready(st: State<AppState>) -> Response {
    readyz(st).await
}

/// The server version and API contract.
#[utoipa::path(get, path = "/v1/version", tag = "meta", summary = "Server version and API contract", security(()),
    responses((status = 200, description = "Version", body = Version)))]
pub async fn version() -> Json<Version> {
    Json(Version { version: env!("CARGO_PKG_VERSION"), api_contract: "v1", server: "mnemo" })
}

/// The OpenAPI 3 document of this server (generated from the handlers; see `crate::http::openapi`).
#[utoipa::path(get, path = "/openapi.json", tag = "meta", summary = "This document", security(()),
    responses((status = 200, description = "OpenAPI document", body = Object)))]
pub async fn openapi() -> Json<serde_json::Value> {
    Json(crate::http::openapi::document())
}
