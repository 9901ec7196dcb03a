//! Shared application state handed to every handler.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::PgPool;
use tokio::sync::Notify;

use crate::embed::Embedder;
use crate::lexemes::LexemesAt;
use crate::receipts::signing::SigningKeys;
use crate::services::context::{SubjectCache, TaskVectorCache};
use crate::services::episodes::KnownTenants;
use crate::services::group_commit::GroupCommit;
use crate::services::lexer::Lexer;
use crate::services::read_replica::ReadReplica;
use crate::services::tenant_settings::SettingsCache;
use crate::services::webhooks::Webhooks;

/// Settings the HTTP layer needs at run time.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// sha256 of the single operator API key, when one is configured.
    pub api_key_sha256: Option<[u8; 32]>,
    /// Accept a key in the `api_key` query parameter (`MNEMO_ALLOW_QUERY_API_KEY`; off: URLs end
    /// up in proxy logs and browser history).
    pub allow_query_api_key: bool,
    /// Failed key attempts a minute per client address and per key prefix before 429 (0: off).
    pub auth_failures_per_minute: u32,
    /// Largest accepted request body in bytes.
    pub max_body_bytes: usize,
    /// Per-request timeout in seconds.
    pub request_timeout_secs: u64,
    /// Most episodes one compile call consumes.
    pub compile_batch_size: i64,
    /// Milliseconds of work one synchronous compile call (or one slice of a job) does before it
    /// commits and answers `has_more` (capped at half the request timeout).
    pub compile_budget_ms: u64,
    /// A job without a heartbeat for this long is considered dead.
    pub job_stale_secs: i64,
    /// Finished jobs are deleted after this many hours.
    pub job_retention_hours: i64,
    /// How often an idle worker looks for jobs, in milliseconds.
    pub job_poll_ms: u64,
    /// Whether this process runs a compile worker.
    pub run_worker: bool,
    /// Residency and rate limits.
    pub access: crate::services::access::AccessPolicy,
    /// Origins allowed by CORS (empty: CORS off); browsers' requests from them pass the Origin check.
    pub cors_origins: Vec<String>,
    /// Host names served besides loopback ones (`MNEMO_ALLOWED_HOSTS`); empty: the Host header is
    /// checked only while the server is open (the HTTP layer's Host and Origin check).
    pub allowed_hosts: Vec<String>,
    /// Webhook settings (off without a URL).
    pub webhooks: crate::services::webhooks::WebhookConfig,
    /// The MCP endpoint's tool set, forget switch and allowed origins.
    pub mcp: McpConfig,
    /// Seconds between the start of shutdown (readiness fails) and the listener closing.
    pub shutdown_drain_secs: u64,
    /// Header-read (and idle) timeout, connection cap and shutdown grace of the listener.
    pub connections: ConnLimits,
    /// Which compiler turns episodes into memories (heuristic unless `MNEMO_COMPILER=llm`).
    pub compiler: crate::compile::llm::Compiler,
    /// How long an admin console session lasts, in minutes.
    pub console_session_minutes: u64,
    /// Statements of single-episode ingest in flight per tenant; requests arriving meanwhile
    /// share the next one (group commit).
    pub ingest_writers: usize,
    /// Bytes (an estimate) of small subjects' rows kept between context calls (0: none).
    pub context_cache_bytes: u64,
    /// Bytes (an estimate) of large subjects' lexical indexes (0: none).
    pub context_index_bytes: u64,
    /// Where episodes' lexemes are computed (`MNEMO_LEXEMES`).
    pub lexemes_at: LexemesAt,
}

impl RuntimeConfig {
    /// The time one compile call may take: `compile_budget_ms`, at most half the request timeout
    /// (the rest is margin for the batch under way when it runs out, and for the answer).
    pub fn compile_budget(&self) -> Duration {
        let cap = Duration::from_millis(self.request_timeout_secs.saturating_mul(500));
        Duration::from_millis(self.compile_budget_ms).min(cap)
    }
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            api_key_sha256: None,
            allow_query_api_key: false,
            auth_failures_per_minute: 20,
            max_body_bytes: crate::model::limits::DEFAULT_MAX_BODY_BYTES,
            request_timeout_secs: 30,
            compile_batch_size: 500,
            compile_budget_ms: 10_000,
            job_stale_secs: 60,
            job_retention_hours: 168,
            job_poll_ms: 500,
            run_worker: true,
            access: Default::default(),
            cors_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            webhooks: Default::default(),
            mcp: Default::default(),
            shutdown_drain_secs: 0,
            connections: Default::default(),
            compiler: Default::default(),
            console_session_minutes: 480,
            ingest_writers: 1,
            context_cache_bytes: crate::services::context::subjects::DEFAULT_BYTES,
            context_index_bytes: crate::services::context::lexical::DEFAULT_BYTES,
            lexemes_at: LexemesAt::default(),
        }
    }
}

/// Everything a request handler can reach: one shared [`AppParts`]. Axum clones the state for
/// every extractor and middleware of a request; behind one `Arc` that is one reference count,
/// not one per part (cloning and dropping the fifteen parts was ~4% of the server's CPU under
/// ingest load).
#[derive(Clone)]
pub struct AppState(Arc<AppParts>);

impl std::ops::Deref for AppState {
    type Target = AppParts;

    fn deref(&self) -> &AppParts {
        &self.0
    }
}

/// The parts of [`AppState`].
#[derive(Clone)]
pub struct AppParts {
    pub pool: PgPool,
    pub config: Arc<RuntimeConfig>,
    pub tenants: Arc<KnownTenants>,
    pub embedder: Arc<dyn Embedder>,
    /// Wakes the local compile worker when a job is submitted here.
    pub job_notify: Arc<Notify>,
    /// Task embeddings already computed (context calls repeat tasks).
    pub task_vectors: Arc<TaskVectorCache>,
    /// Small subjects' rows as of their last context call, checked against the subject's
    /// fingerprint by every call.
    pub subjects: Arc<SubjectCache>,
    /// Tenants' config and active policy, checked against their settings version on every call.
    pub tenant_settings: Arc<SettingsCache>,
    /// Operator receipt-signing keys (never logged).
    pub signing_keys: Arc<SigningKeys>,
    /// Whether this database has ever stored an API key (then keyless requests are refused).
    pub keys_present: Arc<KeysPresent>,
    /// Failed key attempts per client address and key prefix (API, MCP and console sign-in).
    pub auth_throttle: Arc<crate::services::auth_throttle::AuthThrottle>,
    /// The webhook outbox handle (enqueue inside a change's transaction).
    pub webhooks: Arc<Webhooks>,
    /// Single-episode writes, grouped per tenant under concurrency.
    pub group_commit: Arc<GroupCommit>,
    /// Episodes' lexemes computed by the server where it can (`MNEMO_LEXEMES`).
    pub lexer: Arc<Lexer>,
    /// Set when graceful shutdown starts: readiness answers 503 from then on.
    pub shutting_down: Arc<AtomicBool>,
    /// Signs admin console sessions: derived from the first receipt-signing key (so replicas
    /// share sessions), else random per process. Never a receipt key itself; never logged.
    pub console_key: Arc<[u8; 32]>,
    /// The optional streaming replica for reads (`MNEMO_READ_DATABASE_URL`).
    pub reads: Option<Arc<ReadReplica>>,
}

impl AppState {
    /// Builds the state around a connected pool.
    pub fn new(pool: PgPool, config: RuntimeConfig, embedder: Arc<dyn Embedder>) -> Self {
        let webhooks = Arc::new(Webhooks::new(&config.webhooks));
        let subjects = Arc::new(SubjectCache::with_capacities(config.context_cache_bytes, config.context_index_bytes));
        let lexer = Arc::new(Lexer::new(config.lexemes_at));
        let auth_throttle =
            Arc::new(crate::services::auth_throttle::AuthThrottle::new(config.auth_failures_per_minute));
        AppState(Arc::new(AppParts {
            group_commit: Arc::new(GroupCommit::new(
                pool.clone(),
                Arc::clone(&webhooks),
                Arc::clone(&lexer),
                config.ingest_writers,
            )),
            lexer,
            pool,
            webhooks,
            config: Arc::new(config),
            tenants: Arc::new(KnownTenants::default()),
            embedder,
            job_notify: Arc::new(Notify::new()),
            task_vectors: Arc::new(TaskVectorCache::default()),
            subjects,
            tenant_settings: Arc::new(SettingsCache::default()),
            signing_keys: Arc::new(SigningKeys::empty()),
            keys_present: Arc::new(KeysPresent::default()),
            auth_throttle,
            shutting_down: Arc::new(AtomicBool::new(false)),
            console_key: Arc::new(rand::random()),
            reads: None,
        }))
    }

    /// Reads from this replica when it has caught up (see [`ReadReplica`]).
    pub fn with_read_replica(mut self, replica: ReadReplica) -> Self {
        Arc::make_mut(&mut self.0).reads = Some(Arc::new(replica));
        self
    }

    /// What a compile uses of the server: the pool, the embedder, the webhooks and the
    /// configured compiler.
    pub fn compile_deps(&self) -> crate::services::compile::CompileDeps<'_> {
        crate::services::compile::CompileDeps {
            pool: &self.pool,
            embedder: &self.embedder,
            hooks: &self.webhooks,
            compiler: &self.config.compiler,
        }
    }

    /// How much one compile call may do: the configured batch size and compile time budget.
    pub fn compile_limits(&self) -> crate::services::compile_budget::CallLimits {
        crate::services::compile_budget::CallLimits {
            max_episodes: self.config.compile_batch_size,
            budget: self.config.compile_budget(),
        }
    }

    /// What the compile-job worker uses of the server.
    pub fn worker(&self) -> crate::services::jobs::Worker {
        crate::services::jobs::Worker {
            pool: self.pool.clone(),
            embedder: self.embedder.clone(),
            hooks: self.webhooks.clone(),
            compiler: self.config.compiler.clone(),
            limits: self.compile_limits(),
            notify: self.job_notify.clone(),
            poll: Duration::from_millis(self.config.job_poll_ms),
            stale_secs: self.config.job_stale_secs,
            retention_hours: self.config.job_retention_hours,
        }
    }

    /// What a context call (or a handoff) uses of the server.
    pub fn context_deps(&self) -> crate::services::context_call::Deps<'_> {
        crate::services::context_call::Deps {
            pool: &self.pool,
            reads: self.reads.as_deref(),
            embedder: &self.embedder,
            task_vectors: &self.task_vectors,
            subjects: &self.subjects,
            tenant_settings: &self.tenant_settings,
            signing_keys: &self.signing_keys,
        }
    }

    /// The pool for a read that must see every write acknowledged before it: the replica when
    /// one is configured and caught up, else the primary.
    pub async fn read_pool(&self) -> sqlx::Result<&PgPool> {
        self.context_deps().read_pool().await
    }

    /// Uses these receipt-signing keys.
    pub fn with_signing_keys(mut self, keys: SigningKeys) -> Self {
        let parts = Arc::make_mut(&mut self.0);
        if let Some(derived) = crate::receipts::signing::derive_key(&keys) {
            parts.console_key = Arc::new(derived);
        }
        parts.signing_keys = Arc::new(keys);
        self
    }
}

/// How long "has a key ever been stored?" is remembered while the answer is no: the first key
/// created with the CLI takes effect on running servers within this time.
const KEYS_PRESENT_TTL: Duration = Duration::from_secs(2);

/// Whether this database has ever stored an API key (`mnemo_keys_exist()`).
/// A yes is final (revoking every key never reopens the server), so it is kept for good; a no
/// is re-read after [`KEYS_PRESENT_TTL`].
#[derive(Default)]
pub struct KeysPresent {
    ever: AtomicBool,
    checked: Mutex<Option<Instant>>,
}

impl KeysPresent {
    /// Whether any key was ever stored (a query at most every TTL until one was).
    pub async fn any(&self, pool: &PgPool) -> sqlx::Result<bool> {
        if self.ever.load(Ordering::Acquire) {
            return Ok(true);
        }
        if let Ok(guard) = self.checked.lock() {
            if guard.is_some_and(|at| at.elapsed() < KEYS_PRESENT_TTL) {
                return Ok(false);
            }
        }
        let v = crate::db::keys::ever_stored(&mut *pool.acquire().await?).await?;
        if v {
            self.ever.store(true, Ordering::Release);
        } else if let Ok(mut guard) = self.checked.lock() {
            *guard = Some(Instant::now());
        }
        Ok(v)
    }
}

impl AppState {
    /// Whether requests need a key: an operator key is configured, or a key was ever stored.
    /// The API, MCP and the console all ask this one question.
    pub async fn keyed(&self) -> sqlx::Result<bool> {
        Ok(self.config.api_key_sha256.is_some() || self.keys_present.any(&self.pool).await?)
    }
}

/// Which tool names and argument shapes `/mcp` serves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Toolset {
    /// mnemo's own tools: remember, recall, search_memories, timeline (and forget and erase when
    /// allowed).
    #[default]
    Mnemo,
    /// Statewave's MCP tool names with the HTTP API's request fields as arguments.
    Statewave,
}

/// MCP settings.
#[derive(Debug, Clone, Default)]
pub struct McpConfig {
    /// The tool set served.
    pub toolset: Toolset,
    /// Adds the `forget` and `erase` tools (mnemo tool set only).
    pub allow_forget: bool,
    /// Browser origins allowed on `/mcp` besides the server's own, loopback and CORS ones (`*` for any).
    pub allowed_origins: Vec<String>,
}

/// Limits of the connections one listener serves.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// A connection that has not sent a whole request head this long after it opened, or after
    /// its previous response, is closed.
    pub header_read_timeout: Duration,
    /// Most connections open at once.
    pub max_connections: usize,
    /// After the listener closes, how long connections may take to finish their requests.
    pub shutdown_grace: Duration,
}

impl Default for ConnLimits {
    fn default() -> Self {
        ConnLimits {
            header_read_timeout: Duration::from_secs(30),
            max_connections: 1024,
            shutdown_grace: Duration::from_secs(30),
        }
    }
}
