//! The layers every answer passes through: request ids, the request span and access log,
//! metrics, the error envelope for layer-made errors, panic catching and security headers.
//!
//! Routes are named by their template (`/v1/subjects/{subject_id}`) in spans, logs and metric
//! labels: raw paths and query strings hold subject ids and never leave the request.

use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request};
use axum::http::{header, HeaderName, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use axum::Router;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer};
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::TraceLayer;
use tracing::Span;

use super::middleware;

/// The route label of requests that matched no route (404 fallback).
const UNMATCHED: &str = "unmatched";

/// Wraps `router` (routes, fallback and their own layers) in the common layers.
pub fn observed<S>(router: Router<S>) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    let x_request_id = HeaderName::from_static("x-request-id");
    router.layer(
        ServiceBuilder::new()
            // A caller's id is kept when it is printable ASCII of sane length, else replaced.
            .map_request(drop_unusable_request_id)
            .layer(SetRequestIdLayer::new(x_request_id.clone(), RandomRequestId))
            .layer(PropagateRequestIdLayer::new(x_request_id))
            // API answers hold memory content: never cached, sniffed, framed or rendered as a page.
            .layer(SetResponseHeaderLayer::overriding(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ))
            .layer(SetResponseHeaderLayer::overriding(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")))
            // Console pages set their own (the console's `html`).
            .layer(SetResponseHeaderLayer::if_not_present(
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            ))
            .layer(SetResponseHeaderLayer::if_not_present(header::CONTENT_SECURITY_POLICY, content_security_policy))
            .layer(SetResponseHeaderLayer::if_not_present(header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
            .layer(
                TraceLayer::new_for_http()
                    .make_span_with(request_span)
                    .on_request(())
                    .on_response(access_log)
                    // A 5xx is in the access log; its cause was logged where it happened.
                    .on_failure(()),
            )
            .layer(axum::middleware::from_fn(track_metrics))
            .layer(axum::middleware::from_fn(middleware::request_scope))
            .layer(CatchPanicLayer::custom(panic_response)),
    )
}

/// The route template a request matched, or `unmatched`.
fn route_template(req: &Request) -> &str {
    req.extensions().get::<MatchedPath>().map_or(UNMATCHED, MatchedPath::as_str)
}

/// The method as a label: the standard ones, or `other` (methods are caller-chosen tokens).
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// The id of a request, once `SetRequestIdLayer` has run.
pub fn request_id(req: &Request) -> Option<&str> {
    req.extensions().get::<RequestId>().and_then(|id| id.header_value().to_str().ok())
}

fn drop_unusable_request_id(mut req: Request) -> Request {
    let usable = |v: &HeaderValue| {
        let b = v.as_bytes();
        !b.is_empty() && b.len() <= 128 && b.iter().all(u8::is_ascii_graphic)
    };
    if req.headers().get("x-request-id").is_some_and(|v| !usable(v)) {
        req.headers_mut().remove("x-request-id");
    }
    req
}

/// New request ids: 16 hex digits.
#[derive(Clone, Copy)]
struct RandomRequestId;

impl MakeRequestId for RandomRequestId {
    fn make_request_id<B>(&mut self, _: &axum::http::Request<B>) -> Option<RequestId> {
        HeaderValue::from_str(&format!("{:016x}", rand::random::<u64>())).ok().map(RequestId::new)
    }
}

/// The request's span: method, route template and request id (never the URI). `otel.name` is
/// the span name an OpenTelemetry exporter shows (`GET /v1/subjects/{subject_id}`).
fn request_span(req: &Request) -> Span {
    let method = method_label(req.method());
    let route = route_template(req);
    tracing::info_span!(
        "request",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.response.status_code = tracing::field::Empty,
        method,
        route,
        request_id = request_id(req).unwrap_or_default(),
    )
}

/// The access log line, inside the request span: status and latency only. The status also goes
/// on the span (a 5xx marks it failed, as the HTTP semantic conventions say for servers).
fn access_log(resp: &Response, latency: Duration, span: &Span) {
    let status = resp.status();
    span.record("http.response.status_code", i64::from(status.as_u16()));
    if status.is_server_error() {
        span.record("otel.status_code", "ERROR");
    }
    let latency_ms = (latency.as_secs_f64() * 1000.0 * 100.0).round() / 100.0;
    tracing::info!(status = resp.status().as_u16(), latency_ms, "request");
}

/// Counts the request and its latency by method, route template and status.
async fn track_metrics(req: Request, next: Next) -> Response {
    let method = method_label(req.method());
    let route = route_template(&req).to_string();
    let started = Instant::now();
    let resp = next.run(req).await;
    crate::metrics::record_request(method, &route, resp.status().as_u16(), started.elapsed());
    resp
}

/// A restrictive policy for everything but HTML pages (which must bring their own).
fn content_security_policy<B>(resp: &axum::http::Response<B>) -> Option<HeaderValue> {
    let html = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    (!html).then(|| HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'"))
}

/// A handler panicked: the opaque 500 envelope. The panic itself was already reported by the
/// panic hook (once, with its location, inside the request's span and request-id scope).
fn panic_response(_panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    crate::error::internal_error_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::routing::get;
    use tower::ServiceExt;

    async fn boom() -> &'static str {
        panic!("handler bug")
    }

    fn app() -> Router {
        observed(
            Router::new()
                .route("/boom/{id}", get(boom))
                .route("/fine", get(|| async { axum::Json(serde_json::json!({"ok": true})) })),
        )
    }

    async fn call(app: Router, req: axum::http::Request<Body>) -> (Response, serde_json::Value) {
        let resp = app.oneshot(req).await.unwrap();
        let (parts, body) = resp.into_parts();
        let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap();
        let json = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
        (Response::from_parts(parts, Body::empty()), json)
    }

    #[tokio::test]
    async fn a_panicking_handler_answers_the_opaque_500_envelope() {
        let req = axum::http::Request::get("/boom/user:1").header("x-request-id", "panic-1").body(Body::empty());
        let (resp, body) = call(app(), req.unwrap()).await;
        assert_eq!(resp.status(), 500);
        assert_eq!(resp.headers()["x-request-id"], "panic-1");
        assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
        assert_eq!(
            body,
            serde_json::json!({"error": {"code": "internal_error", "message": "An unexpected error occurred", "request_id": "panic-1"}})
        );
        // The layers keep serving after a panic.
        let (resp, _) = call(app(), axum::http::Request::get("/fine").body(Body::empty()).unwrap()).await;
        assert_eq!(resp.status(), 200);
    }

    #[tokio::test]
    async fn request_ids_are_kept_when_usable_and_generated_otherwise() {
        let req = |id: Option<&str>| {
            let b = axum::http::Request::get("/fine");
            let b = match id {
                Some(id) => b.header("x-request-id", id),
                None => b,
            };
            b.body(Body::empty()).unwrap()
        };
        let (resp, _) = call(app(), req(Some("abc-123"))).await;
        assert_eq!(resp.headers()["x-request-id"], "abc-123");
        for bad in [None, Some("has space"), Some(&*"x".repeat(129))] {
            let (resp, _) = call(app(), req(bad)).await;
            let id = resp.headers()["x-request-id"].to_str().unwrap().to_string();
            assert_eq!(id.len(), 16, "{bad:?} -> {id}");
            assert!(id.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
        }
    }

    #[tokio::test]
    async fn security_headers_and_a_csp_except_on_html() {
        let (resp, _) = call(app(), axum::http::Request::get("/fine").body(Body::empty()).unwrap()).await;
        let h = resp.headers();
        assert_eq!(h["x-content-type-options"], "nosniff");
        assert_eq!(h["x-frame-options"], "DENY");
        assert_eq!(h["referrer-policy"], "no-referrer");
        assert_eq!(h["content-security-policy"], "default-src 'none'; frame-ancestors 'none'");
        assert_eq!(h["cache-control"], "no-store");
        let page = observed(Router::new().route("/page", get(|| async { axum::response::Html("<p>hi</p>") })));
        let (resp, _) = call(page, axum::http::Request::get("/page").body(Body::empty()).unwrap()).await;
        assert!(!resp.headers().contains_key("content-security-policy"));
    }

    /// Log output captured for one test (the subscriber is thread-local; tokio tests run on one thread).
    #[derive(Clone, Default)]
    struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn the_access_log_names_the_route_template_never_the_path_or_query() {
        let log = Captured::default();
        let writer = log.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .with_max_level(tracing::Level::INFO)
            .with_writer(move || writer.clone())
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        let app = observed(Router::new().route("/v1/subjects/{subject_id}", get(|| async { "ok" })));
        let req = axum::http::Request::get("/v1/subjects/user:secret-42?q=secret-43")
            .header("x-request-id", "log-1")
            .body(Body::empty())
            .unwrap();
        let (resp, _) = call(app, req).await;
        assert_eq!(resp.status(), 200);
        let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
        let line: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(line["fields"]["message"], "request", "{text}");
        assert_eq!(line["fields"]["status"], 200);
        assert_eq!(line["span"]["route"], "/v1/subjects/{subject_id}", "{text}");
        assert_eq!(line["span"]["otel.name"], "GET /v1/subjects/{subject_id}");
        assert_eq!(line["span"]["request_id"], "log-1");
        assert!(!text.contains("secret"), "{text}");
    }

    #[test]
    fn unknown_methods_share_one_label() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::from_bytes(b"BREW").unwrap()), "other");
    }
}
