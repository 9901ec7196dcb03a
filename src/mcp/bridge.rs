//! `mnemo mcp`: a stdio bridge for MCP clients that only launch local commands. Each JSON-RPC
//! line read from stdin is POSTed to the server's `/mcp` with the API key; each answer (JSON,
//! or the events of an SSE stream) is written to stdout as one line. Logs go to stderr only.

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::Mutex;
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};

/// Where and how the bridge connects.
#[derive(Debug, Clone)]
pub struct BridgeConfig {
    /// The server's MCP endpoint, e.g. `http://127.0.0.1:8100/mcp`.
    pub url: String,
    /// Sent as `X-API-Key` when set.
    pub api_key: Option<String>,
    /// Sent as `X-Tenant-ID` when set (admin keys).
    pub tenant: Option<String>,
    /// Longest one request may take.
    pub timeout: Duration,
}

/// JSON-RPC error code for "the server could not be reached or refused the HTTP request".
const TRANSPORT_ERROR: i64 = -32000;
const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// `Mcp-Name` comes from one parameter for these methods (SEP-2243).
fn name_param(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// A header value as SEP-2243 encodes it: plain visible ASCII as is, anything else base64-wrapped.
fn header_value(s: &str) -> String {
    let edge_space = s.starts_with([' ', '\t']) || s.ends_with([' ', '\t']);
    let visible = s.chars().all(|c| (' '..='~').contains(&c));
    let looks_wrapped = s.starts_with("=?base64?") && s.ends_with("?=");
    if visible && !edge_space && !looks_wrapped {
        s.to_string()
    } else {
        format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode(s))
    }
}

/// The MCP headers for one message: protocol version (from the message's `_meta`, else the
/// version `initialize` negotiated), `Mcp-Method` and `Mcp-Name`.
pub fn mcp_headers(msg: &Value, negotiated: Option<&str>) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let method = msg.get("method").and_then(Value::as_str);
    let params = msg.get("params");
    let from_meta =
        params.and_then(|p| p.get("_meta")).and_then(|m| m.get(META_PROTOCOL_VERSION)).and_then(Value::as_str);
    if let Some(v) = from_meta.or(negotiated.filter(|_| method != Some("initialize"))) {
        out.push(("MCP-Protocol-Version", v.to_string()));
    }
    if let Some(m) = method {
        out.push(("Mcp-Method", header_value(m)));
        if let Some(name) = name_param(m).and_then(|k| params?.get(k)?.as_str()) {
            out.push(("Mcp-Name", header_value(name)));
        }
    }
    out
}

/// A JSON-RPC error answer to the request `id`.
fn rpc_error(id: &Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The `data:` payloads of an SSE stream, one per event.
fn sse_events(reader: impl Read) -> Vec<String> {
    let mut events = Vec::new();
    let mut data = String::new();
    for line in BufReader::new(reader).lines().map_while(Result::ok) {
        if line.is_empty() {
            if !data.is_empty() {
                events.push(std::mem::take(&mut data));
            }
        } else if let Some(d) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(d.strip_prefix(' ').unwrap_or(d));
        }
    }
    if !data.is_empty() {
        events.push(data);
    }
    events
}

/// Why an HTTP refusal happened, from the mnemo error envelope (or the bare body).
fn refusal_message(status: u16, body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let message = parsed
        .as_ref()
        .and_then(|v| v.get("error")?.get("message")?.as_str().map(str::to_string))
        .unwrap_or_else(|| body.chars().take(300).collect());
    format!("mnemo answered HTTP {status}: {message}")
}

/// Forwards one message; returns the lines to write (JSON-RPC messages, compact).
fn forward(agent: &ureq::Agent, cfg: &BridgeConfig, msg: &Value, negotiated: &Mutex<Option<String>>) -> Vec<String> {
    let id = msg.get("id").cloned();
    let version = negotiated.lock().ok().and_then(|g| g.clone());
    let mut req = agent
        .post(&cfg.url)
        .set("Content-Type", "application/json")
        .set("Accept", "application/json, text/event-stream");
    if let Some(key) = &cfg.api_key {
        req = req.set("X-API-Key", key);
    }
    if let Some(t) = &cfg.tenant {
        req = req.set("X-Tenant-ID", t);
    }
    for (k, v) in mcp_headers(msg, version.as_deref()) {
        req = req.set(k, &v);
    }
    let resp = match req.send_string(&msg.to_string()) {
        Ok(r) => r,
        Err(ureq::Error::Status(status, r)) => {
            let body = r.into_string().unwrap_or_default();
            // A JSON-RPC error body (e.g. a header mismatch) goes back as the server wrote it.
            if let Ok(v) = serde_json::from_str::<Value>(&body) {
                if v.get("jsonrpc").is_some() {
                    return vec![v.to_string()];
                }
            }
            let message = refusal_message(status, &body);
            tracing::warn!(status, "{message}");
            return id.map(|id| vec![rpc_error(&id, TRANSPORT_ERROR, message).to_string()]).unwrap_or_default();
        }
        Err(e) => {
            let message = format!("mnemo at {} is unreachable: {e}", cfg.url);
            tracing::warn!("{message}");
            return id.map(|id| vec![rpc_error(&id, TRANSPORT_ERROR, message).to_string()]).unwrap_or_default();
        }
    };
    let is_sse = resp.content_type().eq_ignore_ascii_case("text/event-stream");
    let bodies = if is_sse { sse_events(resp.into_reader()) } else { vec![resp.into_string().unwrap_or_default()] };
    let mut lines = Vec::new();
    for body in bodies.iter().filter(|b| !b.trim().is_empty()) {
        match serde_json::from_str::<Value>(body) {
            Ok(v) => {
                if msg.get("method").and_then(Value::as_str) == Some("initialize") {
                    if let (Some(v), Ok(mut g)) = (
                        v.get("result").and_then(|r| r.get("protocolVersion")).and_then(Value::as_str),
                        negotiated.lock(),
                    ) {
                        *g = Some(v.to_string());
                    }
                }
                lines.push(v.to_string());
            }
            Err(_) => tracing::warn!("mnemo sent a body that is not JSON; dropped"),
        }
    }
    lines
}

/// Runs the bridge until `input` ends; messages are forwarded concurrently, answers written
/// whole, one per line.
pub fn run(cfg: &BridgeConfig, input: impl BufRead, output: impl Write + Send) -> anyhow::Result<()> {
    let agent = ureq::AgentBuilder::new().timeout(cfg.timeout).build();
    let negotiated = Mutex::new(None::<String>);
    let output = Mutex::new(output);
    let write_lines = |lines: Vec<String>| {
        if let Ok(mut out) = output.lock() {
            for l in lines {
                let _ = writeln!(out, "{l}");
            }
            let _ = out.flush();
        }
    };
    std::thread::scope(|scope| {
        for line in input.lines() {
            let line = match line {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!(error = %e, "reading stdin failed; stopping");
                    break;
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            let msg: Value = match serde_json::from_str(&line) {
                Ok(v) => v,
                Err(_) => {
                    write_lines(vec![rpc_error(&Value::Null, -32700, "Parse error".into()).to_string()]);
                    continue;
                }
            };
            // `initialize` is answered before anything else is sent, so later messages see the
            // negotiated version.
            if msg.get("method").and_then(Value::as_str) == Some("initialize") {
                write_lines(forward(&agent, cfg, &msg, &negotiated));
                continue;
            }
            let (agent, negotiated, write_lines) = (&agent, &negotiated, &write_lines);
            scope.spawn(move || write_lines(forward(agent, cfg, &msg, negotiated)));
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_follow_the_message() {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "recall", "_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}});
        let h = mcp_headers(&call, Some("2025-11-25"));
        assert!(h.contains(&("MCP-Protocol-Version", "2026-07-28".into())));
        assert!(h.contains(&("Mcp-Method", "tools/call".into())));
        assert!(h.contains(&("Mcp-Name", "recall".into())));
        let init =
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}});
        assert!(!mcp_headers(&init, Some("2025-11-25")).iter().any(|(k, _)| *k == "MCP-Protocol-Version"));
        let listed = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        assert!(mcp_headers(&listed, Some("2025-11-25")).contains(&("MCP-Protocol-Version", "2025-11-25".into())));
    }

    #[test]
    fn header_values_that_cannot_travel_are_wrapped() {
        assert_eq!(header_value("recall"), "recall");
        assert_eq!(header_value("café"), "=?base64?Y2Fmw6k=?=");
        assert_eq!(header_value(" x"), "=?base64?IHg=?=");
    }

    #[test]
    fn sse_payloads_are_split_per_event() {
        let stream = "event: message\ndata: {\"a\":1}\n\n: comment\ndata: {\"b\":\ndata: 2}\n\n";
        assert_eq!(sse_events(stream.as_bytes()), vec!["{\"a\":1}".to_string(), "{\"b\":\n2}".to_string()]);
    }

    #[test]
    fn unreachable_server_answers_requests_not_notifications() {
        let cfg = BridgeConfig {
            url: "http://127.0.0.1:9/mcp".into(),
            api_key: None,
            tenant: None,
            timeout: Duration::from_secs(2),
        };
        let input = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}\nnot json\n\
                     {\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
        let mut out = Vec::new();
        run(&cfg, input.as_bytes(), &mut out).unwrap_or_default();
        let lines: Vec<Value> =
            String::from_utf8_lossy(&out).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines.iter().any(|l| l["id"] == 7 && l["error"]["code"] == TRANSPORT_ERROR));
        assert!(lines.iter().any(|l| l["id"].is_null() && l["error"]["code"] == -32700));
    }
}
