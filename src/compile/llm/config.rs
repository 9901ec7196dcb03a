//! Settings of the LLM compiler: endpoint, model, key and the bounds of its calls.

use std::time::Duration;

/// Settings of the LLM compiler.
#[derive(Clone)]
pub struct LlmConfig {
    /// Base URL (`…/v1/chat/completions`, `…/v1` or a bare host all work).
    pub url: String,
    /// Model name sent with each request and recorded on each memory.
    pub model: String,
    /// Bearer token; never logged, never in an error.
    pub api_key: Option<String>,
    /// Whole-request timeout.
    pub timeout: Duration,
    /// Requests in flight at once, per compile.
    pub max_parallel: usize,
    /// Retries of one batch before it is split.
    pub retries: u32,
    /// First retry delay; doubles per retry, with jitter.
    pub backoff: Duration,
    /// Characters of one episode's text the model sees (the rest is cut).
    pub episode_chars: usize,
    /// Characters of episode text in one request.
    pub batch_chars: usize,
    /// Episodes in one request.
    pub batch_episodes: usize,
}

impl std::fmt::Debug for LlmConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmConfig")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("max_parallel", &self.max_parallel)
            .field("retries", &self.retries)
            .finish_non_exhaustive()
    }
}

impl LlmConfig {
    /// Defaults for everything but the endpoint and the model.
    pub fn new(url: impl Into<String>, model: impl Into<String>) -> Self {
        LlmConfig {
            url: url.into(),
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(60),
            max_parallel: 2,
            retries: 2,
            backoff: Duration::from_millis(500),
            episode_chars: 4000,
            batch_chars: 12_000,
            batch_episodes: 16,
        }
    }
}
