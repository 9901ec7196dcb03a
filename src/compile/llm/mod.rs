//! The optional LLM compiler (`MNEMO_COMPILER=llm`): a model proposes memories, the server decides.
//!
//! The model sees each episode only after the pasted-text and instruction guards ran on it
//! (`prompt`), answers JSON matching a schema (`schema`), and every item it returns is checked
//! again (`validate`): guards on its output, support in the episode's own words, claim keys
//! through the registry (cardinality from the registry, never from the model), a model's
//! `updates` only as a hint to the same linker the heuristic compiler uses. Calls are bounded
//! (`run`): capped text, batches bounded in characters, a timeout, a few in parallel, retries
//! with backoff; a batch the model cannot answer is split, then compiled by the heuristic
//! compiler. Neither the API key nor the model's raw output is logged or stored.

pub mod args;
mod client;
pub mod prompt;
mod run;
pub mod schema;
pub mod validate;

use std::sync::Arc;
use std::time::Duration;

pub use run::{LlmBatch, Provenance};

/// Which compiler turns episodes into memories.
#[derive(Debug, Clone, Default)]
pub enum Compiler {
    /// The rule-based compiler (default; no model).
    #[default]
    Heuristic,
    /// A chat model behind an OpenAI-compatible endpoint, checked by the server.
    Llm(Arc<LlmCompiler>),
}

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

/// The LLM compiler: its settings and HTTP client.
#[derive(Debug)]
pub struct LlmCompiler {
    config: LlmConfig,
    client: Arc<client::ChatClient>,
}

impl LlmCompiler {
    /// Checks the settings and builds the client (no request is made).
    pub fn new(config: LlmConfig) -> anyhow::Result<Self> {
        if config.url.trim().is_empty() {
            anyhow::bail!("MNEMO_LLM_URL is empty (required with MNEMO_COMPILER=llm)");
        }
        if config.model.trim().is_empty() {
            anyhow::bail!("MNEMO_LLM_MODEL is empty (required with MNEMO_COMPILER=llm)");
        }
        if config.max_parallel == 0 || config.batch_episodes == 0 || config.episode_chars < 100 {
            anyhow::bail!("LLM compiler limits must be positive (episode text at least 100 characters)");
        }
        let client = client::ChatClient::new(&config)?;
        Ok(LlmCompiler { client: Arc::new(client), config })
    }

    /// The model name recorded on memories.
    pub fn model(&self) -> &str {
        &self.config.model
    }

    /// The settings.
    pub fn config(&self) -> &LlmConfig {
        &self.config
    }
}
