//! `mnemo serve`: every setting of a running server (each a flag and a `MNEMO_` variable), and
//! the database and embedder settings other commands share.

pub use crate::telemetry::LogFormat;
use clap::{Args, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;

/// Settings of the `/mcp` endpoint.
#[derive(Debug, Clone, Args)]
pub struct McpServeArgs {
    /// Tool set at /mcp: mnemo (remember, recall, search_memories, timeline) or statewave
    /// (statewave_ingest_episode, statewave_search_memories, statewave_get_context,
    /// statewave_get_timeline, statewave_compile_subject).
    #[arg(long, env = "MNEMO_MCP_TOOLSET", value_enum, default_value_t = crate::mcp::Toolset::Mnemo)]
    pub mcp_toolset: crate::mcp::Toolset,
    /// Add the `forget` MCP tool (tombstones one memory of the caller's tenant) and the `erase`
    /// tool (erases chosen episodes and memories, with a certificate).
    #[arg(long, env = "MNEMO_MCP_ALLOW_FORGET", default_value_t = false, value_parser = clap::builder::BoolishValueParser::new())]
    pub mcp_allow_forget: bool,
    /// Comma-separated browser origins that may call /mcp besides the server's own, loopback ones
    /// and MNEMO_CORS_ORIGINS (`*` for any, `https://host:*` for any port); requests without an
    /// Origin header are not affected.
    #[arg(long, env = "MNEMO_MCP_ALLOWED_ORIGINS", default_value = "")]
    pub mcp_allowed_origins: String,
}

impl McpServeArgs {
    /// The settings these flags describe.
    pub fn to_config(&self) -> crate::mcp::McpConfig {
        crate::mcp::McpConfig {
            toolset: self.mcp_toolset,
            allow_forget: self.mcp_allow_forget,
            allowed_origins: self
                .mcp_allowed_origins
                .split(',')
                .map(str::trim)
                .filter(|o| !o.is_empty())
                .map(String::from)
                .collect(),
        }
    }
}

/// Webhook settings (`serve`, and `subjects delete`, which queues `subject.deleted`).
#[derive(Debug, Clone, Args)]
pub struct WebhookArgs {
    /// URL that receives events as signed JSON POSTs; unset = webhooks off (nothing is queued).
    #[arg(long, env = "MNEMO_WEBHOOK_URL", hide_env_values = true)]
    pub webhook_url: Option<String>,
    /// Comma-separated events to send (default all): episode.created, episodes.batch_created,
    /// items.erased, memories.compiled, subject.deleted, subject.health_degraded,
    /// subject.health_improved.
    #[arg(long, env = "MNEMO_WEBHOOK_EVENTS")]
    pub webhook_events: Option<String>,
    /// HMAC-SHA256 secret for the X-Mnemo-Signature header; unset = unsigned.
    #[arg(long, env = "MNEMO_WEBHOOK_SECRET", hide_env_values = true)]
    pub webhook_secret: Option<String>,
    /// Seconds one delivery may take.
    #[arg(long, env = "MNEMO_WEBHOOK_TIMEOUT_SECS", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=300))]
    pub webhook_timeout_secs: u64,
    /// Attempts before an event is dead-lettered.
    #[arg(long, env = "MNEMO_WEBHOOK_MAX_ATTEMPTS", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub webhook_max_attempts: u32,
    /// First retry delay in milliseconds; doubles per attempt (with jitter), at most an hour.
    #[arg(long, env = "MNEMO_WEBHOOK_BACKOFF_MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub webhook_backoff_ms: u64,
    /// Delivered and dead-lettered events are deleted after this many hours.
    #[arg(long, env = "MNEMO_WEBHOOK_RETENTION_HOURS", default_value_t = 168, value_parser = clap::value_parser!(u64).range(1..=87_600))]
    pub webhook_retention_hours: u64,
}

impl WebhookArgs {
    /// The settings these flags describe; an unknown event name or a malformed URL is an error.
    pub fn to_config(&self) -> Result<crate::services::webhooks::WebhookConfig, String> {
        use crate::services::webhooks::{self as hooks, Secret, WebhookConfig};
        let url = self.webhook_url.clone().filter(|u| !u.trim().is_empty());
        if let Some(u) = &url {
            hooks::check_url(u)?;
        }
        let events = hooks::parse_events(self.webhook_events.as_deref().unwrap_or(""))
            .map_err(|e| format!("MNEMO_WEBHOOK_EVENTS: {e}"))?;
        Ok(WebhookConfig {
            url,
            events,
            secret: Secret::new(self.webhook_secret.clone().unwrap_or_default()),
            timeout: std::time::Duration::from_secs(self.webhook_timeout_secs),
            max_attempts: i32::try_from(self.webhook_max_attempts).unwrap_or(5),
            backoff_base: std::time::Duration::from_millis(self.webhook_backoff_ms),
            retention: std::time::Duration::from_secs(self.webhook_retention_hours * 3600),
            ..WebhookConfig::default()
        })
    }
}

/// Which embedder to use.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum EmbedderKind {
    /// all-MiniLM-L6-v2, run locally (needs the model files from scripts/bootstrap).
    Minilm,
    /// Deterministic feature hashing: fast, not semantic (tests, offline).
    Hash,
    /// Any OpenAI-compatible /v1/embeddings endpoint.
    Openai,
}

/// Embedding settings.
#[derive(Debug, Clone, Args)]
pub struct EmbedArgs {
    /// Embedder: minilm (default), hash, openai.
    #[arg(long, env = "MNEMO_EMBEDDER", value_enum, default_value_t = EmbedderKind::Minilm)]
    pub embedder: EmbedderKind,
    /// Directory with model.safetensors, tokenizer.json, config.json (default: DATA_DIR/models/all-MiniLM-L6-v2).
    #[arg(long, env = "MNEMO_MODEL_DIR")]
    pub model_dir: Option<PathBuf>,
    /// Vector length of the hash embedder.
    #[arg(long, env = "MNEMO_HASH_DIMS", default_value_t = 384)]
    pub hash_dims: usize,
    /// Base URL of the OpenAI-compatible endpoint.
    #[arg(long, env = "MNEMO_OPENAI_URL", default_value = "https://api.openai.com")]
    pub openai_url: String,
    /// Embedding model name sent to the endpoint.
    #[arg(long, env = "MNEMO_OPENAI_MODEL", default_value = "text-embedding-3-small")]
    pub openai_model: String,
    /// Bearer token for the endpoint.
    #[arg(long, env = "MNEMO_OPENAI_API_KEY", hide_env_values = true)]
    pub openai_api_key: Option<String>,
    /// Expected vector length (learned from the first response when unset).
    #[arg(long, env = "MNEMO_OPENAI_DIMS")]
    pub openai_dims: Option<usize>,
}

impl EmbedArgs {
    /// The embedder configuration these settings describe.
    pub fn to_config(&self, data_dir: &std::path::Path) -> crate::embed::EmbedderConfig {
        use crate::embed::EmbedderConfig;
        match self.embedder {
            EmbedderKind::Hash => EmbedderConfig::Hash { dims: self.hash_dims },
            EmbedderKind::Minilm => EmbedderConfig::MiniLm {
                model_dir: self.model_dir.clone().unwrap_or_else(|| data_dir.join("models/all-MiniLM-L6-v2")),
            },
            EmbedderKind::Openai => EmbedderConfig::OpenAi {
                url: self.openai_url.clone(),
                model: self.openai_model.clone(),
                api_key: self.openai_api_key.clone(),
                dims: self.openai_dims,
            },
        }
    }
}

/// Where the data lives.
#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// Postgres URL (with pgvector). Unset: run an embedded Postgres under the data dir.
    #[arg(long, env = "MNEMO_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Directory for mnemo's own files: the embedded cluster and model files.
    #[arg(long, env = "MNEMO_DATA_DIR", default_value = "./.mnemo")]
    pub data_dir: PathBuf,
    /// Maximum connections in the pool (default: twice this machine's cores, at least 4).
    // The number itself stays out of the help: it differs per machine (docs/configuration.md is the help).
    #[arg(long, env = "MNEMO_DB_MAX_CONNECTIONS", default_value_t = default_db_connections(), hide_default_value = true)]
    pub db_max_connections: u32,
}

/// The pool's default size: twice the cores, at least 4. Postgres on a machine of this size runs
/// no more statements at once, and sqlx hands idle connections out first in, first out, so a
/// pool grown by a burst cycles through all of its connections afterwards, each preparing every
/// statement on its first use (bench/README, "the pool's rotation").
pub(crate) fn default_db_connections() -> u32 {
    let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
    u32::try_from(cores.saturating_mul(2)).unwrap_or(u32::MAX).max(4)
}

/// Settings of `mnemo serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Optional separate login for the server's queries (a role that is, or is a member of,
    /// mnemo_app); unset: the database URL's role switches to mnemo_app after connecting.
    #[arg(long, env = "MNEMO_APP_DATABASE_URL", hide_env_values = true)]
    pub app_database_url: Option<String>,
    /// Optional streaming replica for reads (timeline, search, context without a receipt),
    /// connecting like MNEMO_APP_DATABASE_URL; a read goes there once it has replayed the
    /// primary's WAL up to where it was when the read began (read-your-writes), else to the primary.
    #[arg(long, env = "MNEMO_READ_DATABASE_URL", hide_env_values = true)]
    pub read_database_url: Option<String>,
    /// Longest a read waits for the replica to catch up before it goes to the primary, in ms.
    #[arg(long, env = "MNEMO_READ_MAX_LAG_MS", default_value_t = 250, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub read_max_lag_ms: u64,
    /// Address to listen on.
    #[arg(long, env = "MNEMO_ADDR", default_value = "127.0.0.1:8100")]
    pub addr: SocketAddr,
    /// Operator API key; when set, every non-probe request needs it in `X-API-Key` (or as
    /// `Authorization: Bearer <key>`).
    #[arg(long, env = "MNEMO_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Accept the key in an `api_key` query parameter too (off: URLs with keys end up in proxy
    /// logs and browser history; the Statewave SDK sends `X-API-Key`).
    #[arg(long, env = "MNEMO_ALLOW_QUERY_API_KEY", default_value_t = false, value_parser = clap::builder::BoolishValueParser::new())]
    pub allow_query_api_key: bool,
    /// Failed API-key attempts a minute per client address and per key prefix before further
    /// attempts get 429 for the rest of the minute (0: off).
    #[arg(long, env = "MNEMO_AUTH_FAILURES_PER_MINUTE", default_value_t = 20, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub auth_failures_per_minute: u32,
    /// Allow listening on a non-loopback address without an API key.
    #[arg(long, env = "MNEMO_ALLOW_OPEN", default_value_t = false, value_parser = clap::builder::BoolishValueParser::new())]
    pub allow_open: bool,
    /// Address for Prometheus `/metrics` (a separate listener); unset = no metrics listener.
    #[arg(long, env = "MNEMO_METRICS_ADDR")]
    pub metrics_addr: Option<SocketAddr>,
    /// Log format.
    #[arg(long, env = "MNEMO_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Largest accepted request body, in bytes.
    #[arg(long, env = "MNEMO_MAX_BODY_BYTES", default_value_t = crate::model::limits::DEFAULT_MAX_BODY_BYTES)]
    pub max_body_bytes: usize,
    /// Per-request timeout, in seconds.
    #[arg(long, env = "MNEMO_REQUEST_TIMEOUT_SECS", default_value_t = 30)]
    pub request_timeout_secs: u64,
    /// On shutdown, seconds `/readyz` answers 503 while requests are still accepted (so load
    /// balancers stop routing here) before the listener closes and in-flight requests drain.
    #[arg(long, env = "MNEMO_SHUTDOWN_DRAIN_SECS", default_value_t = 0)]
    pub shutdown_drain_secs: u64,
    /// After the listener closes on shutdown, seconds requests in flight may take to finish;
    /// connections still open then (a client holding a request half-sent) are closed.
    #[arg(long, env = "MNEMO_SHUTDOWN_GRACE_SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(0..=3600))]
    pub shutdown_grace_secs: u64,
    /// Seconds a connection may take to send a request's headers, counted from its opening or
    /// from its previous response: also the idle timeout of keep-alive connections.
    #[arg(long, env = "MNEMO_HEADER_READ_TIMEOUT_SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub header_read_timeout_secs: u64,
    /// Most client connections open at once; at the cap new ones wait to be accepted.
    #[arg(long, env = "MNEMO_MAX_CONNECTIONS", default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_connections: u64,
    /// Minutes an admin console session (/admin/ui) lasts after sign-in.
    #[arg(long, env = "MNEMO_CONSOLE_SESSION_MINUTES", default_value_t = 480, value_parser = clap::value_parser!(u64).range(1..=43_200))]
    pub console_session_minutes: u64,
    #[command(flatten)]
    pub embed: EmbedArgs,
    #[command(flatten)]
    pub compiler: crate::compile::llm::args::CompilerArgs,
    /// Receipt signing keys as JSON `{key_id: base64}` (each >= 32 bytes); tenants pick one with
    /// `receipt_signing_key_id`.
    #[arg(long, env = "MNEMO_RECEIPT_SIGNING_KEYS", hide_env_values = true)]
    pub receipt_signing_keys: Option<String>,
    /// Most episodes one compile call consumes.
    #[arg(long, env = "MNEMO_COMPILE_BATCH_SIZE", default_value_t = 500, value_parser = clap::value_parser!(i64).range(1..=10000))]
    pub compile_batch_size: i64,
    /// Milliseconds of work one synchronous compile call does (in batches, each committed)
    /// before it answers `has_more: true`; at most half of MNEMO_REQUEST_TIMEOUT_SECS is used.
    /// Async jobs work in slices of the same length and report progress after each.
    #[arg(long, env = "MNEMO_COMPILE_TIME_BUDGET_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub compile_time_budget_ms: u64,
    /// Statements of single-episode ingest in flight per tenant; requests that arrive while they
    /// run share the next statement and its commit (group commit).
    #[arg(long, env = "MNEMO_INGEST_WRITERS", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub ingest_writers: u16,
    /// Where episodes' lexemes (their full-text search vector) are computed: `server` (where it
    /// is sure of them, checked against the database once; Postgres computes the rest) or
    /// `postgres` (all of them, in the insert statement). The stored lexemes are the same.
    #[arg(long, env = "MNEMO_LEXEMES", value_enum, default_value_t = crate::lexemes::LexemesAt::Server)]
    pub lexemes: crate::lexemes::LexemesAt,
    /// MiB of small subjects' rows each server keeps between context calls (0: none kept). A
    /// call checks its copy against the subject's fingerprint in its own statement.
    #[arg(long, env = "MNEMO_CONTEXT_CACHE_MB", default_value_t = 64, value_parser = clap::value_parser!(u64).range(0..=65_536))]
    pub context_cache_mb: u64,
    /// MiB of large subjects' lexical indexes each server keeps (0: none kept; Postgres ranks
    /// every lexical lane). A call's statement uses the lanes ranked on one only when it is of
    /// the subject's state and the task's lexemes.
    #[arg(long, env = "MNEMO_CONTEXT_INDEX_MB", default_value_t = 256, value_parser = clap::value_parser!(u64).range(0..=65_536))]
    pub context_index_mb: u64,
    /// Finished compile jobs are deleted after this many hours.
    #[arg(long, env = "MNEMO_COMPILE_JOB_RETENTION_HOURS", default_value_t = 168)]
    pub compile_job_retention_hours: i64,
    /// A compile job whose worker sent no heartbeat for this many seconds is taken over.
    #[arg(long, env = "MNEMO_COMPILE_JOB_STALE_SECS", default_value_t = 60)]
    pub compile_job_stale_secs: i64,
    /// This server's region; tenants whose config pins another region get 403.
    #[arg(long, env = "MNEMO_REGION")]
    pub region: Option<String>,
    /// Requests per minute per API key and per tenant (token bucket shared through Postgres);
    /// 0 = off. A tenant's config `rate_limit_rpm` overrides it for that tenant.
    #[arg(long, env = "MNEMO_RATE_LIMIT_RPM", default_value_t = 0)]
    pub rate_limit_rpm: u32,
    /// Comma-separated origins allowed by CORS (`*` for any); empty = CORS off. Browser requests
    /// from other origins (besides the server's own and loopback ones) are refused.
    #[arg(long, env = "MNEMO_CORS_ORIGINS", default_value = "")]
    pub cors_origins: String,
    /// Comma-separated host names this server answers to besides loopback ones (`*.example.com`
    /// for subdomains, `*` for any), any port. Unset: the Host header is checked only while no
    /// key is configured (DNS-rebinding protection of open mode); set: always.
    #[arg(long, env = "MNEMO_ALLOWED_HOSTS", default_value = "")]
    pub allowed_hosts: String,
    #[command(flatten)]
    pub webhooks: WebhookArgs,
    #[command(flatten)]
    pub mcp: McpServeArgs,
}

impl ServeArgs {
    /// Refuses an operator key shorter than [`MIN_OPERATOR_KEY_CHARS`].
    pub fn check_api_key(&self) -> Result<(), String> {
        match self.api_key.as_deref().filter(|k| !k.is_empty()) {
            Some(k) if k.chars().count() < MIN_OPERATOR_KEY_CHARS => Err(format!(
                "MNEMO_API_KEY is {} characters long; it must have at least {MIN_OPERATOR_KEY_CHARS} \
                 (generate one with `openssl rand -base64 32`)",
                k.chars().count()
            )),
            _ => Ok(()),
        }
    }

    /// The listener's connection limits these settings describe.
    pub fn connection_limits(&self) -> crate::http::conn::ConnLimits {
        crate::http::conn::ConnLimits {
            header_read_timeout: std::time::Duration::from_secs(self.header_read_timeout_secs),
            max_connections: usize::try_from(self.max_connections).unwrap_or(usize::MAX),
            shutdown_grace: std::time::Duration::from_secs(self.shutdown_grace_secs),
        }
    }

    /// Refuses an open server on a non-loopback address unless explicitly allowed
    /// (`stored_keys`: the database has ever stored an API key, so requests need one). Checked
    /// at start only, and it need not be checked again: a database that has held a key never
    /// becomes open again, whatever happens to its keys.
    pub fn check_exposure(&self, stored_keys: bool) -> Result<(), String> {
        let has_key = stored_keys || self.api_key.as_deref().is_some_and(|k| !k.is_empty());
        if !self.addr.ip().is_loopback() && !has_key && !self.allow_open {
            return Err(format!(
                "refusing to listen on {} without an API key: set MNEMO_API_KEY, create one with `mnemo keys create`, \
                 or set MNEMO_ALLOW_OPEN=1 to run open",
                self.addr
            ));
        }
        Ok(())
    }
}

/// A comma-separated setting as its trimmed, non-empty items.
pub fn comma_list(value: &str) -> Vec<String> {
    value.split(',').map(str::trim).filter(|o| !o.is_empty()).map(String::from).collect()
}

/// Shortest operator key (`MNEMO_API_KEY`) accepted: it is compared as given, so its length is
/// its strength.
pub const MIN_OPERATOR_KEY_CHARS: usize = 32;
