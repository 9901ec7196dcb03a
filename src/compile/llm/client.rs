//! One chat-completions call to an OpenAI-compatible endpoint (blocking `ureq`, run off the
//! async threads), asking for schema-shaped JSON, and falling back to plain JSON once a server
//! says it has no `json_schema` response format.
//!
//! Errors name the endpoint and the HTTP status only: a response body may echo the prompt (the
//! user's words), and nothing here ever carries the API key.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use super::config::LlmConfig;

/// What went wrong with a call, by what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// Timeout, connection failure, 429 or 5xx: retry later.
    Transient(String),
    /// The server refused the request for good (401, 404, …): retrying cannot help.
    Rejected(String),
    /// The reply was not a chat completion with text content.
    Malformed(String),
}

impl CallError {
    /// Short label for metrics and metadata.
    pub fn reason(&self) -> &'static str {
        match self {
            CallError::Transient(_) => "unavailable",
            CallError::Rejected(_) => "rejected",
            CallError::Malformed(_) => "malformed",
        }
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Transient(m) | CallError::Rejected(m) | CallError::Malformed(m) => f.write_str(m),
        }
    }
}

/// The text of an answer and what it cost.
#[derive(Debug, Clone)]
pub struct Reply {
    pub content: String,
    pub tokens_in: u64,
    pub tokens_out: u64,
}

/// A client for one configured endpoint.
pub struct ChatClient {
    endpoint: String,
    /// The endpoint as errors name it: no user info, no query.
    shown: String,
    model: String,
    api_key: Option<String>,
    agent: ureq::Agent,
    /// Set once the server rejected `response_format: json_schema`.
    plain_json: AtomicBool,
}

impl std::fmt::Debug for ChatClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatClient").field("endpoint", &self.shown).field("model", &self.model).finish()
    }
}

/// The full chat-completions URL for a configured base `url`.
pub fn endpoint_url(url: &str) -> String {
    let base = url.trim().trim_end_matches('/');
    if base.ends_with("/chat/completions") {
        base.to_string()
    } else if base.ends_with("/v1") {
        format!("{base}/chat/completions")
    } else {
        format!("{base}/v1/chat/completions")
    }
}

/// `scheme://host[:port]/path` of a URL: credentials in the user-info part or the query never
/// reach an error message.
fn shown_endpoint(url: &str) -> String {
    let no_query = url.split(['?', '#']).next().unwrap_or_default();
    match no_query.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            format!("{scheme}://{host}/{path}")
        }
        None => no_query.to_string(),
    }
}

impl ChatClient {
    /// A client with the configured timeout; no request is made.
    pub fn new(config: &LlmConfig) -> anyhow::Result<Self> {
        let agent = ureq::AgentBuilder::new().timeout(config.timeout).build();
        Ok(ChatClient {
            endpoint: endpoint_url(&config.url),
            shown: shown_endpoint(&endpoint_url(&config.url)),
            model: config.model.clone(),
            api_key: config.api_key.clone().filter(|k| !k.trim().is_empty()),
            agent,
            plain_json: AtomicBool::new(false),
        })
    }

    /// Sends `messages` on the blocking pool and returns the answer's text and token counts.
    pub async fn complete(self: &Arc<Self>, messages: Vec<Value>, schema: Value) -> Result<Reply, CallError> {
        let me = self.clone();
        tokio::task::spawn_blocking(move || me.complete_blocking(&messages, &schema))
            .await
            .unwrap_or_else(|_| Err(CallError::Transient("the model call was cancelled".into())))
    }

    fn complete_blocking(&self, messages: &[Value], schema: &Value) -> Result<Reply, CallError> {
        if !self.plain_json.load(Ordering::Relaxed) {
            match self.send(messages, Some(schema)) {
                Err(SendError::SchemaRefused) => self.plain_json.store(true, Ordering::Relaxed),
                other => return other.map_err(SendError::into_call),
            }
        }
        self.send(messages, None).map_err(SendError::into_call)
    }

    fn send(&self, messages: &[Value], schema: Option<&Value>) -> Result<Reply, SendError> {
        let mut body = json!({"model": self.model, "messages": messages, "temperature": 0});
        if let Some(schema) = schema {
            body["response_format"] = json!({"type": "json_schema",
                "json_schema": {"name": "mnemo_memories", "strict": true, "schema": schema}});
        }
        let mut req = self.agent.post(&self.endpoint).set("Content-Type", "application/json");
        if let Some(key) = &self.api_key {
            req = req.set("Authorization", &format!("Bearer {key}"));
        }
        let resp = match req.send_json(&body) {
            Ok(resp) => resp,
            Err(ureq::Error::Status(code, resp)) => {
                let text = resp.into_string().unwrap_or_default();
                let what = format!("chat request to {} failed with HTTP {code}", self.shown);
                return Err(match code {
                    400 | 422 if schema.is_some() && mentions_schema(&text) => SendError::SchemaRefused,
                    408 | 429 | 500..=599 => SendError::Call(CallError::Transient(what)),
                    _ => SendError::Call(CallError::Rejected(what)),
                });
            }
            Err(ureq::Error::Transport(t)) => {
                // The transport message names the URL and the cause, never headers.
                let cause = t.kind().to_string();
                return Err(SendError::Call(CallError::Transient(format!(
                    "chat request to {} failed: {cause}",
                    self.shown
                ))));
            }
        };
        let parsed: Value = resp.into_json().map_err(|_| {
            SendError::Call(CallError::Malformed(format!("chat response from {} is not JSON", self.shown)))
        })?;
        let content = parsed["choices"][0]["message"]["content"].as_str().ok_or_else(|| {
            SendError::Call(CallError::Malformed(format!("chat response from {} has no message content", self.shown)))
        })?;
        let usage = |k: &str| parsed["usage"][k].as_u64();
        let tokens_in = usage("prompt_tokens").unwrap_or_else(|| estimate(messages));
        let tokens_out = usage("completion_tokens").unwrap_or_else(|| crate::bundle::tokens::count(content) as u64);
        Ok(Reply { content: content.to_string(), tokens_in, tokens_out })
    }
}

enum SendError {
    SchemaRefused,
    Call(CallError),
}

impl SendError {
    fn into_call(self) -> CallError {
        match self {
            SendError::SchemaRefused => CallError::Rejected("the server refused the JSON format".into()),
            SendError::Call(e) => e,
        }
    }
}

fn mentions_schema(body: &str) -> bool {
    let b = body.to_lowercase();
    b.contains("response_format") || b.contains("json_schema") || b.contains("schema")
}

/// cl100k count of the prompt, for servers that report no usage.
fn estimate(messages: &[Value]) -> u64 {
    messages.iter().filter_map(|m| m["content"].as_str()).map(|c| crate::bundle::tokens::count(c) as u64 + 4).sum()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is the test failure
mod tests {
    use super::*;

    #[test]
    fn endpoint_urls_accept_every_base_form() {
        assert_eq!(endpoint_url("http://h:1"), "http://h:1/v1/chat/completions");
        assert_eq!(endpoint_url("http://h:1/v1/"), "http://h:1/v1/chat/completions");
        assert_eq!(endpoint_url("http://h/v1/chat/completions"), "http://h/v1/chat/completions");
    }

    #[test]
    fn shown_endpoints_drop_credentials() {
        assert_eq!(shown_endpoint("https://u:pw@h:8/v1/chat/completions?key=k"), "https://h:8/v1/chat/completions");
        assert_eq!(shown_endpoint("http://h/v1/chat/completions"), "http://h/v1/chat/completions");
    }

    #[tokio::test]
    async fn errors_never_carry_the_key_or_user_info() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener); // nothing listens there now: the connection is refused
        let mut cfg = LlmConfig::new(format!("http://admin:pw-secret@127.0.0.1:{port}/v1?key=q-secret"), "m");
        cfg.api_key = Some("sk-secret-123".into());
        let c = Arc::new(ChatClient::new(&cfg).unwrap());
        let err = c.complete(vec![json!({"role": "user", "content": "hi"})], json!({})).await.unwrap_err();
        assert!(matches!(err, CallError::Transient(_)), "{err:?}");
        let text = format!("{err} {err:?}");
        assert!(!text.contains("secret"), "{text}");
    }

    #[test]
    fn debug_never_shows_the_key() {
        let mut cfg = LlmConfig::new("http://h", "m");
        cfg.api_key = Some("sk-secret-123".into());
        let c = ChatClient::new(&cfg).unwrap();
        assert!(!format!("{c:?}").contains("sk-secret"));
        assert!(!format!("{cfg:?}").contains("sk-secret"));
    }
}
