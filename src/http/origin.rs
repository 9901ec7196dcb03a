//! What a browser may make this server do: DNS-rebinding and cross-site request protection for
//! every route (API, MCP and console), in front of authentication.
//!
//! - **Host**: while the server is open (no key configured, none ever stored) a request must name
//!   a loopback host (`localhost`, `*.localhost`, `127.0.0.1`, `[::1]`, any port) or one listed in
//!   `MNEMO_ALLOWED_HOSTS`: a page on `evil.example` whose name was rebound to 127.0.0.1 sends
//!   `Host: evil.example`. With a key the check applies only when the list is set (behind a proxy
//!   the Host is the public name, and a rebound page has no key to send).
//! - **Origin**: a request that carries one must come from the same origin as its Host, a loopback
//!   origin, or one listed in `MNEMO_CORS_ORIGINS` (on `/mcp` also `MNEMO_MCP_ALLOWED_ORIGINS`).
//!   Agents, CLIs and SDKs send none; browsers send it on every cross-origin POST.
//! - **Content-Type**: a POST, PUT, PATCH or DELETE with a body (or a Content-Type) outside the
//!   console must be JSON (`application/json`, `application/*+json`): a cross-site form or a
//!   `text/plain` fetch cannot set it without a CORS preflight. The console's forms carry their
//!   own CSRF token instead (the console's `guard`).
//!
//! Probes and the other public paths are exempt: they reveal nothing and must answer load
//! balancers whatever name they use.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;

/// Splits `scheme://host[:port]` into its lower-cased parts (port None when absent).
fn parse(origin: &str) -> Option<(String, String, Option<String>)> {
    let (scheme, rest) = origin.trim().split_once("://")?;
    if rest.is_empty() || rest.contains('/') || rest.contains('@') {
        return None;
    }
    let (host, port) = split_authority(rest)?;
    Some((scheme.to_ascii_lowercase(), host, port))
}

/// Splits `host[:port]` (IPv6 in brackets) into the lower-cased host and the port.
fn split_authority(authority: &str) -> Option<(String, Option<String>)> {
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6.split_once(']')?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?.to_string()),
        };
        (format!("[{h}]"), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p.to_string())),
            None => (authority.to_string(), None),
        }
    };
    (!host.is_empty()).then(|| (host.to_ascii_lowercase(), port))
}

/// Whether a host name (lower case, no port) is a loopback name.
pub fn is_loopback_host(host: &str) -> bool {
    matches!(host, "localhost" | "127.0.0.1" | "[::1]") || host.ends_with(".localhost")
}

/// Whether a browser origin passes: loopback http(s) origins on any port, `*`, or a listed
/// origin (exact, or `scheme://host:*` for any port).
pub fn allowed(origin: &str, allowlist: &[String]) -> bool {
    let Some((scheme, host, port)) = parse(origin) else {
        return false;
    };
    if (scheme == "http" || scheme == "https") && is_loopback_host(&host) {
        return true;
    }
    allowlist.iter().any(|entry| {
        if entry == "*" {
            return true;
        }
        match parse(entry) {
            Some((s, h, Some(p))) if p == "*" => s == scheme && h == host,
            Some(parsed) => parsed == (scheme.clone(), host.clone(), port.clone()),
            None => false,
        }
    })
}

/// Whether `origin` is the origin of a request for `host` (the Host header): same host and port,
/// a default port written or not. The scheme is not compared: behind a TLS proxy the request
/// arrives over http for an https origin.
pub fn same_origin(origin: &str, host: &str) -> bool {
    let (Some((scheme, oh, op)), Some((hh, hp))) = (parse(origin), split_authority(host.trim())) else {
        return false;
    };
    let default = match scheme.as_str() {
        "https" => Some("443"),
        "http" => Some("80"),
        _ => return false,
    };
    let norm = |p: Option<String>| p.filter(|p| Some(p.as_str()) != default);
    oh == hh && norm(op) == norm(hp)
}

/// Whether a Host value names a loopback host or one of `allowlist` (names, `*.suffix`, or `*`),
/// any port.
pub fn host_allowed(host: &str, allowlist: &[String]) -> bool {
    let Some((name, _)) = split_authority(host.trim()) else { return false };
    let name = name.trim_end_matches('.');
    is_loopback_host(name)
        || allowlist.iter().any(|entry| {
            let entry = entry.trim().to_ascii_lowercase();
            entry == "*"
                || entry == name
                || entry.strip_prefix("*.").is_some_and(|suffix| name.ends_with(&format!(".{suffix}")))
        })
}

/// Whether a Content-Type is JSON (`application/json` or `application/<x>+json`).
pub fn is_json(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "application/json"
        || essence.strip_prefix("application/").is_some_and(|sub| sub.ends_with("+json") && !sub.contains('/'))
}

/// Whether the request has a body (a non-zero length, or chunked) or says what its body is.
fn has_body(headers: &HeaderMap) -> bool {
    let length = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    length.is_some_and(|n| n > 0)
        || headers.contains_key(header::TRANSFER_ENCODING)
        || headers.contains_key(header::CONTENT_TYPE)
}

fn shown(value: &str) -> String {
    value.chars().take(200).collect()
}

/// The Host a request names: the header, else the request target's authority (absolute form).
fn request_host(req: &Request) -> Option<String> {
    match req.headers().get(header::HOST) {
        Some(v) => Some(v.to_str().unwrap_or("\u{fffd}").to_string()),
        None => req.uri().authority().map(|a| a.as_str().to_string()),
    }
}

/// Refuses requests for a foreign Host (open mode, or a configured list), from a foreign Origin,
/// or changing state with a body that is not JSON.
pub async fn check(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    if crate::http::auth::PUBLIC_PATHS.contains(&path) {
        return next.run(req).await;
    }
    let host = request_host(&req);
    let hosts = &st.config.allowed_hosts;
    if let Some(h) = host.as_deref() {
        let checked = if hosts.is_empty() {
            match st.keyed().await {
                Ok(keyed) => !keyed,
                Err(e) => return ApiError::from(e).into_response(),
            }
        } else {
            true
        };
        if checked && !host_allowed(h, hosts) {
            let message = format!(
                "Host {} is not allowed: {}. Add the name to MNEMO_ALLOWED_HOSTS to serve it.",
                shown(h),
                if hosts.is_empty() {
                    "without an API key this server answers requests for loopback names only"
                } else {
                    "it is neither a loopback name nor listed in MNEMO_ALLOWED_HOSTS"
                }
            );
            return ApiError::client(StatusCode::FORBIDDEN, "host_not_allowed", message).into_response();
        }
    }
    let is_mcp = path == crate::api::MCP_PATH;
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let ok = origin.to_str().is_ok_and(|o| {
            host.as_deref().is_some_and(|h| same_origin(o, h))
                || allowed(o, &st.config.cors_origins)
                || (is_mcp && allowed(o, &st.config.mcp.allowed_origins))
        });
        if !ok {
            let (target, setting) =
                if is_mcp { (path, "MNEMO_MCP_ALLOWED_ORIGINS") } else { ("this server", "MNEMO_CORS_ORIGINS") };
            let o = origin.to_str().map_or_else(|_| "(not ASCII)".to_string(), shown);
            let message = format!("Origin {o} may not call {target}; add it to {setting}");
            return ApiError::client(StatusCode::FORBIDDEN, "origin_not_allowed", message).into_response();
        }
    }
    let changes_state = matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH | Method::DELETE);
    if changes_state && !path.starts_with(crate::api::CONSOLE_BASE) && has_body(req.headers()) {
        let ct = req.headers().get(header::CONTENT_TYPE).map(|v| v.to_str().unwrap_or("\u{fffd}"));
        if !ct.is_some_and(is_json) {
            let message = match ct {
                Some(ct) => format!("Content-Type {} is not accepted: send the body as application/json", shown(ct)),
                None => "A request body needs Content-Type: application/json".to_string(),
            };
            return ApiError::client(StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", message)
                .into_response();
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn loopback_origins_pass_on_any_port() {
        for o in ["http://localhost:3000", "http://127.0.0.1", "https://[::1]:8443", "http://app.localhost:5173"] {
            assert!(allowed(o, &[]), "{o}");
        }
    }

    #[test]
    fn other_origins_need_the_list() {
        assert!(!allowed("http://evil.example", &[]));
        assert!(!allowed("http://localhost.evil.example", &[]));
        assert!(!allowed("null", &[]));
        assert!(!allowed("file://localhost", &[]));
        let l = list(&["https://app.example.com", "http://tools.example:*"]);
        assert!(allowed("https://app.example.com", &l));
        assert!(allowed("HTTPS://APP.example.com", &l));
        assert!(!allowed("https://app.example.com:8443", &l));
        assert!(!allowed("http://app.example.com", &l));
        assert!(allowed("http://tools.example:9999", &l));
        assert!(allowed("https://anything.example", &list(&["*"])));
    }

    #[test]
    fn malformed_origins_are_refused() {
        for o in ["", "localhost", "http://", "http://localhost/path", "http://user@localhost", "http://[::1"] {
            assert!(!allowed(o, &list(&["http://example.com"])), "{o}");
        }
    }

    #[test]
    fn same_origin_compares_host_and_port_with_default_ports() {
        assert!(same_origin("http://mnemo.example:8100", "mnemo.example:8100"));
        assert!(same_origin("https://mnemo.example", "mnemo.example"));
        assert!(same_origin("https://mnemo.example", "MNEMO.example:443"));
        assert!(same_origin("http://[::1]:8100", "[::1]:8100"));
        assert!(!same_origin("http://mnemo.example:8100", "mnemo.example:8101"));
        assert!(!same_origin("http://evil.example", "mnemo.example"));
        assert!(!same_origin("null", "mnemo.example"));
        assert!(!same_origin("file://mnemo.example", "mnemo.example"));
    }

    #[test]
    fn hosts_are_loopback_names_or_listed_on_any_port() {
        for h in ["localhost", "localhost:8100", "127.0.0.1:1", "[::1]:8100", "app.localhost", "LOCALHOST."] {
            assert!(host_allowed(h, &[]), "{h}");
        }
        for h in ["evil.example", "evil.example:8100", "127.0.0.2", "localhost.evil.example", "", "[::1"] {
            assert!(!host_allowed(h, &[]), "{h}");
        }
        let l = list(&["mnemo.internal", "*.corp.example"]);
        assert!(host_allowed("mnemo.internal:8100", &l));
        assert!(host_allowed("api.corp.example", &l));
        assert!(!host_allowed("corp.example", &l));
        assert!(!host_allowed("evilcorp.example", &l));
        assert!(host_allowed("anything.example", &list(&["*"])));
    }

    #[test]
    fn json_content_types() {
        for ct in ["application/json", "Application/JSON; charset=utf-8", "application/merge-patch+json"] {
            assert!(is_json(ct), "{ct}");
        }
        for ct in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "json", ""] {
            assert!(!is_json(ct), "{ct}");
        }
    }
}
