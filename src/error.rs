//! The one API error type: 4xx bodies say what was wrong, 5xx bodies are opaque.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

tokio::task_local! {
    /// The current request's id, set by `http::middleware::request_scope`.
    pub static REQUEST_ID: String;
}

/// Returns the id of the request being served, if any.
pub fn current_request_id() -> Option<String> {
    REQUEST_ID.try_with(|id| id.clone()).ok()
}

/// An error that maps to the Statewave error envelope.
#[derive(Debug)]
pub enum ApiError {
    /// A client error with its HTTP status, machine code and message.
    Client { status: StatusCode, code: String, message: String, details: Option<Value>, retry_after: Option<u64> },
    /// A server-side failure; the cause is logged once and never sent to the client.
    Internal(anyhow::Error),
}

/// Shorthand for handler results.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// A 4xx error with a code and message.
    pub fn client(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        ApiError::Client { status, code: code.to_string(), message: message.into(), details: None, retry_after: None }
    }

    /// A 4xx error whose `details` say more (e.g. the row a conflict is with).
    pub fn detailed(status: StatusCode, code: &str, message: impl Into<String>, details: Value) -> Self {
        ApiError::Client {
            status,
            code: code.to_string(),
            message: message.into(),
            details: Some(details),
            retry_after: None,
        }
    }

    /// 422 `validation_error` with a pydantic-style details list.
    pub fn validation(errors: Vec<FieldError>) -> Self {
        let summary = errors.iter().map(|e| format!("{}: {}", e.loc_string(), e.msg)).collect::<Vec<_>>().join("; ");
        let details = errors.iter().map(FieldError::to_json).collect::<Vec<_>>();
        ApiError::Client {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            code: "validation_error".into(),
            message: format!("Request validation failed: {summary}"),
            details: Some(Value::Array(details)),
            retry_after: None,
        }
    }

    /// 404 with Statewave's `http_error` code.
    pub fn not_found(message: &str) -> Self {
        Self::client(StatusCode::NOT_FOUND, "http_error", message)
    }

    /// 400 with a code and message.
    pub fn bad_request(code: &str, message: impl Into<String>) -> Self {
        Self::client(StatusCode::BAD_REQUEST, code, message)
    }

    /// The HTTP status this error maps to.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Client { status, .. } => *status,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> Self {
        ApiError::Internal(e.into())
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(e: anyhow::Error) -> Self {
        ApiError::Internal(e)
    }
}

/// The Statewave error envelope every 4xx and 5xx body is.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Error)]
pub struct Envelope {
    pub error: ErrorDetail,
}

/// What went wrong: a machine code, a message, and for 422 the invalid fields.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
    /// For `validation_error`: one `{loc, msg, type}` per invalid field.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Value, nullable = false)]
    pub details: Option<Value>,
    /// The request's `X-Request-ID`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub request_id: Option<String>,
}

/// Builds an envelope body, adding the current request id.
pub fn envelope(code: &str, message: &str, details: Option<&Value>) -> Envelope {
    Envelope {
        error: ErrorDetail {
            code: code.to_string(),
            message: message.to_string(),
            details: details.cloned(),
            request_id: current_request_id(),
        },
    }
}

/// The opaque 500 every server-side failure answers (the cause is logged, never sent).
pub fn internal_error_response() -> Response {
    let body = envelope("internal_error", "An unexpected error occurred", None);
    (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(body)).into_response()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            ApiError::Client { status, code, message, details, retry_after } => {
                let body = envelope(&code, &message, details.as_ref());
                let mut resp = (status, axum::Json(body)).into_response();
                if let Some(secs) = retry_after {
                    if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                        resp.headers_mut().insert("retry-after", v);
                    }
                }
                resp
            }
            ApiError::Internal(cause) if database_unavailable(&cause) => {
                // A failover or restart: the client can retry the same request shortly.
                tracing::warn!(request_id = current_request_id().unwrap_or_default(), error = %format!("{cause:#}"), "database unavailable");
                let body = envelope(
                    "database_unavailable",
                    "The database is unavailable (restart or failover in progress); retry after the Retry-After delay",
                    None,
                );
                let mut resp = (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
                resp.headers_mut().insert("retry-after", HeaderValue::from_static(UNAVAILABLE_RETRY_AFTER));
                resp
            }
            ApiError::Internal(cause) => {
                // The cause may hold SQL or paths, never content: log it once, send nothing of it.
                tracing::error!(request_id = current_request_id().unwrap_or_default(), error = %format!("{cause:#}"), "internal error");
                internal_error_response()
            }
        }
    }
}

/// Seconds a client is told to wait when the database is unavailable.
const UNAVAILABLE_RETRY_AFTER: &str = "1";

/// Whether an error means the database cannot be reached right now (a connection that broke or
/// cannot be made, a server shutting down or starting, a primary that became read-only in a
/// failover), as opposed to a fault of the request or of mnemo.
pub fn database_unavailable(cause: &anyhow::Error) -> bool {
    cause.chain().any(|e| e.downcast_ref::<sqlx::Error>().is_some_and(sqlx_unavailable))
}

/// [`database_unavailable`] for one `sqlx` error.
pub fn sqlx_unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Tls(_) => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|c| {
            // 08: connection exception; 57P01-03: admin/crash shutdown, cannot connect now;
            // 25006: read-only transaction (a demoted primary or a standby).
            c.starts_with("08") || matches!(c.as_ref(), "57P01" | "57P02" | "57P03" | "25006")
        }),
        _ => false,
    }
}

/// One invalid field, reported pydantic-style.
#[derive(Debug, Clone)]
pub struct FieldError {
    /// Location, e.g. `["body", "episodes", "3", "subject_id"]`.
    pub loc: Vec<String>,
    /// Human-readable problem.
    pub msg: String,
    /// Machine-readable kind, e.g. `missing`, `string_too_long`.
    pub kind: &'static str,
}

impl FieldError {
    /// The location as a dotted path without the leading `body`/`query`.
    pub fn loc_string(&self) -> String {
        let mut out = String::new();
        for part in self.loc.iter().skip(1) {
            if part.parse::<usize>().is_ok() {
                out.push_str(&format!("[{part}]"));
            } else {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(part);
            }
        }
        if out.is_empty() {
            self.loc.first().cloned().unwrap_or_default()
        } else {
            out
        }
    }

    fn to_json(&self) -> Value {
        let loc: Vec<Value> = self
            .loc
            .iter()
            .map(|p| match p.parse::<u64>() {
                Ok(n) => json!(n),
                Err(_) => json!(p),
            })
            .collect();
        json!({ "loc": loc, "msg": self.msg, "type": self.kind })
    }
}
