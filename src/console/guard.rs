//! Who may reach the console: loopback only while no key is configured; otherwise a valid,
//! unexpired session of a still-live admin identity, on its own tenant unless it is an operator. Every POST behind a session must carry
//! the session's CSRF token (checked here, so no form can forget it).

use std::net::SocketAddr;

use axum::body::{to_bytes, Body};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::session::{self, Session, Who};
use super::{layout, see_other, PageError};
use crate::services::access::{self, Refusal};
use crate::state::AppState;

/// What a signed-in page knows about its request.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub session: Session,
    /// The token every form of this session carries.
    pub csrf: String,
}

/// Whether the server runs without any key (the API is open; the console is loopback only).
/// Once a key was stored this stays false, so open-mode sessions end for good.
pub async fn is_open(st: &AppState) -> Result<bool, PageError> {
    Ok(!st.keyed().await?)
}

/// Fingerprint of the operator key digest under the console key (sessions end when it changes).
pub fn operator_fp(st: &AppState, digest: &[u8; 32]) -> String {
    session::mac_hex(&st.console_key[..], &["operator", &hex::encode(digest)])[..32].to_string()
}

fn peer_is_loopback(req: &Request) -> bool {
    req.extensions().get::<ConnectInfo<SocketAddr>>().is_some_and(|c| c.0.ip().is_loopback())
}

/// Whether the request came over https (directly or through a proxy that says so).
pub fn is_https(headers: &HeaderMap) -> bool {
    headers.get("x-forwarded-proto").and_then(|v| v.to_str().ok()).is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

/// Refuses non-loopback peers while the server has no key at all.
pub async fn loopback_unless_keyed(State(st): State<AppState>, req: Request, next: Next) -> Response {
    match is_open(&st).await {
        Ok(true) if !peer_is_loopback(&req) => super::html(
            StatusCode::FORBIDDEN,
            layout::bare(
                "Console unavailable",
                maud::html! {
                    h1 { "Console unavailable" }
                    p.error role="alert" { "No API key is configured, so the console is served on loopback only. \
                        Set MNEMO_API_KEY or create an admin key with `mnemo keys create --admin`." }
                },
            ),
        ),
        Ok(_) => next.run(req).await,
        Err(e) => e.into_response(),
    }
}

/// Whether the session is still held server-side (not signed out) and its identity still holds
/// (key not revoked, operator key unchanged, ...).
async fn still_valid(st: &AppState, s: &Session) -> Result<bool, PageError> {
    let tenant = s.home_tenant();
    let mut tx = crate::db::scope::begin(&st.pool, tenant).await?;
    if !crate::db::console_sessions::live(&mut tx, tenant, &s.id()).await? {
        return Ok(false);
    }
    Ok(match &s.who {
        Who::Open => is_open(st).await?,
        Who::Operator { fp } => st.config.api_key_sha256.is_some_and(|d| session::same(fp, &operator_fp(st, &d))),
        Who::Key { key_id, operator, .. } => {
            crate::db::console::live_admin_key(&mut tx, tenant, key_id).await? == Some(*operator)
        }
    })
}

/// The request's session, if its cookie is valid now.
pub async fn current(st: &AppState, headers: &HeaderMap) -> Result<Option<Session>, PageError> {
    let Some(value) = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|h| session::cookie(h, session::COOKIE))
    else {
        return Ok(None);
    };
    let now = chrono::Utc::now().timestamp();
    let Some(s) = session::open(&st.console_key[..], value, now) else { return Ok(None) };
    Ok(if still_valid(st, &s).await? { Some(s) } else { None })
}

/// Sends visitors without a session to the sign-in page; checks the CSRF token of every POST.
pub async fn require_session(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let s = match current(&st, req.headers()).await {
        Ok(Some(s)) => s,
        Ok(None) => return see_other("/admin/ui/login"),
        Err(e) => return e.into_response(),
    };
    let csrf = s.csrf(&st.console_key[..]);
    let mut req = if req.method() == Method::POST {
        let (parts, body) = req.into_parts();
        let Ok(bytes) = to_bytes(body, st.config.max_body_bytes).await else {
            return PageError::Client(StatusCode::PAYLOAD_TOO_LARGE, "The form is too large.".into()).into_response();
        };
        let presented = form_urlencoded::parse(&bytes).find(|(k, _)| k == "csrf").map(|(_, v)| v.into_owned());
        if !presented.is_some_and(|t| session::same(&t, &csrf)) {
            return PageError::Client(
                StatusCode::FORBIDDEN,
                "This form's CSRF token is missing or wrong. Reload the page and try again.".into(),
            )
            .into_response();
        }
        Request::from_parts(parts, Body::from(bytes))
    } else {
        req
    };
    req.extensions_mut().insert(Ctx { session: s, csrf });
    next.run(req).await
}

/// A session's reach and, for pages of one tenant (`/admin/ui/t/{tenant}/…`), residency and rate
/// limits as the API applies them to the same tenant and key. An admin key's session sees its own
/// tenant only; the webhook outbox (every tenant's events) needs an operator.
pub async fn tenant_access(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let bound = req.extensions().get::<Ctx>().and_then(|c| c.session.bound_tenant().map(str::to_string));
    if bound.is_some() && req.uri().path().starts_with("/admin/ui/webhooks") {
        let message = "The webhook outbox holds every tenant's events: it needs an operator key.";
        return PageError::Client(StatusCode::FORBIDDEN, message.into()).into_response();
    }
    let Some(rest) = req.uri().path().strip_prefix("/admin/ui/t/") else { return next.run(req).await };
    let raw = rest.split('/').next().unwrap_or_default();
    let tenant: String = percent_decode(raw);
    if let Some(own) = bound.filter(|own| *own != tenant) {
        let message = format!("This admin key belongs to tenant {own}: only an operator key opens another tenant.");
        return PageError::Client(StatusCode::FORBIDDEN, message).into_response();
    }
    if !st.config.access.active() {
        return next.run(req).await;
    }
    let key_id = req.extensions().get::<Ctx>().and_then(|c| match &c.session.who {
        Who::Key { key_id, .. } => Some(key_id.clone()),
        _ => None,
    });
    match access::check(&st.pool, &st.config.access, &tenant, key_id.as_deref()).await {
        Ok(()) => next.run(req).await,
        Err(Refusal::Residency { message }) => PageError::Client(StatusCode::FORBIDDEN, message).into_response(),
        Err(Refusal::RateLimited { rpm, .. }) => PageError::Client(
            StatusCode::TOO_MANY_REQUESTS,
            format!("Rate limit exceeded. Max {rpm} requests per minute."),
        )
        .into_response(),
    }
}

/// A percent-encoded path segment, decoded (invalid UTF-8 is replaced).
fn percent_decode(raw: &str) -> String {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn path_segments_are_percent_decoded() {
        assert_eq!(super::percent_decode("acme%20corp%3Aeu"), "acme corp:eu");
        assert_eq!(super::percent_decode("a%2"), "a%2");
        assert_eq!(super::percent_decode("plain"), "plain");
    }
}
