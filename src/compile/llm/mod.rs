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
mod config;
pub mod prompt;
pub mod run;
pub mod schema;
pub mod validate;

use std::sync::Arc;

pub use config::LlmConfig;

/// Which compiler turns episodes into memories.
#[derive(Debug, Clone, Default)]
pub enum Compiler {
    /// The rule-based compiler (default; no model).
    #[default]
    Heuristic,
    /// A chat model behind an OpenAI-compatible endpoint, checked by the server.
    Llm(Arc<LlmCompiler>),
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
