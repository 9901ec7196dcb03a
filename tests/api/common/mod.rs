//! Test harness: a real mnemo server on port 0 against a real Postgres with pgvector.
//!
//! Postgres is the embedded cluster under `target/tmp/mnemo-test` (shared by all test
//! processes, started once, reused) or the server at `MNEMO_TEST_DATABASE_URL`. Every
//! test gets a fresh database.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::str::FromStr;
use std::sync::{Arc, Mutex};

use mnemo::pg::Cluster;
use mnemo::{db, AppState, RuntimeConfig};
use serde_json::Value;
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, PgPool};
use tokio::sync::oneshot;

pub mod llm_stub;
pub mod mcp;

/// A running server and its private database.
pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub pool: PgPool,
    /// The server's own pool (runs as mnemo_app).
    pub app_pool: PgPool,
    pub db_options: PgConnectOptions,
    /// The server's single-episode write queues (to see what is waiting).
    pub group_commit: Arc<mnemo::services::group_commit::GroupCommit>,
    /// What the server keeps of subjects between context calls (to see its lexical indexes).
    pub subjects: Arc<mnemo::services::context::SubjectCache>,
    /// Base URL of the separate `/metrics` listener.
    pub metrics_base: String,
    shutdown: Option<oneshot::Sender<()>>,
    /// The database, dropped with the last server on it.
    db: Arc<TestDb>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// Server error events of every test in this process (JSON lines, `fields.error` and
/// `fields.request_id`), for tests that report the logged cause of a failure.
pub static SERVER_LOG: Mutex<Vec<u8>> = Mutex::new(Vec::new());

struct LogSink;

impl std::io::Write for LogSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        SERVER_LOG.lock().unwrap_or_else(std::sync::PoisonError::into_inner).extend_from_slice(buf);
        // Also in the test's own output, shown when it fails.
        eprint!("{}", String::from_utf8_lossy(buf));
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs the process's log subscriber once: server errors, as JSON, into [`SERVER_LOG`].
pub fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::new("mnemo=error"))
        .with_writer(|| LogSink)
        .try_init();
}

/// A test's own database: dropped (`WITH (FORCE)`, closing whatever is still connected) when
/// this guard is, so a run leaves no databases behind.
pub struct TestDb {
    pub options: PgConnectOptions,
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let Some(name) = self.options.get_database().map(str::to_string) else { return };
        let admin = self.options.clone().database("postgres");
        // Drop runs on the test's runtime thread, which cannot block on a future: the statement
        // runs on a thread and runtime of its own.
        let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            rt.block_on(async {
                let mut conn = admin.connect().await?;
                sqlx::query(&sql).execute(&mut conn).await?;
                conn.close().await?;
                anyhow::Ok(())
            })
        })
        .join();
        if let Ok(Err(e)) = dropped {
            eprintln!("test database {name} was not dropped: {e:#}");
        }
    }
}

async fn admin_options() -> PgConnectOptions {
    if let Ok(url) = std::env::var("MNEMO_TEST_DATABASE_URL") {
        return PgConnectOptions::from_str(&url).expect("MNEMO_TEST_DATABASE_URL");
    }
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mnemo-test");
    let cluster = Cluster::new(&dir)
        .expect("embedded postgres (run scripts/bootstrap)")
        .with_setting("fsync", "off")
        .with_setting("synchronous_commit", "off")
        .with_setting("full_page_writes", "off");
    cluster.start().await.expect("starting the test cluster");
    cluster.connect_options("postgres")
}

/// Where the server's own pool connects: `MNEMO_TEST_APP_DATABASE_URL` (e.g. a pgbouncer in
/// transaction mode, logging in as a member of mnemo_app) with the test's database, or the same
/// server as the owner.
pub fn app_options(opts: &PgConnectOptions) -> PgConnectOptions {
    match std::env::var("MNEMO_TEST_APP_DATABASE_URL") {
        Ok(url) if !url.is_empty() => PgConnectOptions::from_str(&url)
            .expect("MNEMO_TEST_APP_DATABASE_URL")
            .database(opts.get_database().expect("test database name")),
        _ => opts.clone(),
    }
}

/// Creates an empty database, dropped when the returned guard is.
pub async fn fresh_database() -> TestDb {
    let admin = admin_options().await;
    let name = format!("mnemo_t_{}", ulid::Ulid::new().to_string().to_lowercase());
    let mut conn = admin.connect().await.expect("connect admin");
    sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut conn).await.expect("create db");
    conn.close().await.ok();
    TestDb { options: admin.database(&name) }
}

/// Starts a server with default settings.
pub async fn spawn() -> TestApp {
    spawn_with(RuntimeConfig::default()).await
}

/// Starts a server with the given settings and the hash embedder.
pub async fn spawn_with(config: RuntimeConfig) -> TestApp {
    let embedder = mnemo::embed::build(&mnemo::embed::EmbedderConfig::Hash { dims: 384 }).unwrap();
    spawn_full(config, embedder).await
}

/// Starts a server with the given settings and embedder.
pub async fn spawn_full(config: RuntimeConfig, embedder: std::sync::Arc<dyn mnemo::embed::Embedder>) -> TestApp {
    spawn_state(config, embedder, mnemo::receipts::signing::SigningKeys::empty()).await
}

/// Starts a server with settings, embedder and receipt-signing keys.
pub async fn spawn_state(
    config: RuntimeConfig,
    embedder: std::sync::Arc<dyn mnemo::embed::Embedder>,
    keys: mnemo::receipts::signing::SigningKeys,
) -> TestApp {
    spawn_on(Arc::new(fresh_database().await), config, embedder, keys).await
}

/// Starts another server process-alike on the same database as `app` (replicas).
pub async fn spawn_replica(app: &TestApp, config: RuntimeConfig) -> TestApp {
    let embedder = mnemo::embed::build(&mnemo::embed::EmbedderConfig::Hash { dims: 384 }).unwrap();
    spawn_on(app.db.clone(), config, embedder, mnemo::receipts::signing::SigningKeys::empty()).await
}

async fn spawn_on(
    db: Arc<TestDb>,
    config: RuntimeConfig,
    embedder: std::sync::Arc<dyn mnemo::embed::Embedder>,
    keys: mnemo::receipts::signing::SigningKeys,
) -> TestApp {
    spawn_bound(db, config, embedder, keys, "127.0.0.1:0").await
}

/// Starts a server listening on `bind` (e.g. `0.0.0.0:0` to be reached on a non-loopback
/// address); `base` still names 127.0.0.1.
pub async fn spawn_bound(
    db: Arc<TestDb>,
    config: RuntimeConfig,
    embedder: std::sync::Arc<dyn mnemo::embed::Embedder>,
    keys: mnemo::receipts::signing::SigningKeys,
    bind: &str,
) -> TestApp {
    init_logging();
    let opts = db.options.clone();
    // `pool` is the owner (superuser) for the tests' own inspection; the server runs as mnemo_app.
    let pool = db::pool::connect(opts.clone(), 4).await.expect("pool");
    db::pool::migrate(&pool).await.expect("migrate");
    let app_pool = db::pool::connect_app(app_options(&opts), 10).await.expect("app pool");
    let state = AppState::new(app_pool.clone(), config, embedder).with_signing_keys(keys);
    let group_commit = state.group_commit.clone();
    let subjects = state.subjects.clone();
    let listener = tokio::net::TcpListener::bind(bind).await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let metrics_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let metrics_base = format!("http://{}", metrics_listener.local_addr().unwrap());
    tokio::spawn(mnemo::serve_metrics(metrics_listener, state.clone(), std::future::pending()));
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(async move {
        mnemo::serve(listener, state, async move {
            let _ = rx.await;
        })
        .await
        .expect("serve");
    });
    TestApp {
        base,
        client: reqwest::Client::new(),
        pool,
        app_pool,
        db_options: opts,
        group_commit,
        subjects,
        metrics_base,
        shutdown: Some(tx),
        db,
    }
}

impl TestApp {
    /// Starts graceful shutdown (what SIGTERM does); the server drains, this handle stays usable.
    pub fn begin_shutdown(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }

    /// Full URL for a path.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// POSTs JSON and returns (status, body).
    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let r = self.client.post(self.url(path)).json(body).send().await.unwrap();
        split(r).await
    }

    /// POSTs JSON as a tenant.
    pub async fn post_as(&self, tenant: &str, path: &str, body: &Value) -> (u16, Value) {
        let r = self.client.post(self.url(path)).header("X-Tenant-ID", tenant).json(body).send().await.unwrap();
        split(r).await
    }

    /// GETs and returns (status, body).
    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = self.client.get(self.url(path)).send().await.unwrap();
        split(r).await
    }

    /// GETs as a tenant.
    pub async fn get_as(&self, tenant: &str, path: &str) -> (u16, Value) {
        let r = self.client.get(self.url(path)).header("X-Tenant-ID", tenant).send().await.unwrap();
        split(r).await
    }

    /// PATCHes JSON and returns (status, body).
    pub async fn patch_as(&self, tenant: &str, path: &str, body: &Value) -> (u16, Value) {
        let r = self.client.patch(self.url(path)).header("X-Tenant-ID", tenant).json(body).send().await.unwrap();
        split(r).await
    }

    /// PUTs JSON as a tenant.
    pub async fn put_as(&self, tenant: &str, path: &str, body: &Value) -> (u16, Value) {
        let r = self.client.put(self.url(path)).header("X-Tenant-ID", tenant).json(body).send().await.unwrap();
        split(r).await
    }

    /// Posts episodes for a subject (one batch) and compiles until `has_more` is false.
    pub async fn ingest_and_compile(&self, subject: &str, texts: &[&str]) -> Vec<Value> {
        let eps: Vec<Value> = texts.iter().map(|t| episode(subject, t)).collect();
        let (s, b) = self.post("/v1/episodes/batch", &serde_json::json!({ "episodes": eps })).await;
        assert_eq!(s, 201, "{b}");
        self.compile_all(subject).await
    }

    /// Compiles a subject until `has_more` is false; returns every memory created.
    pub async fn compile_all(&self, subject: &str) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let (s, b) = self.post("/v1/memories/compile", &serde_json::json!({ "subject_id": subject })).await;
            assert_eq!(s, 200, "{b}");
            out.extend(b["memories"].as_array().unwrap().iter().cloned());
            if b["has_more"] == false {
                return out;
            }
        }
    }

    /// Every memory of a subject (timeline, all statuses).
    pub async fn memories(&self, subject: &str) -> Vec<Value> {
        let (s, b) = self.get(&format!("/v1/timeline?subject_id={subject}&limit=200")).await;
        assert_eq!(s, 200, "{b}");
        b["memories"].as_array().unwrap().clone()
    }

    /// A subject's memories (all statuses) in a tenant, via the timeline.
    pub async fn memories_as(&self, tenant: &str, subject: &str) -> Vec<Value> {
        let (s, b) = self.get_as(tenant, &format!("/v1/timeline?subject_id={subject}&limit=200")).await;
        assert_eq!(s, 200, "{b}");
        b["memories"].as_array().unwrap().clone()
    }

    /// Number of rows in a table.
    pub async fn count(&self, table: &str) -> i64 {
        sqlx::query_scalar(&format!("SELECT count(*) FROM {table}")).fetch_one(&self.pool).await.unwrap()
    }
}

/// Splits a response into status and JSON body (Null when the body is not JSON).
pub async fn split(r: reqwest::Response) -> (u16, Value) {
    let status = r.status().as_u16();
    let text = r.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Holds `subject`'s counter row locked, so the next single ingest of it waits in Postgres and
/// the requests after it queue up behind it (`ingest_writers: 1`).
pub async fn hold_counter(app: &TestApp, subject: &str) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let (status, body) = app.post("/v1/episodes", &episode(subject, "before")).await;
    assert_eq!(status, 201, "{body}");
    let mut tx = app.pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM subject_counters WHERE subject_id = $1 FOR UPDATE")
        .bind(subject)
        .execute(&mut *tx)
        .await
        .unwrap();
    tx
}

/// Sends single-episode POSTs concurrently; returns their join handles in order.
pub fn send_all(app: &TestApp, bodies: Vec<Value>) -> Vec<tokio::task::JoinHandle<(u16, Value)>> {
    bodies
        .into_iter()
        .map(|body| {
            let (client, url) = (app.client.clone(), app.url("/v1/episodes"));
            tokio::spawn(async move { split(client.post(url).json(&body).send().await.unwrap()).await })
        })
        .collect()
}

/// Backends of this test's own database that wait for a lock: the cluster is shared by tests
/// running at once, each in its own database, so a test must not see (or end) another's waits.
pub const WAITING_HERE: &str = "SELECT pid FROM pg_stat_activity WHERE datname = current_database() \
                                AND wait_event_type = 'Lock'";

/// Waits until Postgres has a lock request of this test's database waiting, then until `n`
/// writes are queued.
pub async fn until_queued(app: &TestApp, n: usize) {
    for _ in 0..500 {
        let waiting: i64 =
            sqlx::query_scalar(&format!("SELECT count(*) FROM ({WAITING_HERE}) w")).fetch_one(&app.pool).await.unwrap();
        if waiting > 0 && app.group_commit.queued(mnemo::model::text::DEFAULT_TENANT) == n {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("{n} writes never queued behind the held counter row");
}

/// A minimal valid episode body.
pub fn episode(subject: &str, text: &str) -> Value {
    serde_json::json!({
        "subject_id": subject,
        "source": "chat",
        "type": "message",
        "payload": {"messages": [{"role": "user", "content": text}]},
    })
}

impl TestApp {
    /// A `postgres://` URL for this test's database (for running the CLI against it).
    pub fn database_url(&self) -> String {
        let o = &self.db_options;
        let db = o.get_database().unwrap_or("postgres");
        match o.get_socket() {
            Some(dir) => {
                format!("postgres://{}@localhost:{}/{db}?host={}", o.get_username(), o.get_port(), dir.display())
            }
            None => format!("postgres://{}@{}:{}/{db}", o.get_username(), o.get_host(), o.get_port()),
        }
    }

    /// Rows of (tenant, subject) left in every table that has a `subject_id` column.
    pub async fn subject_rows(&self, tenant: &str, subject: &str) -> Vec<(String, i64)> {
        let mut conn = self.pool.acquire().await.unwrap();
        let tables = mnemo::db::erase::tables_with_subjects(&mut conn).await.unwrap();
        mnemo::db::erase::remaining_in(&mut conn, &tables, tenant, subject).await.unwrap()
    }
}

/// The compatibility venv's Python (`target/compat-venv`, made by `scripts/test`), or None with
/// a SKIP line naming what it would have run; a missing venv fails under `MNEMO_REQUIRE_COMPAT`.
pub fn venv_python(installs: &str) -> Option<std::path::PathBuf> {
    let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/compat-venv/bin/python");
    if p.exists() {
        return Some(p);
    }
    assert!(
        std::env::var("MNEMO_REQUIRE_COMPAT").is_err(),
        "target/compat-venv is missing but MNEMO_REQUIRE_COMPAT is set"
    );
    eprintln!("SKIP: target/compat-venv not found; run scripts/test to install {installs}");
    None
}

/// Writes a tenant's config row directly (tests that need a config without the admin API).
pub async fn set_config(app: &TestApp, tenant: &str, config: Value) {
    sqlx::query(
        "INSERT INTO tenant_configs (tenant_id, config, version) VALUES ($1, $2, 1) \
         ON CONFLICT (tenant_id) DO UPDATE SET config = EXCLUDED.config",
    )
    .bind(tenant)
    .bind(config)
    .execute(&app.pool)
    .await
    .unwrap();
}
