//! The `mnemo` binary: wires the CLI to the library.

use std::str::FromStr;

use anyhow::Context;
use clap::Parser;
use sha2::{Digest, Sha256};
use sqlx::postgres::PgConnectOptions;

use mnemo::cli::transfer::{ExportArgs, ImportArgs};
use mnemo::cli::{
    AuditArgs, Cli, Command, DbArgs, KeysAction, KeysArgs, LogFormat, McpBridgeArgs, PgAction, PgArgs, ReembedArgs,
    ServeArgs, SubjectsAction, SubjectsArgs,
};
use mnemo::pg::{Cluster, StartOutcome};
use mnemo::progress::Reporter;
use mnemo::receipts::signing::SigningKeys;
use mnemo::{db, AppState, RuntimeConfig};

/// Resolves the database: the given URL, or the embedded cluster. The cluster is returned only
/// when this process started it: one that was already running (a live server's, or a crashed
/// one's) must not be stopped by us.
async fn open_database(args: &DbArgs) -> anyhow::Result<(PgConnectOptions, Option<Cluster>)> {
    if let Some(url) = args.database_url.as_deref().filter(|u| !u.is_empty()) {
        let opts = PgConnectOptions::from_str(url).context("MNEMO_DATABASE_URL is not a valid Postgres URL")?;
        return Ok((opts, None));
    }
    let cluster = Cluster::new(&args.data_dir)?;
    let outcome = cluster.start().await?;
    tracing::info!(?outcome, socket_dir = %cluster.socket_dir().display(), "embedded postgres ready");
    let owned = (outcome == StartOutcome::Started).then(|| cluster.clone());
    if let Err(e) = cluster.ensure_database("mnemo").await {
        if let Some(c) = owned {
            let _ = c.stop().await;
        }
        return Err(e);
    }
    Ok((cluster.connect_options("mnemo"), owned))
}

/// Runs an admin verb against the migrated database, then stops an embedded cluster it started.
async fn with_database<T, F, Fut>(args: &DbArgs, f: F) -> anyhow::Result<T>
where
    F: FnOnce(sqlx::PgPool) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<T>>,
{
    let (opts, cluster) = open_database(args).await?;
    let result = async {
        let pool = db::pool::connect(opts, 2).await?;
        db::pool::migrate(&pool).await?;
        let out = f(pool.clone()).await;
        pool.close().await;
        out
    }
    .await;
    if let Some(c) = cluster {
        c.stop().await?;
    }
    result
}

/// The operator's receipt-signing keys from `MNEMO_RECEIPT_SIGNING_KEYS` (empty: none).
fn signing_keys(json: Option<&str>) -> anyhow::Result<SigningKeys> {
    match json.filter(|k| !k.trim().is_empty()) {
        Some(json) => SigningKeys::parse(json).context("MNEMO_RECEIPT_SIGNING_KEYS"),
        None => Ok(SigningKeys::empty()),
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    // Check settings and load the model before starting anything: clear, early errors.
    args.check_api_key().map_err(anyhow::Error::msg)?;
    args.webhooks.to_config().map_err(anyhow::Error::msg)?;
    let keys = signing_keys(args.receipt_signing_keys.as_deref())?;
    let embedder = mnemo::embed::build(&args.embed.to_config(&args.db.data_dir))?;
    tracing::info!(model = embedder.model_id(), signing_keys = keys.ids().len(), "embedder ready");
    if let mnemo::compile::llm::Compiler::Llm(llm) = args.compiler.to_compiler()? {
        tracing::info!(model = llm.model(), "LLM compiler on");
    }
    let (opts, cluster) = open_database(&args.db).await?;
    let result = serve_with(&args, opts, embedder, keys).await;
    if let Some(c) = cluster {
        // Stop the embedded server on every exit path, success or error.
        if let Err(e) = c.stop().await {
            tracing::error!(error = %e, "stopping embedded postgres failed");
        } else {
            tracing::info!("embedded postgres stopped");
        }
    }
    result
}

async fn serve_with(
    args: &ServeArgs,
    opts: PgConnectOptions,
    embedder: std::sync::Arc<dyn mnemo::embed::Embedder>,
    keys: mnemo::receipts::signing::SigningKeys,
) -> anyhow::Result<()> {
    // Migrations run as the connecting (owner) role; the server itself runs as mnemo_app.
    let owner = db::pool::connect(opts.clone(), 2).await.context("connecting to Postgres")?;
    db::pool::migrate(&owner).await.context("applying migrations")?;
    if embedder.is_semantic() {
        // HNSW indexes for the configured model, built in the background (CONCURRENTLY): a large
        // table takes minutes, and until they are valid the context lanes scan exactly.
        let (model, dims) = (embedder.model_id().to_string(), embedder.dims());
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            match db::vector_index::ensure(&owner, &model, dims).await {
                Ok(built) if built.is_empty() => tracing::debug!(%model, "vector indexes present"),
                Ok(built) => {
                    tracing::info!(%model, indexes = %built.join(","), secs = started.elapsed().as_secs_f64(), "vector indexes built")
                }
                Err(e) => {
                    tracing::warn!(error = %e, %model, "building vector indexes failed; large subjects scan vectors exactly")
                }
            }
            owner.close().await;
        });
    } else {
        owner.close().await;
    }
    let app_opts = match args.app_database_url.as_deref().filter(|u| !u.is_empty()) {
        Some(url) => PgConnectOptions::from_str(url).context("MNEMO_APP_DATABASE_URL is not a valid Postgres URL")?,
        None => opts,
    };
    let pool = db::pool::connect_app(app_opts, args.db.db_max_connections)
        .await
        .context("connecting as the application role mnemo_app")?;
    let stored_keys = db::keys::ever_stored(&mut *pool.acquire().await?).await?;
    args.check_exposure(stored_keys).map_err(anyhow::Error::msg)?;
    let webhooks = args.webhooks.to_config().map_err(anyhow::Error::msg)?;
    if let Some(url) = webhooks.url.as_deref() {
        let scheme = url.split(':').next().unwrap_or("");
        let events: Vec<&str> = webhooks.events.iter().map(|e| e.as_str()).collect();
        tracing::info!(scheme, events = %events.join(","), signed = webhooks.secret.is_set(), "webhooks on");
    }
    let config = RuntimeConfig {
        api_key_sha256: args.api_key.as_deref().filter(|k| !k.is_empty()).map(|k| Sha256::digest(k.as_bytes()).into()),
        allow_query_api_key: args.allow_query_api_key,
        auth_failures_per_minute: args.auth_failures_per_minute,
        max_body_bytes: args.max_body_bytes,
        request_timeout_secs: args.request_timeout_secs,
        shutdown_drain_secs: args.shutdown_drain_secs,
        connections: args.connection_limits(),
        console_session_minutes: args.console_session_minutes,
        compile_batch_size: args.compile_batch_size,
        compile_budget_ms: args.compile_time_budget_ms,
        ingest_writers: usize::from(args.ingest_writers),
        lexemes_at: args.lexemes,
        context_cache_bytes: args.context_cache_mb << 20,
        context_index_bytes: args.context_index_mb << 20,
        job_stale_secs: args.compile_job_stale_secs,
        job_retention_hours: args.compile_job_retention_hours,
        access: mnemo::services::access::AccessPolicy {
            region: args.region.clone().filter(|r| !r.is_empty()),
            rate_limit_rpm: args.rate_limit_rpm,
        },
        cors_origins: mnemo::cli::comma_list(&args.cors_origins),
        allowed_hosts: mnemo::cli::comma_list(&args.allowed_hosts),
        webhooks,
        mcp: args.mcp.to_config(),
        compiler: args.compiler.to_compiler()?,
        ..RuntimeConfig::default()
    };
    let mut state = AppState::new(pool.clone(), config, embedder).with_signing_keys(keys);
    if let Some(url) = args.read_database_url.as_deref().filter(|u| !u.is_empty()) {
        let opts = PgConnectOptions::from_str(url).context("MNEMO_READ_DATABASE_URL is not a valid Postgres URL")?;
        let replica = db::pool::connect_app(opts, args.db.db_max_connections)
            .await
            .context("connecting to the read replica as mnemo_app")?;
        let max_lag = std::time::Duration::from_millis(args.read_max_lag_ms);
        tracing::info!(max_lag_ms = args.read_max_lag_ms, "reads go to the replica when it has caught up");
        state = state.with_read_replica(mnemo::services::read_replica::ReadReplica::new(replica, max_lag));
    }
    // The compiler's regexes are built now rather than by the first compile (hundreds of ms).
    drop(tokio::task::spawn_blocking(mnemo::compile::pipeline::warm));
    let listener = tokio::net::TcpListener::bind(args.addr).await.with_context(|| format!("binding {}", args.addr))?;
    tracing::info!(addr = %listener.local_addr()?, "mnemo listening");
    let (stop_metrics, metrics_stopped) = tokio::sync::oneshot::channel::<()>();
    if let Some(addr) = args.metrics_addr {
        let metrics_listener =
            tokio::net::TcpListener::bind(addr).await.with_context(|| format!("binding metrics on {addr}"))?;
        tracing::info!(%addr, "metrics listening");
        let st = state.clone();
        tokio::spawn(async move {
            let stopped = async {
                let _ = metrics_stopped.await;
            };
            if let Err(e) = mnemo::serve_metrics(metrics_listener, st, stopped).await {
                tracing::error!(error = %e, "metrics listener failed");
            }
        });
    }
    mnemo::serve(listener, state, mnemo::shutdown_signal()).await?;
    let _ = stop_metrics.send(());
    pool.close().await;
    Ok(())
}

async fn migrate(args: DbArgs) -> anyhow::Result<()> {
    with_database(&args, |_| async { anyhow::Ok(()) }).await?;
    tracing::info!("migrations applied");
    Ok(())
}

async fn reembed(args: ReembedArgs) -> anyhow::Result<()> {
    let embedder = mnemo::embed::build(&args.embed.to_config(&args.db.data_dir))?;
    with_database(&args.db, |pool| async move {
        mnemo::services::reembed::run(&pool, &embedder, args.batch, &Reporter::stderr()).await
    })
    .await
}

async fn export(args: ExportArgs) -> anyhow::Result<()> {
    let db = args.db.clone();
    with_database(&db, |pool| async move {
        let mut out = std::io::BufWriter::new(std::io::stdout());
        let rows = mnemo::cli::transfer::export(&pool, &args, &mut out, &Reporter::stderr()).await?;
        let what = args.subject.as_deref().map_or_else(|| "every subject".to_string(), |s| format!("subject {s}"));
        eprintln!("exported {what} of tenant {}: {rows} rows", args.tenant);
        anyhow::Ok(())
    })
    .await
}

async fn import(args: ImportArgs) -> anyhow::Result<()> {
    let embedder = mnemo::embed::build(&args.embed.to_config(&args.db.data_dir))?;
    let db = args.db.clone();
    with_database(&db, |pool| async move {
        let imported = mnemo::cli::transfer::import(&pool, &embedder, &args, &Reporter::stderr()).await?;
        println!("{}", serde_json::to_string_pretty(&imported)?);
        anyhow::Ok(())
    })
    .await
}

/// Sends `GET /healthz` over a plain TCP connection and checks for a 200 status line.
async fn audit(args: AuditArgs) -> anyhow::Result<()> {
    with_database(&args.db, |pool| async move {
        let report = mnemo::services::receipts::verify_chain(&pool, &args.tenant).await?;
        println!("{}", serde_json::to_string_pretty(&report)?);
        anyhow::ensure!(report.ok, "receipt chain of tenant {} is broken", args.tenant);
        anyhow::Ok(())
    })
    .await
}

async fn subjects(args: SubjectsArgs) -> anyhow::Result<()> {
    match args.action {
        SubjectsAction::Delete(a) => {
            let keys = signing_keys(a.receipt_signing_keys.as_deref())?;
            let hooks = mnemo::services::webhooks::Webhooks::new(&a.webhooks.to_config().map_err(anyhow::Error::msg)?);
            with_database(&a.db, |pool| async move {
                let erased =
                    mnemo::services::erase::erase_subject(&pool, &keys, &hooks, &a.tenant, &a.subject_id).await?;
                let out = serde_json::json!({
                    "subject_id": a.subject_id,
                    "episodes_deleted": erased.count("episodes"),
                    "memories_deleted": erased.count("memories"),
                    "erasure_id": erased.erasure_id,
                    "certificate": erased.certificate,
                });
                println!("{}", serde_json::to_string_pretty(&out)?);
                anyhow::Ok(())
            })
            .await
        }
    }
}

async fn keys(args: KeysArgs) -> anyhow::Result<()> {
    use mnemo::services::keys as svc;
    match args.action {
        KeysAction::Create(a) => {
            with_database(&a.db, |pool| async move {
                let scope = match (a.admin, a.operator) {
                    (_, true) => svc::Scope::Operator,
                    (true, false) => svc::Scope::Admin,
                    (false, false) => svc::Scope::Tenant,
                };
                let minted = svc::create(&pool, &a.tenant, scope, a.label.as_deref()).await?;
                let out = serde_json::json!({"key": minted.secret, "key_id": minted.row.key_id,
                    "tenant_id": minted.row.tenant_id, "admin": minted.row.is_admin,
                    "operator": minted.row.is_operator, "label": minted.row.label});
                println!("{}", serde_json::to_string_pretty(&out)?);
                eprintln!("Store the key now: only its sha256 is kept, it cannot be shown again.");
                anyhow::Ok(())
            })
            .await
        }
        KeysAction::Revoke(a) => {
            with_database(&a.db, |pool| async move {
                anyhow::ensure!(
                    svc::revoke(&pool, &a.tenant, &a.key_id).await?,
                    "tenant {} has no live key {}",
                    a.tenant,
                    a.key_id
                );
                println!("revoked {}", a.key_id);
                anyhow::Ok(())
            })
            .await
        }
        KeysAction::List(a) => {
            with_database(&a.db, |pool| async move {
                println!("{}", serde_json::to_string_pretty(&svc::list(&pool, &a.tenant).await?)?);
                anyhow::Ok(())
            })
            .await
        }
    }
}

async fn pg(args: PgArgs) -> anyhow::Result<()> {
    let cluster = Cluster::new(&args.data_dir)?;
    match args.action {
        PgAction::Start => {
            let outcome = cluster.start().await?;
            println!("{outcome:?}: socket dir {}", cluster.socket_dir().display());
        }
        PgAction::Stop => cluster.stop().await?,
        PgAction::Status => {
            let running = cluster.is_running().await?;
            println!("{}", if running { "running" } else { "stopped" });
        }
    }
    Ok(())
}

/// `mnemo mcp`: the stdio bridge, on a blocking thread (it uses blocking HTTP).
async fn mcp_bridge(args: McpBridgeArgs) -> anyhow::Result<()> {
    let cfg = mnemo::mcp::bridge::BridgeConfig {
        url: args.url,
        api_key: std::env::var("MNEMO_API_KEY").ok().filter(|k| !k.is_empty()),
        tenant: args.tenant.filter(|t| !t.is_empty()),
        timeout: std::time::Duration::from_secs(args.timeout_secs),
    };
    tracing::info!(url = %cfg.url, key = cfg.api_key.is_some(), "mcp stdio bridge started");
    tokio::task::spawn_blocking(move || mnemo::mcp::bridge::run(&cfg, std::io::stdin().lock(), std::io::stdout()))
        .await?
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let format = match &cli.command {
        Command::Serve(a) => a.log_format,
        _ => LogFormat::Text,
    };
    // The stdio bridge owns stdout for JSON-RPC, and an export writes its file there.
    let exporter = mnemo::telemetry::init(
        format,
        matches!(cli.command, Command::Mcp(_) | Command::Export(_)),
        matches!(cli.command, Command::Serve(_)),
    );
    let result = match cli.command {
        Command::Serve(a) => serve(*a).await,
        Command::Migrate(a) => migrate(a).await,
        Command::Pg(a) => pg(a).await,
        Command::Reembed(a) => reembed(a).await,
        Command::Export(a) => export(a).await,
        Command::Import(a) => import(*a).await,
        Command::Healthcheck(a) => mnemo::cli::healthcheck::run(a).await,
        Command::Eval(a) => {
            tokio::task::spawn_blocking(move || mnemo::cli::eval::eval(*a)).await.unwrap_or_else(|e| Err(e.into()))
        }
        Command::Audit(a) => audit(a).await,
        Command::Subjects(a) => subjects(a).await,
        Command::Keys(a) => keys(a).await,
        Command::Mcp(a) => mcp_bridge(a).await,
        Command::Openapi => serde_json::to_string_pretty(&mnemo::http::openapi::document())
            .map(|s| println!("{s}"))
            .map_err(anyhow::Error::from),
    };
    if let Some(exporter) = exporter {
        let _ = tokio::task::spawn_blocking(move || exporter.shutdown()).await;
    }
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mnemo: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
