//! Answers two malformed-request cases before the MCP transport sees them, with clear JSON-RPC
//! errors: a body that is not JSON (-32700, 400; the transport would say 415 for JSON nested
//! too deeply) and a `tools/call` whose `arguments` is not an object (-32602; the transport
//! would answer 404 "method not found").

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::state::AppState;

fn rpc_error(status: StatusCode, id: &Value, code: i64, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    (status, Json(body)).into_response()
}

/// The problem with one message, if it is one of the two this module answers.
pub fn problem(msg: &Value) -> Option<&'static str> {
    let params = msg.get("params")?;
    if msg.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    match params.get("arguments") {
        None | Some(Value::Null) | Some(Value::Object(_)) => None,
        Some(_) => Some("Invalid params: arguments must be a JSON object"),
    }
}

/// Checks JSON POSTs to `/mcp`; everything else passes untouched.
pub async fn check(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let is_json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|e| e.trim().eq_ignore_ascii_case("application/json")));
    if req.method() != axum::http::Method::POST || !is_json {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = to_bytes(body, st.config.max_body_bytes).await else {
        let message = "Request body exceeds the configured size limit";
        return crate::error::ApiError::client(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", message)
            .into_response();
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Err(_) => return rpc_error(StatusCode::BAD_REQUEST, &Value::Null, -32700, "Parse error: the body is not JSON"),
        Ok(msg) => {
            if let Some(message) = problem(&msg) {
                let id = msg.get("id").cloned().unwrap_or(Value::Null);
                return rpc_error(StatusCode::OK, &id, -32602, message);
            }
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_non_object_arguments_of_tool_calls_are_answered() {
        let call = |args: Value| json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": args}});
        assert!(problem(&call(json!("text"))).is_some());
        assert!(problem(&call(json!([1]))).is_some());
        assert!(problem(&call(json!({}))).is_none());
        assert!(problem(&call(Value::Null)).is_none());
        assert!(
            problem(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"arguments": 1}})).is_none()
        );
    }
}
