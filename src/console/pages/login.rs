//! Sign-in with an admin API key (or, with no key configured, a loopback-only open session),
//! and sign-out, which ends the session server-side.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use maud::{html, Markup};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::console::guard::{current, is_https, is_open, operator_fp};
use crate::console::session::{self, Session, Who};
use crate::console::{html, layout, see_other, Ctx, PageError, PageResult};
use crate::services::keys;
use crate::state::AppState;

fn form_page(open: bool, token: &str, error: Option<&str>) -> Markup {
    layout::bare(
        "Sign in",
        html! {
            h1 { "mnemo console" }
            @if let Some(e) = error { p.error role="alert" { (e) } }
            form.card method="post" action="/admin/ui/login" {
                input type="hidden" name="csrf" value=(token);
                @if open {
                    p { "No API key is configured: the console is open to this machine (loopback) only." }
                    button type="submit" { "Enter the console" }
                } @else {
                    label for="api_key" { "Admin API key" }
                    input id="api_key" name="api_key" type="password" autocomplete="current-password" required autofocus;
                    button type="submit" { "Sign in" }
                }
            }
        },
    )
}

/// The sign-in form, with a fresh login nonce in its own short-lived cookie.
pub async fn form(State(st): State<AppState>, headers: HeaderMap) -> PageResult {
    if current(&st, &headers).await?.is_some() {
        return Ok(see_other("/admin/ui/tenants"));
    }
    let open = is_open(&st).await?;
    Ok(login_form(&st, &headers, open, StatusCode::OK, None))
}

fn login_form(st: &AppState, headers: &HeaderMap, open: bool, status: StatusCode, error: Option<&str>) -> Response {
    let nonce = session::random_token();
    let token = session::login_token(&st.console_key[..], &nonce);
    let mut resp = html(status, form_page(open, &token, error));
    let cookie = session::set_cookie(session::LOGIN_COOKIE, &nonce, 600, is_https(headers));
    if let Ok(v) = cookie.parse() {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    resp
}

/// Checks the form's token and the key; on success sets the session cookie.
pub async fn submit(
    State(st): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> PageResult {
    let open = is_open(&st).await?;
    let nonce = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|h| session::cookie(h, session::LOGIN_COOKIE));
    let token_ok = match (nonce, form.get("csrf")) {
        (Some(n), Some(t)) => session::same(t, &session::login_token(&st.console_key[..], n)),
        _ => false,
    };
    if !token_ok {
        let msg = "The sign-in form expired or its CSRF token is missing. Try again.";
        return Ok(login_form(&st, &headers, open, StatusCode::FORBIDDEN, Some(msg)));
    }
    let who = if open {
        Who::Open
    } else {
        let presented = form.get("api_key").map(|k| k.trim()).unwrap_or_default();
        match identify(&st, peer.ip(), presented).await? {
            Ok(who) => who,
            Err(msg) => return Ok(login_form(&st, &headers, open, StatusCode::FORBIDDEN, Some(msg))),
        }
    };
    let minutes = st.config.console_session_minutes;
    let s = Session::new(who, chrono::Utc::now().timestamp(), minutes);
    let expires = chrono::DateTime::from_timestamp(s.exp, 0).unwrap_or_else(chrono::Utc::now);
    let mut tx = crate::db::scope::begin(&st.pool, s.home_tenant()).await?;
    crate::db::console_sessions::insert(&mut tx, s.home_tenant(), &s.id(), expires).await?;
    tx.commit().await?;
    let secure = is_https(&headers);
    let mut resp = see_other("/admin/ui/tenants");
    let cookies = [
        session::set_cookie(session::COOKIE, &session::seal(&st.console_key[..], &s), (minutes * 60) as i64, secure),
        session::set_cookie(session::LOGIN_COOKIE, "", 0, secure),
    ];
    for c in cookies {
        if let Ok(v) = c.parse() {
            resp.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    Ok(resp)
}

/// The admin identity of a presented key, or why it cannot sign in.
async fn identify(
    st: &AppState,
    peer: IpAddr,
    presented: &str,
) -> Result<Result<Who, &'static str>, crate::console::PageError> {
    if presented.is_empty() {
        return Ok(Err("Enter an admin API key."));
    }
    // The API's throttle of failed key attempts, shared with the sign-in form.
    if let Some(left) = st.auth_throttle.blocked(Some(peer), presented) {
        let message = format!("Too many failed API key attempts; retry after {} s.", left.as_secs().max(1));
        return Err(crate::console::PageError::Client(StatusCode::TOO_MANY_REQUESTS, message));
    }
    if let Some(expected) = st.config.api_key_sha256 {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        if bool::from(digest.ct_eq(&expected)) {
            return Ok(Ok(Who::Operator { fp: operator_fp(st, &expected) }));
        }
    }
    Ok(match keys::lookup(&st.pool, presented).await? {
        Some(k) if k.scope != keys::Scope::Tenant => {
            Ok(Who::Key { key_id: k.key_id, tenant: k.tenant, operator: k.scope == keys::Scope::Operator })
        }
        Some(_) => Err("This key is not an admin key: the console needs an admin key."),
        None => {
            st.auth_throttle.failed(Some(peer), presented);
            Err("Invalid API key.")
        }
    })
}

/// Ends the session server-side (a copy of the cookie is void from now on, on every server),
/// and clears the cookie.
pub async fn logout(
    State(st): State<AppState>,
    Extension(ctx): Extension<Ctx>,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    let s = &ctx.session;
    let mut tx = crate::db::scope::begin(&st.pool, s.home_tenant()).await?;
    crate::db::console_sessions::delete(&mut tx, s.home_tenant(), &s.id()).await?;
    tx.commit().await?;
    let mut resp = see_other("/admin/ui/login");
    if let Ok(v) = session::set_cookie(session::COOKIE, "", 0, is_https(&headers)).parse() {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    Ok(resp.into_response())
}
