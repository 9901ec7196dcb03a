//! DNS-rebinding protection for `/mcp`: a request that carries an `Origin` must come from a
//! loopback origin or one listed in `MNEMO_MCP_ALLOWED_ORIGINS`. Requests without `Origin`
//! (agents, CLIs, server-side clients) pass: browsers always send it on cross-origin requests.

use axum::extract::{Request, State};
use axum::http::StatusCode;
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
    let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
        let (h, after) = v6.split_once(']')?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?.to_string()),
        };
        (format!("[{h}]"), port)
    } else {
        match rest.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p.to_string())),
            None => (rest.to_string(), None),
        }
    };
    Some((scheme.to_ascii_lowercase(), host.to_ascii_lowercase(), port))
}

fn is_loopback_host(host: &str) -> bool {
    matches!(host, "localhost" | "127.0.0.1" | "[::1]") || host.ends_with(".localhost")
}

/// Whether a browser origin may call `/mcp`: loopback http(s) origins on any port, `*`, or a
/// listed origin (exact, or `scheme://host:*` for any port).
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

/// Refuses `/mcp` requests whose `Origin` is not allowed (403, before any tool runs).
pub async fn check(State(st): State<AppState>, req: Request, next: Next) -> Response {
    if let Some(origin) = req.headers().get(axum::http::header::ORIGIN) {
        let ok = origin.to_str().is_ok_and(|o| allowed(o, &st.config.mcp.allowed_origins));
        if !ok {
            let shown = origin.to_str().unwrap_or("(not ASCII)").chars().take(200).collect::<String>();
            let message = format!("Origin {shown} may not call /mcp; add it to MNEMO_MCP_ALLOWED_ORIGINS");
            return ApiError::client(StatusCode::FORBIDDEN, "origin_not_allowed", message).into_response();
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
}
