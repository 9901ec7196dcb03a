//! Cross-cutting request handling: request ids, error envelopes, access logs, metrics.

use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{envelope, ApiError, REQUEST_ID};
use crate::state::AppState;

fn valid_request_id(v: &HeaderValue) -> Option<String> {
    let s = v.to_str().ok()?;
    let ok = !s.is_empty() && s.len() <= 128 && s.chars().all(|c| c.is_ascii_graphic());
    ok.then(|| s.to_string())
}

fn new_request_id() -> String {
    format!("{:016x}", rand::random::<u64>())
}

/// Echoes or assigns `X-Request-ID`, scopes it for error bodies, fills empty error bodies, logs the request.
pub async fn request_context(req: Request, next: Next) -> Response {
    let id = req.headers().get("x-request-id").and_then(valid_request_id).unwrap_or_else(new_request_id);
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let started = Instant::now();
    let mut resp = REQUEST_ID
        .scope(id.clone(), async move {
            let resp = next.run(req).await;
            fill_empty_error(resp)
        })
        .await;
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert("x-request-id", v);
    }
    // API answers hold memory content: never cached, sniffed, framed or rendered as a page.
    let h = resp.headers_mut();
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    h.insert("content-security-policy", HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'"));
    h.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    let status = resp.status().as_u16();
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    // Method, path, status and timing only: never bodies, keys or query strings.
    tracing::info!(request_id = %id, %method, %path, status, latency_ms, "request");
    resp
}

/// Errors produced outside handlers (405, 408, 413 from layers, extractor rejections such as
/// a path segment that is not UTF-8) get the JSON envelope too.
fn fill_empty_error(resp: Response) -> Response {
    let status = resp.status();
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if status.as_u16() < 400 || is_json {
        return resp;
    }
    let code = match status {
        StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
        StatusCode::REQUEST_TIMEOUT => "request_timeout",
        StatusCode::BAD_REQUEST => "invalid_request",
        s if s.is_server_error() => "internal_error",
        _ => "http_error",
    };
    let message = status.canonical_reason().unwrap_or("Error");
    let mut out = (status, axum::Json(envelope(code, message, None))).into_response();
    for (k, v) in resp.headers() {
        if k != header::CONTENT_LENGTH && k != header::CONTENT_TYPE {
            out.headers_mut().insert(k.clone(), v.clone());
        }
    }
    out
}

/// Unknown routes: 404 in the envelope.
pub async fn not_found() -> Response {
    ApiError::not_found("Not Found").into_response()
}

/// Records request counts and latency by route template (runs after routing).
pub async fn record_metrics(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".to_string());
    let method = req.method().to_string();
    let started = Instant::now();
    let resp = next.run(req).await;
    st.metrics.record_request(&method, &route, resp.status().as_u16(), started.elapsed());
    resp
}
