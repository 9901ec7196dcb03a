//! `mnemo serve` settings of the compiler (`MNEMO_COMPILER`, `MNEMO_LLM_*`).

use std::time::Duration;

use clap::{Args, ValueEnum};

use super::{Compiler, LlmCompiler, LlmConfig};

/// Which compiler `serve` uses.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum CompilerKind {
    /// Rules only, no model (default).
    Heuristic,
    /// An OpenAI-compatible chat model proposes memories; the server checks every one.
    Llm,
}

/// Compiler settings.
#[derive(Debug, Clone, Args)]
pub struct CompilerArgs {
    /// Compiler: heuristic (default) or llm (needs MNEMO_LLM_URL and MNEMO_LLM_MODEL).
    #[arg(long, env = "MNEMO_COMPILER", value_enum, default_value_t = CompilerKind::Heuristic)]
    pub compiler: CompilerKind,
    /// Base URL of the OpenAI-compatible chat endpoint (`…/v1/chat/completions`, `…/v1` or the host).
    #[arg(long, env = "MNEMO_LLM_URL", default_value = "")]
    pub llm_url: String,
    /// Chat model name sent to the endpoint and recorded on each memory (`metadata.model`).
    #[arg(long, env = "MNEMO_LLM_MODEL", default_value = "")]
    pub llm_model: String,
    /// Bearer token for the endpoint (never logged).
    #[arg(long, env = "MNEMO_LLM_API_KEY", hide_env_values = true)]
    pub llm_api_key: Option<String>,
    /// Seconds one request may take.
    #[arg(long, env = "MNEMO_LLM_TIMEOUT_SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=600))]
    pub llm_timeout_secs: u64,
    /// Requests in flight at once per compile.
    #[arg(long, env = "MNEMO_LLM_MAX_PARALLEL", default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub llm_max_parallel: u64,
    /// Retries of a failed request (backoff doubles from 500 ms) before its batch is split.
    #[arg(long, env = "MNEMO_LLM_RETRIES", default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=10))]
    pub llm_retries: u32,
    /// Characters of one episode the model sees (the rest is cut).
    #[arg(long, env = "MNEMO_LLM_EPISODE_CHARS", default_value_t = 4000, value_parser = clap::value_parser!(u64).range(100..=100_000))]
    pub llm_episode_chars: u64,
    /// Characters of episode text in one request.
    #[arg(long, env = "MNEMO_LLM_BATCH_CHARS", default_value_t = 12_000, value_parser = clap::value_parser!(u64).range(100..=1_000_000))]
    pub llm_batch_chars: u64,
}

impl CompilerArgs {
    /// The compiler these settings describe; `llm` without a URL or model is an error.
    pub fn to_compiler(&self) -> anyhow::Result<Compiler> {
        if self.compiler == CompilerKind::Heuristic {
            return Ok(Compiler::Heuristic);
        }
        let mut cfg = LlmConfig::new(self.llm_url.clone(), self.llm_model.clone());
        cfg.api_key = self.llm_api_key.clone();
        cfg.timeout = Duration::from_secs(self.llm_timeout_secs);
        cfg.max_parallel = self.llm_max_parallel as usize;
        cfg.retries = self.llm_retries;
        cfg.episode_chars = self.llm_episode_chars as usize;
        cfg.batch_chars = self.llm_batch_chars as usize;
        Ok(Compiler::Llm(std::sync::Arc::new(LlmCompiler::new(cfg)?)))
    }
}
