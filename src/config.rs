//! Command-line and environment configuration. Every flag has a `MNEMO_` variable.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// mnemo: memory for AI agents, Statewave v1 compatible.
#[derive(Debug, Parser)]
#[command(name = "mnemo", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The verbs of the `mnemo` binary.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP server (starts the embedded Postgres when no database URL is set).
    Serve(Box<ServeArgs>),
    /// Apply database migrations and exit.
    Migrate(DbArgs),
    /// Manage the embedded Postgres cluster by hand.
    Pg(PgArgs),
    /// Re-embed every memory and episode whose vector came from another model (resumable).
    Reembed(ReembedArgs),
    /// Write a subject to stdout: `mnemo export --tenant T --subject S [--format statewave] > file`.
    Export(crate::transfer::ExportArgs),
    /// Read a file into one subject, all or nothing: `mnemo import FILE [--tenant T] [--preserve-ids]`.
    Import(Box<crate::transfer::ImportArgs>),
    /// Exit 0 when the server at MNEMO_ADDR answers /healthz (for container healthchecks).
    Healthcheck(HealthcheckArgs),
    /// Print the OpenAPI document (the committed openapi.json is this output).
    Openapi,
    /// Audit tools: `mnemo audit verify --tenant T` walks the tenant's receipt chain.
    Audit(AuditArgs),
    /// Subject administration: `mnemo subjects delete <id> --tenant T` erases a subject.
    Subjects(SubjectsArgs),
    /// API keys: `mnemo keys create --tenant T [--admin | --operator]`, `revoke <key_id>`, `list`.
    Keys(KeysArgs),
    /// MCP over stdio: forwards JSON-RPC lines to a server's /mcp, with the key in MNEMO_API_KEY
    /// (for clients that can only launch a command).
    Mcp(McpBridgeArgs),
}

/// `mnemo mcp`.
#[derive(Debug, Clone, Args)]
pub struct McpBridgeArgs {
    /// The server's MCP endpoint.
    #[arg(long, env = "MNEMO_MCP_URL", default_value = "http://127.0.0.1:8100/mcp")]
    pub url: String,
    /// Tenant sent as X-Tenant-ID (only operator keys may choose another than their own).
    #[arg(long, env = "MNEMO_TENANT")]
    pub tenant: Option<String>,
    /// Seconds one request may take.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub timeout_secs: u64,
}

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

/// `mnemo keys ...`.
#[derive(Debug, Args)]
pub struct KeysArgs {
    #[command(subcommand)]
    pub action: KeysAction,
}

/// Key verbs.
#[derive(Debug, Subcommand)]
pub enum KeysAction {
    /// Create a key for a tenant and print its secret (shown once; only its sha256 is stored).
    Create(KeyCreateArgs),
    /// Revoke a key of the tenant by its id.
    Revoke(KeyRevokeArgs),
    /// List the tenant's keys (ids and labels, never secrets).
    List(KeyListArgs),
}

/// `mnemo keys create`.
#[derive(Debug, Args)]
pub struct KeyCreateArgs {
    /// Tenant the key belongs to (a tenant key may act only on it).
    #[arg(long, default_value = "default")]
    pub tenant: String,
    /// An admin key also reaches /admin and the console, for its own tenant only.
    #[arg(long, conflicts_with = "operator")]
    pub admin: bool,
    /// An operator key is an admin of every tenant: X-Tenant-ID may name any tenant, and it
    /// reaches the tenant list, the webhook outbox and import/export across tenants.
    #[arg(long)]
    pub operator: bool,
    /// A note to recognise the key by.
    #[arg(long)]
    pub label: Option<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `mnemo keys revoke`.
#[derive(Debug, Args)]
pub struct KeyRevokeArgs {
    /// The key id (the part after `mnemo_` in the secret, as `keys list` shows).
    pub key_id: String,
    /// Tenant the key belongs to.
    #[arg(long, default_value = "default")]
    pub tenant: String,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `mnemo keys list`.
#[derive(Debug, Args)]
pub struct KeyListArgs {
    /// Tenant whose keys to list.
    #[arg(long, default_value = "default")]
    pub tenant: String,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `mnemo subjects ...`.
#[derive(Debug, Args)]
pub struct SubjectsArgs {
    #[command(subcommand)]
    pub action: SubjectsAction,
}

/// Subject verbs.
#[derive(Debug, Subcommand)]
pub enum SubjectsAction {
    /// Erase every row of a subject (as DELETE /v1/subjects/{id}) and print the certificate.
    Delete(SubjectDeleteArgs),
}

/// `mnemo subjects delete`.
#[derive(Debug, Args)]
pub struct SubjectDeleteArgs {
    /// The subject to erase.
    pub subject_id: String,
    /// Tenant the subject belongs to.
    #[arg(long, default_value = "default")]
    pub tenant: String,
    /// Receipt-signing keys (JSON {key_id: base64}); the certificate is signed when one applies.
    #[arg(long, env = "MNEMO_RECEIPT_SIGNING_KEYS", hide_env_values = true)]
    pub receipt_signing_keys: Option<String>,
    /// With MNEMO_WEBHOOK_URL set, `subject.deleted` is queued for the servers to deliver.
    #[command(flatten)]
    pub webhooks: WebhookArgs,
    #[command(flatten)]
    pub db: DbArgs,
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

/// `mnemo audit verify`.
#[derive(Debug, Clone, Args)]
pub struct AuditArgs {
    /// What to audit.
    #[arg(value_enum)]
    pub action: AuditAction,
    /// Tenant whose receipt chain to verify.
    #[arg(long, default_value = "default")]
    pub tenant: String,
    #[command(flatten)]
    pub db: DbArgs,
}

/// Audit actions.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum AuditAction {
    /// Verify the tenant's receipt hash chain; exit 1 at the first break.
    Verify,
}

/// `mnemo healthcheck`.
#[derive(Debug, Clone, Args)]
pub struct HealthcheckArgs {
    /// Address the server listens on (0.0.0.0 is probed on loopback).
    #[arg(long, env = "MNEMO_ADDR", default_value = "127.0.0.1:8100")]
    pub addr: SocketAddr,
    /// Seconds to wait for the answer.
    #[arg(long, default_value_t = 3)]
    pub timeout_secs: u64,
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

/// `mnemo reembed`.
#[derive(Debug, Clone, Args)]
pub struct ReembedArgs {
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub embed: EmbedArgs,
    /// Rows per embedding batch.
    #[arg(long, default_value_t = 256)]
    pub batch: i64,
}

/// `mnemo pg start|stop|status`.
#[derive(Debug, Clone, Args)]
pub struct PgArgs {
    /// What to do with the embedded cluster.
    #[arg(value_enum)]
    pub action: PgAction,
    /// Directory holding the embedded cluster.
    #[arg(long, env = "MNEMO_DATA_DIR", default_value = "./.mnemo")]
    pub data_dir: PathBuf,
}

/// Actions on the embedded cluster.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum PgAction {
    /// Start it (or reuse a running one) and print its socket dir.
    Start,
    /// Stop it if it runs.
    Stop,
    /// Print whether it runs.
    Status,
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
    #[arg(long, env = "MNEMO_DB_MAX_CONNECTIONS", default_value_t = default_db_connections())]
    pub db_max_connections: u32,
}

/// The pool's default size: twice the cores, at least 4. Postgres on a machine of this size runs
/// no more statements at once, and sqlx hands idle connections out first in, first out, so a
/// pool grown by a burst cycles through all of its connections afterwards, each preparing every
/// statement on its first use (bench/README, "the pool's rotation").
fn default_db_connections() -> u32 {
    let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
    u32::try_from(cores.saturating_mul(2)).unwrap_or(u32::MAX).max(4)
}

/// Log line format.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
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
    #[arg(long, env = "MNEMO_MAX_BODY_BYTES", default_value_t = 1024 * 1024)]
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

/// A comma-separated setting as its trimmed, non-empty items.
pub fn comma_list(value: &str) -> Vec<String> {
    value.split(',').map(str::trim).filter(|o| !o.is_empty()).map(String::from).collect()
}

/// Shortest operator key (`MNEMO_API_KEY`) accepted: it is compared as given, so its length is
/// its strength.
pub const MIN_OPERATOR_KEY_CHARS: usize = 32;

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
    /// becomes open again (migration 0050), whatever happens to its keys.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn serve_args(addr: &str, key: Option<&str>, open: bool) -> ServeArgs {
        ServeArgs {
            db: DbArgs { database_url: None, data_dir: "./x".into(), db_max_connections: 5 },
            app_database_url: None,
            read_database_url: None,
            read_max_lag_ms: 250,
            addr: addr.parse().unwrap(),
            api_key: key.map(str::to_string),
            allow_open: open,
            allow_query_api_key: false,
            auth_failures_per_minute: 20,
            metrics_addr: None,
            log_format: LogFormat::Text,
            max_body_bytes: 1024,
            request_timeout_secs: 30,
            shutdown_drain_secs: 0,
            shutdown_grace_secs: 30,
            header_read_timeout_secs: 30,
            max_connections: 1024,
            console_session_minutes: 480,
            embed: EmbedArgs {
                embedder: EmbedderKind::Hash,
                model_dir: None,
                hash_dims: 384,
                openai_url: String::new(),
                openai_model: String::new(),
                openai_api_key: None,
                openai_dims: None,
            },
            compiler: compiler_args(),
            receipt_signing_keys: None,
            compile_batch_size: 500,
            compile_time_budget_ms: 10_000,
            ingest_writers: 1,
            lexemes: crate::lexemes::LexemesAt::Server,
            context_cache_mb: 64,
            context_index_mb: 256,
            compile_job_retention_hours: 168,
            compile_job_stale_secs: 60,
            region: None,
            rate_limit_rpm: 0,
            cors_origins: String::new(),
            allowed_hosts: String::new(),
            webhooks: webhook_args(None, None),
            mcp: McpServeArgs {
                mcp_toolset: crate::mcp::Toolset::Mnemo,
                mcp_allow_forget: false,
                mcp_allowed_origins: " https://a.example , ,http://b.example:* ".into(),
            },
        }
    }

    #[test]
    fn the_pool_defaults_to_twice_the_cores_and_takes_an_explicit_size() {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            db: DbArgs,
        }
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        let want = u32::try_from(cores * 2).unwrap().max(4);
        // The variable is not set in the test environment (the default applies) unless a
        // developer set it; then the flag below still wins.
        if std::env::var_os("MNEMO_DB_MAX_CONNECTIONS").is_none() {
            assert_eq!(Wrap::parse_from(["x"]).db.db_max_connections, want);
        }
        assert!(default_db_connections() >= 4 && default_db_connections().is_multiple_of(2));
        assert_eq!(Wrap::parse_from(["x", "--db-max-connections", "12"]).db.db_max_connections, 12);
    }

    fn compiler_args() -> crate::compile::llm::args::CompilerArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            c: crate::compile::llm::args::CompilerArgs,
        }
        Wrap::parse_from(["x"]).c
    }

    #[test]
    fn compiler_defaults_to_heuristic_and_llm_needs_an_endpoint() {
        let mut c = compiler_args();
        assert!(matches!(c.to_compiler().unwrap(), crate::compile::llm::Compiler::Heuristic));
        c.compiler = crate::compile::llm::args::CompilerKind::Llm;
        assert!(c.to_compiler().is_err());
        c.llm_url = "http://127.0.0.1:9".into();
        c.llm_model = "m".into();
        assert!(matches!(c.to_compiler().unwrap(), crate::compile::llm::Compiler::Llm(_)));
    }

    #[test]
    fn mcp_origins_are_trimmed_and_blank_ones_dropped() {
        let cfg = serve_args("127.0.0.1:1", None, false).mcp.to_config();
        assert_eq!(cfg.allowed_origins, vec!["https://a.example".to_string(), "http://b.example:*".to_string()]);
        assert!(!cfg.allow_forget);
    }

    fn webhook_args(url: Option<&str>, events: Option<&str>) -> WebhookArgs {
        WebhookArgs {
            webhook_url: url.map(str::to_string),
            webhook_events: events.map(str::to_string),
            webhook_secret: None,
            webhook_timeout_secs: 5,
            webhook_max_attempts: 5,
            webhook_backoff_ms: 30_000,
            webhook_retention_hours: 168,
        }
    }

    #[test]
    fn webhook_settings_fail_on_unknown_events_and_bad_urls() {
        let off = webhook_args(None, None).to_config().unwrap();
        assert!(off.url.is_none());
        let on = webhook_args(Some("https://hooks.example/in"), Some("subject.deleted")).to_config().unwrap();
        assert_eq!(on.events, vec![crate::services::webhooks::WebhookEvent::SubjectDeleted]);
        let err = webhook_args(Some("https://hooks.example/in"), Some("subject.deleted,memory.created"))
            .to_config()
            .unwrap_err();
        assert!(err.starts_with("MNEMO_WEBHOOK_EVENTS: unknown webhook event \"memory.created\""), "{err}");
        assert!(webhook_args(Some("hooks.example"), None).to_config().is_err());
        // The allowlist is checked even while webhooks are off, so a typo never waits for the URL.
        assert!(webhook_args(None, Some("nope")).to_config().is_err());
    }

    #[test]
    fn operator_keys_need_32_characters() {
        assert!(serve_args("127.0.0.1:1", None, false).check_api_key().is_ok());
        assert!(serve_args("127.0.0.1:1", Some(""), false).check_api_key().is_ok());
        let err = serve_args("127.0.0.1:1", Some("change-me"), false).check_api_key().unwrap_err();
        assert!(err.contains("9 characters") && err.contains("at least 32"), "{err}");
        assert!(serve_args("127.0.0.1:1", Some(&"k".repeat(32)), false).check_api_key().is_ok());
    }

    #[test]
    fn open_public_listener_needs_key_or_opt_in() {
        assert!(serve_args("127.0.0.1:8100", None, false).check_exposure(false).is_ok());
        assert!(serve_args("0.0.0.0:8100", None, false).check_exposure(false).is_err());
        assert!(serve_args("0.0.0.0:8100", None, false).check_exposure(true).is_ok());
        assert!(serve_args("0.0.0.0:8100", Some("k"), false).check_exposure(false).is_ok());
        assert!(serve_args("0.0.0.0:8100", None, true).check_exposure(false).is_ok());
    }
}
