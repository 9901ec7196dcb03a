//! Per-request scope: the request id for error bodies, and the envelope for layer-made errors.

use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{envelope, ApiError, REQUEST_ID};

/// Scopes the request id (set by `SetRequestIdLayer`) for error bodies, fills empty error bodies.
pub async fn request_scope(req: Request, next: Next) -> Response {
    let id = super::layers::request_id(&req).unwrap_or_default().to_string();
    REQUEST_ID.scope(id, async move { fill_empty_error(next.run(req).await) }).await
}

/// Errors produced outside handlers (405, 408, 413 from layers, extractor rejections such as
/// a path segment that is not UTF-8) get the JSON envelope too.
fn fill_empty_error(resp: Response) -> Response {
    let status = resp.status();
    // JSON bodies, and the console's HTML error pages, were written on purpose.
    let has_body = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json") || v.starts_with("text/html"));
    if status.as_u16() < 400 || has_body {
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
