//! Raw MCP requests for the integration tests: the current revision's per-request envelope
//! (`_meta` and the SEP-2243 headers), posted to `/mcp` of a test server.

use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use super::{split, TestApp};

/// The current protocol revision.
pub const MODERN: &str = "2026-07-28";
/// The previous one (the last with the `initialize` handshake).
pub const LEGACY: &str = "2025-11-25";

/// A request of the current revision: its `_meta` carries the version, client info and capabilities.
pub fn request(id: i64, method: &str, params: Value) -> Value {
    let mut params = if params.is_object() { params } else { json!({}) };
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "mnemo-tests", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// POSTs one JSON-RPC message with the MCP headers it needs (and `X-API-Key` when given).
pub async fn post_with(
    app: &TestApp,
    key: Option<&str>,
    msg: &Value,
    extra: &[(&str, &str)],
) -> (u16, HeaderMap, Value) {
    try_post_with(app, key, msg, extra).await.unwrap()
}

/// As [`post_with`], or the client error when no answer came (e.g. the server closed the
/// connection on an oversized body).
pub async fn try_post_with(
    app: &TestApp,
    key: Option<&str>,
    msg: &Value,
    extra: &[(&str, &str)],
) -> Result<(u16, HeaderMap, Value), reqwest::Error> {
    let mut req = app
        .client
        .post(app.url("/mcp"))
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .body(msg.to_string());
    for (k, v) in mnemo::mcp::bridge::mcp_headers(msg, None) {
        req = req.header(k, v);
    }
    if let Some(k) = key {
        req = req.header("X-API-Key", k);
    }
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    let r = req.send().await?;
    let headers = r.headers().clone();
    let (status, body) = split(r).await;
    Ok((status, headers, body))
}

/// POSTs one JSON-RPC message; (status, body).
pub async fn post(app: &TestApp, key: Option<&str>, msg: &Value) -> (u16, Value) {
    let (s, _, b) = post_with(app, key, msg, &[]).await;
    (s, b)
}

/// The tools the server lists.
pub async fn tools(app: &TestApp, key: Option<&str>) -> Vec<Value> {
    let (s, b) = post(app, key, &request(1, "tools/list", json!({}))).await;
    assert_eq!(s, 200, "{b}");
    b["result"]["tools"].as_array().unwrap_or_else(|| panic!("no tools in {b}")).clone()
}

/// Calls a tool; returns the JSON-RPC result (a tool result, possibly `isError`).
pub async fn call(app: &TestApp, key: Option<&str>, name: &str, args: Value) -> Value {
    let (s, b) = post(app, key, &request(2, "tools/call", json!({"name": name, "arguments": args}))).await;
    assert_eq!(s, 200, "{name}: {b}");
    assert!(b.get("error").is_none(), "{name}: JSON-RPC error {b}");
    b["result"].clone()
}

/// Calls a tool that must succeed; returns its structured content.
pub async fn ok(app: &TestApp, key: Option<&str>, name: &str, args: Value) -> Value {
    let r = call(app, key, name, args).await;
    assert_eq!(r["isError"], false, "{name}: {r}");
    r["structuredContent"].clone()
}

/// Calls a tool that must fail; returns its error message.
pub async fn refused(app: &TestApp, key: Option<&str>, name: &str, args: Value) -> String {
    let r = call(app, key, name, args).await;
    assert_eq!(r["isError"], true, "{name}: {r}");
    r["content"][0]["text"].as_str().unwrap_or_default().to_string()
}
