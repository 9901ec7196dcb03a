//! The admin console at `/admin/ui`: server-rendered pages (maud) over the services, with
//! embedded CSS and a little JS. Signed-cookie sessions from an admin key ([`session`]), CSRF
//! tokens on every form that changes state, loopback only while no key is configured.
//!
//! Not part of the JSON API: these routes are outside the OpenAPI document and the API's key
//! middleware; [`guard`] authenticates them instead.

pub mod diff;
pub mod guard;
pub mod layout;
pub mod pages;
pub mod session;

use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{any, get, post};
use axum::Router;
use maud::Markup;
use tower_http::timeout::TimeoutLayer;

use crate::state::AppState;

pub use guard::Ctx;

/// Where the console lives.
pub const BASE: &str = crate::api::CONSOLE_BASE;

const CSS: &str = include_str!("assets/console.css");
const JS: &str = include_str!("assets/console.js");

/// The console's routes (merged beside the API's, outside its key middleware).
pub fn routes(state: &AppState) -> Router<AppState> {
    use pages::*;
    let signed_in = Router::new()
        .route("/admin/ui", get(|| async { Redirect::to("/admin/ui/tenants") }))
        .route("/admin/ui/", get(|| async { Redirect::to("/admin/ui/tenants") }))
        .route("/admin/ui/logout", post(login::logout))
        .route("/admin/ui/tenants", get(tenants::list))
        .route("/admin/ui/webhooks", get(webhooks::list))
        .route("/admin/ui/webhooks/{event_id}/retry", post(webhooks::retry))
        .route("/admin/ui/t/{tenant}/subjects", get(subjects::list))
        .route("/admin/ui/t/{tenant}/subjects/{subject}", get(subject::show))
        .route("/admin/ui/t/{tenant}/subjects/{subject}/context", get(context::show))
        .route("/admin/ui/t/{tenant}/subjects/{subject}/receipts", get(receipts::list))
        .route("/admin/ui/t/{tenant}/subjects/{subject}/erase", get(erase::confirm).post(erase::erase))
        .route("/admin/ui/t/{tenant}/subjects/{subject}/erase-item", get(erase_item::confirm).post(erase_item::erase))
        .route("/admin/ui/t/{tenant}/receipts/{receipt_id}", get(receipts::show))
        .route("/admin/ui/t/{tenant}/receipts/{receipt_id}/replay", post(receipts::replay))
        .route("/admin/ui/t/{tenant}/erasures/{erasure_id}", get(erase::certificate))
        .route("/admin/ui/t/{tenant}/erasures/{erasure_id}/certificate.json", get(erase::download))
        .route("/admin/ui/t/{tenant}/keys", get(keys::list).post(keys::create))
        .route("/admin/ui/t/{tenant}/keys/{key_id}/revoke", post(keys::revoke))
        .route("/admin/ui/t/{tenant}/config", get(config::show).post(config::patch))
        .route("/admin/ui/t/{tenant}/policy/upload", post(config::upload))
        .route("/admin/ui/t/{tenant}/policy/activate", post(config::activate))
        .route("/admin/ui/t/{tenant}/labels", get(labels::list))
        .route("/admin/ui/t/{tenant}/labels/{memory_id}/promote", post(labels::promote))
        .route("/admin/ui/t/{tenant}/jobs", get(jobs::list))
        // Any other address under the console is the console's own 404 page (signed in; without a
        // session it leads to the sign-in form like every page), not the API's JSON fallback.
        .route("/admin/ui/{*rest}", any(page_not_found))
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard::tenant_access))
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard::require_session));
    Router::new()
        .route("/admin/ui/login", get(login::form).post(login::submit))
        .route("/admin/ui/assets/console.css", get(|| async { asset("text/css; charset=utf-8", CSS) }))
        .route("/admin/ui/assets/console.js", get(|| async { asset("text/javascript; charset=utf-8", JS) }))
        .merge(signed_in)
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard::loopback_unless_keyed))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            Duration::from_secs(state.config.request_timeout_secs),
        ))
        .layer(DefaultBodyLimit::max(state.config.max_body_bytes))
}

/// The console's 404 page for an address it does not serve.
async fn page_not_found() -> PageError {
    PageError::Client(StatusCode::NOT_FOUND, "There is no console page at this address.".into())
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "public, max-age=3600")], body).into_response()
}

/// The console's pages may load their own CSS and JS, nothing else, and post only to themselves.
pub const CSP: &str = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; \
                       form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// An HTML answer with the console's CSP. Its referrer policy is `same-origin`, not the API's
/// `no-referrer`: under `no-referrer` a browser sends `Origin: null` with the page's own form
/// posts, which the Origin check (the HTTP layer's `origin` check) refuses like any foreign origin.
pub fn html(status: StatusCode, page: Markup) -> Response {
    let headers = [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::REFERRER_POLICY, "same-origin"),
    ];
    (status, headers, page.0).into_response()
}

/// A failed page: a client error shown with its message, or an opaque server error.
#[derive(Debug)]
pub enum PageError {
    Client(StatusCode, String),
    Internal(anyhow::Error),
}

impl<E: Into<anyhow::Error>> From<E> for PageError {
    fn from(e: E) -> Self {
        PageError::Internal(e.into())
    }
}

impl PageError {
    /// 404 with a message.
    pub fn not_found(what: &str) -> PageError {
        PageError::Client(StatusCode::NOT_FOUND, format!("{what} not found."))
    }

    /// 400 with a message.
    pub fn bad(msg: impl Into<String>) -> PageError {
        PageError::Client(StatusCode::BAD_REQUEST, msg.into())
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let (status, msg) = match self {
            PageError::Client(s, m) => (s, m),
            PageError::Internal(e) => {
                // The cause once, without request content; the page stays opaque.
                tracing::error!(error = %format!("{e:#}"), "console page failed");
                (StatusCode::INTERNAL_SERVER_ERROR, "Something went wrong; the server log has the cause.".into())
            }
        };
        html(
            status,
            layout::bare(
                "Error",
                maud::html! { h1 { "Error " (status.as_u16()) } p.error role="alert" { (msg) } p { a href="/admin/ui/tenants" { "Back to the console" } } },
            ),
        )
    }
}

/// Result of a page handler.
pub type PageResult = Result<Response, PageError>;

/// A 303 to `to` (after a form post).
pub fn see_other(to: &str) -> Response {
    Redirect::to(to).into_response()
}

/// Percent-encodes a path segment (subject and tenant ids may hold any printable character).
pub fn seg(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>().replace('+', "%20")
}
