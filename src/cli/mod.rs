//! The command line: every command, flag and `MNEMO_` variable, and what they configure.

pub mod eval;
pub mod healthcheck;
pub mod serve;
pub mod transfer;

pub use serve::{
    comma_list, DbArgs, EmbedArgs, EmbedderKind, McpServeArgs, ServeArgs, WebhookArgs, MIN_OPERATOR_KEY_CHARS,
};

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use crate::telemetry::LogFormat;

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
    Export(crate::cli::transfer::ExportArgs),
    /// Read a file into one subject, all or nothing: `mnemo import FILE [--tenant T] [--preserve-ids]`.
    Import(Box<crate::cli::transfer::ImportArgs>),
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
    /// Measure recall on your own conversations: `mnemo eval FILE [--url URL] [--html report.html]`
    /// (mnemo JSONL, LoCoMo or BEAM files).
    Eval(Box<crate::cli::eval::EvalArgs>),
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

#[cfg(test)]
mod tests {
    use super::serve::default_db_connections;
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
