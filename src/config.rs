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
    Serve(ServeArgs),
    /// Apply database migrations and exit.
    Migrate(DbArgs),
    /// Manage the embedded Postgres cluster by hand.
    Pg(PgArgs),
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
    /// Maximum connections in the pool.
    #[arg(long, env = "MNEMO_DB_MAX_CONNECTIONS", default_value_t = 20)]
    pub db_max_connections: u32,
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
    /// Address to listen on.
    #[arg(long, env = "MNEMO_ADDR", default_value = "127.0.0.1:8100")]
    pub addr: SocketAddr,
    /// Operator API key; when set, every non-probe request needs it in `X-API-Key`.
    #[arg(long, env = "MNEMO_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Allow listening on a non-loopback address without an API key.
    #[arg(long, env = "MNEMO_ALLOW_OPEN", default_value_t = false, value_parser = clap::builder::BoolishValueParser::new())]
    pub allow_open: bool,
    /// Log format.
    #[arg(long, env = "MNEMO_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Largest accepted request body, in bytes.
    #[arg(long, env = "MNEMO_MAX_BODY_BYTES", default_value_t = 1024 * 1024)]
    pub max_body_bytes: usize,
    /// Per-request timeout, in seconds.
    #[arg(long, env = "MNEMO_REQUEST_TIMEOUT_SECS", default_value_t = 30)]
    pub request_timeout_secs: u64,
}

impl ServeArgs {
    /// Refuses an open server on a non-loopback address unless explicitly allowed.
    pub fn check_exposure(&self) -> Result<(), String> {
        let has_key = self.api_key.as_deref().is_some_and(|k| !k.is_empty());
        if !self.addr.ip().is_loopback() && !has_key && !self.allow_open {
            return Err(format!(
                "refusing to listen on {} without an API key: set MNEMO_API_KEY, or MNEMO_ALLOW_OPEN=1 to run open",
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
            addr: addr.parse().unwrap(),
            api_key: key.map(str::to_string),
            allow_open: open,
            log_format: LogFormat::Text,
            max_body_bytes: 1024,
            request_timeout_secs: 30,
        }
    }

    #[test]
    fn open_public_listener_needs_key_or_opt_in() {
        assert!(serve_args("127.0.0.1:8100", None, false).check_exposure().is_ok());
        assert!(serve_args("0.0.0.0:8100", None, false).check_exposure().is_err());
        assert!(serve_args("0.0.0.0:8100", Some("k"), false).check_exposure().is_ok());
        assert!(serve_args("0.0.0.0:8100", None, true).check_exposure().is_ok());
    }
}
