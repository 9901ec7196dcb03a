//! A private Postgres cluster under the data dir, reachable only through a unix socket.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use sha2::{Digest, Sha256};
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection};
use tokio::process::Command;

use super::locate::{find_bindir, service_account, traversable_by_others, INSTALL_HINT};

const PORT: u16 = 5432;
// Unix socket paths are limited to 107 bytes on Linux.
const MAX_SOCKET_PATH: usize = 100;

/// Whether `start` launched the server or found it already running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartOutcome {
    Started,
    Reused,
}

/// An embedded cluster: binaries, directories and the account that owns them.
#[derive(Debug, Clone)]
pub struct Cluster {
    bindir: PathBuf,
    root: PathBuf,
    pgdata: PathBuf,
    socket_dir: PathBuf,
    owner: Option<(u32, u32)>,
    settings: Vec<(String, String)>,
}

/// The embedded cluster's `shared_buffers`: a quarter of the machine's memory, from 128 MB (the
/// Postgres default) to 2 GB. With the default, a 100k-memory subject's rows, vectors and HNSW
/// indexes did not fit, and every context call copied pages in from the OS cache.
fn shared_buffers_mb(meminfo: Option<&str>) -> u64 {
    let total_kb = meminfo
        .and_then(|m| m.lines().find(|l| l.starts_with("MemTotal:")))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .unwrap_or(0);
    (total_kb / 1024 / 4).clamp(128, 2048)
}

fn short_hash(p: &Path) -> String {
    let h = Sha256::digest(p.to_string_lossy().as_bytes());
    hex::encode(&h[..6])
}

impl Cluster {
    /// Plans a cluster under `data_dir/postgres`; nothing is created yet.
    pub fn new(data_dir: &Path) -> anyhow::Result<Self> {
        let bindir = find_bindir()?;
        let owner = service_account()?;
        std::fs::create_dir_all(data_dir).with_context(|| format!("creating {}", data_dir.display()))?;
        let data_dir = data_dir.canonicalize().context("resolving the data dir")?;
        let mut root = data_dir.join("postgres");
        if owner.is_some() && !traversable_by_others(&data_dir) {
            // The postgres account cannot reach a dir under e.g. /root; keep its files elsewhere.
            root = PathBuf::from(format!("/var/lib/mnemo/cluster-{}", short_hash(&data_dir)));
            tracing::warn!(path = %root.display(), "data dir not reachable by the postgres account; cluster placed elsewhere");
        }
        let mut socket_dir = root.join("sock");
        if socket_dir.join(format!(".s.PGSQL.{PORT}")).as_os_str().len() > MAX_SOCKET_PATH {
            socket_dir = PathBuf::from(format!("/tmp/mnemo-sock-{}", short_hash(&root)));
        }
        Ok(Cluster { bindir, pgdata: root.join("data"), root, socket_dir, owner, settings: Vec::new() })
    }

    /// Adds a server setting written to the cluster's config before each start.
    pub fn with_setting(mut self, name: &str, value: &str) -> Self {
        self.settings.push((name.to_string(), value.to_string()));
        self
    }

    /// The directory holding the server's unix socket.
    pub fn socket_dir(&self) -> &Path {
        &self.socket_dir
    }

    fn command(&self, bin: &str) -> Command {
        let mut cmd = Command::new(self.bindir.join(bin));
        cmd.current_dir(&self.root).env("LC_ALL", "C").kill_on_drop(false);
        if let Some((uid, gid)) = self.owner {
            cmd.uid(uid).gid(gid);
        }
        cmd
    }

    async fn run(&self, bin: &str, args: &[&str]) -> anyhow::Result<std::process::Output> {
        let out = self.command(bin).args(args).output().await.with_context(|| format!("running {bin}"))?;
        Ok(out)
    }

    fn own_dir(&self, dir: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        if let Some((uid, gid)) = self.owner {
            nix::unistd::chown(dir, Some(nix::unistd::Uid::from_raw(uid)), Some(nix::unistd::Gid::from_raw(gid)))
                .with_context(|| format!("chown {}", dir.display()))?;
        }
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        Ok(())
    }

    fn write_config(&self) -> anyhow::Result<()> {
        let sock = self.socket_dir.to_string_lossy().replace('\'', "''");
        let mut conf = format!(
            "# Written by mnemo before each start.\nlisten_addresses = ''\nunix_socket_directories = '{sock}'\nport = {PORT}\nmax_connections = 300\nshared_buffers = '{}MB'\n",
            shared_buffers_mb(std::fs::read_to_string("/proc/meminfo").ok().as_deref())
        );
        for (k, v) in &self.settings {
            conf.push_str(&format!("{k} = '{}'\n", v.replace('\'', "''")));
        }
        let path = self.pgdata.join("mnemo.conf");
        std::fs::write(&path, conf)?;
        if let Some((uid, gid)) = self.owner {
            nix::unistd::chown(&path, Some(nix::unistd::Uid::from_raw(uid)), Some(nix::unistd::Gid::from_raw(gid)))?;
        }
        Ok(())
    }

    async fn init_if_needed(&self) -> anyhow::Result<()> {
        if self.pgdata.join("PG_VERSION").exists() {
            return Ok(());
        }
        self.own_dir(&self.root)?;
        let pgdata = self.pgdata.to_string_lossy().to_string();
        let out = self
            .run(
                "initdb",
                &["-D", &pgdata, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-instructions"],
            )
            .await?;
        if !out.status.success() {
            bail!("initdb failed: {}", String::from_utf8_lossy(&out.stderr).trim());
        }
        let conf = self.pgdata.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf)?;
        text.push_str("\ninclude_if_exists = 'mnemo.conf'\n");
        std::fs::write(&conf, text)?;
        Ok(())
    }

    /// True when a postmaster runs on this cluster's data dir.
    pub async fn is_running(&self) -> anyhow::Result<bool> {
        let pgdata = self.pgdata.to_string_lossy().to_string();
        let out = self.run("pg_ctl", &["status", "-D", &pgdata]).await?;
        Ok(out.status.success())
    }

    async fn answers(&self) -> bool {
        match self.connect_options("postgres").connect().await {
            Ok(c) => c.close().await.is_ok(),
            Err(_) => false,
        }
    }

    /// Initialises the cluster on first use, then starts it or reuses a running one (after a crash).
    pub async fn start(&self) -> anyhow::Result<StartOutcome> {
        std::fs::create_dir_all(&self.root).ok();
        let lock_path = self.root.with_extension("lock");
        let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path)?;
        // Several processes (tests, a crashed predecessor) may race to start the same cluster.
        let lock =
            tokio::task::spawn_blocking(move || fs4::fs_std::FileExt::lock_exclusive(&lock).map(|_| lock)).await??;
        let outcome = self.start_locked().await;
        drop(lock);
        outcome
    }

    async fn start_locked(&self) -> anyhow::Result<StartOutcome> {
        self.init_if_needed().await?;
        self.own_dir(&self.socket_dir)?;
        self.write_config()?;
        let pgdata = self.pgdata.to_string_lossy().to_string();
        if self.is_running().await? {
            if self.answers().await {
                return Ok(StartOutcome::Reused);
            }
            // Running but not on our socket (settings changed): restart it with the current config.
            let _ = self.run("pg_ctl", &["stop", "-D", &pgdata, "-m", "fast", "-w"]).await?;
        }
        let log = self.root.join("postgres.log").to_string_lossy().to_string();
        let out = self.run("pg_ctl", &["start", "-D", &pgdata, "-l", &log, "-w", "-t", "60"]).await?;
        if !out.status.success() {
            let tail = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = tail.lines().rev().take(5).collect();
            bail!(
                "postgres did not start: {} {}",
                String::from_utf8_lossy(&out.stderr).trim(),
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            );
        }
        for _ in 0..100 {
            if self.answers().await {
                return Ok(StartOutcome::Started);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("postgres started but does not accept connections on {}", self.socket_dir.display())
    }

    /// Stops the server (fast shutdown: sessions are cut, data is flushed).
    pub async fn stop(&self) -> anyhow::Result<()> {
        let pgdata = self.pgdata.to_string_lossy().to_string();
        if self.is_running().await? {
            let out = self.run("pg_ctl", &["stop", "-D", &pgdata, "-m", "fast", "-w", "-t", "60"]).await?;
            if !out.status.success() {
                bail!("pg_ctl stop failed: {}", String::from_utf8_lossy(&out.stderr).trim());
            }
        }
        Ok(())
    }

    /// Connection options for a database of this cluster (superuser over the private socket).
    pub fn connect_options(&self, database: &str) -> PgConnectOptions {
        PgConnectOptions::new()
            .socket(&self.socket_dir)
            .port(PORT)
            .username("postgres")
            .database(database)
            .application_name("mnemo")
    }

    /// Creates `name` if missing and checks that pgvector can be enabled in it.
    pub async fn ensure_database(&self, name: &str) -> anyhow::Result<()> {
        let mut conn = self.connect_options("postgres").connect().await?;
        let exists: bool =
            sqlx::query_scalar!(r#"SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) AS "exists!""#, name)
                .fetch_one(&mut conn)
                .await?;
        if !exists {
            // DDL names the database in its text: dynamic SQL.
            let quoted = name.replace('"', "\"\"");
            sqlx::query(&format!("CREATE DATABASE \"{quoted}\"")).execute(&mut conn).await?;
        }
        let vector: bool = sqlx::query_scalar!(
            r#"SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') AS "available!""#
        )
        .fetch_one(&mut conn)
        .await?;
        conn.close().await?;
        if !vector {
            bail!("the pgvector extension is not installed for this PostgreSQL; {INSTALL_HINT}");
        }
        Ok(())
    }
}

#[cfg(test)]
mod buffer_tests {
    use super::shared_buffers_mb;

    #[test]
    fn a_quarter_of_memory_between_128_mb_and_2_gb() {
        assert_eq!(shared_buffers_mb(Some("MemTotal:       24684140 kB\nMemFree: 1 kB")), 2048);
        assert_eq!(shared_buffers_mb(Some("MemTotal:        2097152 kB")), 512);
        assert_eq!(shared_buffers_mb(Some("MemTotal:         262144 kB")), 128);
        assert_eq!(shared_buffers_mb(None), 128);
        assert_eq!(shared_buffers_mb(Some("garbage")), 128);
    }
}
