//! mnemo benchmark: compile throughput, context latency and planted-fact recall, measured
//! in-process against the embedded Postgres cluster (fsync on, default durability).
//!
//! ```sh
//! cargo run --release --example bench -- compile --embedder hash
//! cargo run --release --example bench -- context --embedder minilm --sizes 1000
//! cargo run --release --example bench -- recall  --embedder minilm
//! ```
//!
//! Flags: `--embedder hash|minilm` (hash), `--n` episodes for compile (1000), `--runs` (3),
//! `--sizes` memory counts for context (1000,10000), `--calls` timed context calls (200),
//! `--max-tokens` context budget (4000), `--keep-db` (the run's database is dropped otherwise),
//! `--db NAME` (use and keep this database; a context subject already built there is reused),
//! `--grow K` (context: clone each built subject K times in SQL, as `bench/sql/clone_subject.sql`
//! does for the HTTP suite, so `--sizes 10000 --grow 10` measures 100k memories), `--explain`
//! (context: instead of timing, print the plans of two calls, with actual rows and times).
//! See bench/README.md for the method and results.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "bench/beam.rs"]
mod beam;
#[path = "bench/data.rs"]
mod data;
#[path = "bench/locomo.rs"]
mod locomo;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use sqlx::{ConnectOptions, Connection, PgPool};

use mnemo::embed::{Embedder, EmbedderConfig};
use mnemo::model::episode::NewEpisode;
use mnemo::pg::Cluster;
use mnemo::services::context::{assemble, ContextRequest, RetrievalOptions, TaskVectorCache};
use mnemo::{AppState, RuntimeConfig};

const TENANT: &str = "bench";
const COMPILE_BATCH: i64 = 500;
const INGEST_BATCH: usize = 100;
const WARMUP: usize = 10;

/// Wraps the embedder to measure the time spent embedding (the rest is Postgres and mnemo).
struct Timed {
    inner: Arc<dyn Embedder>,
    nanos: AtomicU64,
    texts: AtomicU64,
}

impl Timed {
    fn take(&self) -> (Duration, u64) {
        (Duration::from_nanos(self.nanos.swap(0, Ordering::Relaxed)), self.texts.swap(0, Ordering::Relaxed))
    }
}

impl Embedder for Timed {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn dims(&self) -> usize {
        self.inner.dims()
    }
    fn is_semantic(&self) -> bool {
        self.inner.is_semantic()
    }
    fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        let t = Instant::now();
        let out = self.inner.embed(texts);
        self.nanos.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.texts.fetch_add(texts.len() as u64, Ordering::Relaxed);
        out
    }
}

struct Args {
    scenario: String,
    embedder: String,
    n: usize,
    runs: usize,
    sizes: Vec<usize>,
    calls: usize,
    max_tokens: usize,
    keep_db: bool,
    db: Option<String>,
    grow: usize,
    explain: bool,
    url: Option<String>,
    api_key: Option<String>,
    data: PathBuf,
    convs: Vec<String>,
    budgets: Vec<usize>,
    ablate: bool,
    set: Vec<(String, f64)>,
    misses: bool,
    /// Also asks each question with an unbounded budget and reports where the missing evidence ranked.
    depth: bool,
    /// beam: stop after the compile figures (no questions).
    compile_only: bool,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut a = Args {
        scenario: String::new(),
        embedder: "hash".into(),
        n: 1000,
        runs: 3,
        sizes: vec![1000, 10_000],
        calls: 200,
        max_tokens: 4000,
        keep_db: false,
        db: None,
        grow: 1,
        explain: false,
        url: None,
        api_key: std::env::var("MNEMO_API_KEY").ok(),
        data: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(locomo::DEFAULT_DATA),
        convs: Vec::new(),
        budgets: vec![1000, 2000, 4000],
        ablate: false,
        set: Vec::new(),
        misses: false,
        depth: false,
        compile_only: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut val = || it.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--embedder" => a.embedder = val()?,
            "--n" => a.n = val()?.parse()?,
            "--runs" => a.runs = val()?.parse()?,
            "--sizes" => a.sizes = val()?.split(',').map(|s| s.trim().parse()).collect::<Result<_, _>>()?,
            "--calls" => a.calls = val()?.parse()?,
            "--max-tokens" => a.max_tokens = val()?.parse()?,
            "--keep-db" => a.keep_db = true,
            "--db" => a.db = Some(val()?),
            "--grow" => a.grow = val()?.parse()?,
            "--explain" => a.explain = true,
            "--url" => a.url = Some(val()?.trim_end_matches('/').to_string()),
            "--api-key" => a.api_key = Some(val()?),
            "--data" => a.data = PathBuf::from(val()?),
            "--convs" => a.convs = val()?.split(',').map(|s| s.trim().to_string()).collect(),
            "--budgets" => a.budgets = val()?.split(',').map(|s| s.trim().parse()).collect::<Result<_, _>>()?,
            "--ablate" => a.ablate = true,
            "--misses" => a.misses = true,
            "--depth" => a.depth = true,
            "--compile-only" => a.compile_only = true,
            "--set" => {
                for kv in val()?.split(',').filter(|s| !s.is_empty()) {
                    let (k, v) = kv.split_once('=').with_context(|| format!("--set wants name=value, not {kv}"))?;
                    a.set.push((k.trim().to_string(), v.trim().parse()?));
                }
            }
            s if !s.starts_with('-') && a.scenario.is_empty() => a.scenario = s.to_string(),
            s => bail!("unknown argument {s}"),
        }
    }
    // LoCoMo and BEAM measure semantic retrieval: MiniLM unless told otherwise.
    if ["locomo", "beam"].contains(&a.scenario.as_str()) && !std::env::args().any(|x| x == "--embedder") {
        a.embedder = "minilm".into();
    }
    if a.scenario == "beam" && !std::env::args().any(|x| x == "--data") {
        a.data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(beam::DEFAULT_DATA);
    }
    if !["compile", "context", "recall", "locomo", "beam"].contains(&a.scenario.as_str()) {
        bail!("usage: bench compile|context|recall|locomo|beam [--embedder hash|minilm] [--n N] [--runs R] [--sizes 1000,10000] [--calls C] [--max-tokens T] [--keep-db] [--db NAME] [--grow K] [--explain] [--url URL] [--api-key K] [--data FILE] [--convs a,b] [--budgets 1000,2000,4000] [--ablate] [--set name=value,...] [--misses] [--depth] [--compile-only]");
    }
    Ok(a)
}

struct Bench {
    state: AppState,
    timed: Arc<Timed>,
    cluster: Cluster,
    db_name: String,
}

impl Bench {
    async fn setup(embedder: &str, db: Option<&str>) -> anyhow::Result<Self> {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/tmp/mnemo-bench");
        // Default durability: fsync, synchronous_commit and full_page_writes stay on.
        let cluster = Cluster::new(&dir)?;
        cluster.start().await?;
        let db_name = match db {
            Some(name) => name.to_string(),
            None => format!("mnemo_bench_{}", ulid::Ulid::new().to_string().to_lowercase()),
        };
        if !db_name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
            bail!("--db must be lowercase letters, digits and _");
        }
        let mut admin = cluster.connect_options("postgres").connect().await?;
        let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(&db_name)
            .fetch_one(&mut admin)
            .await?;
        if !exists {
            sqlx::query(&format!("CREATE DATABASE {db_name}")).execute(&mut admin).await?;
        }
        admin.close().await?;
        let pool = mnemo::db::pool::connect(cluster.connect_options(&db_name), 10).await?;
        mnemo::db::pool::migrate(&pool).await?;
        pool.close().await;
        // Measured as the server runs: as mnemo_app, under row-level security.
        let pool = mnemo::db::pool::connect_app(cluster.connect_options(&db_name), 10).await?;
        let config = match embedder {
            "hash" => EmbedderConfig::Hash { dims: 384 },
            "minilm" => EmbedderConfig::MiniLm {
                model_dir: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".mnemo/models/all-MiniLM-L6-v2"),
            },
            other => bail!("--embedder must be hash or minilm, not {other}"),
        };
        let inner = mnemo::embed::build(&config)?;
        if inner.is_semantic() {
            // As `mnemo serve` does at start (here in the foreground, so the timed calls use them).
            let t = Instant::now();
            let owner = mnemo::db::pool::connect(cluster.connect_options(&db_name), 2).await?;
            let built = mnemo::db::vector_index::ensure(&owner, inner.model_id(), inner.dims()).await?;
            owner.close().await;
            if !built.is_empty() {
                println!("built vector indexes {} in {:.1}s", built.join(", "), t.elapsed().as_secs_f64());
            }
        }
        let timed = Arc::new(Timed { inner, nanos: AtomicU64::new(0), texts: AtomicU64::new(0) });
        let embedder: Arc<dyn Embedder> = timed.clone();
        let state = AppState::new(pool, RuntimeConfig::default(), embedder);
        Ok(Bench { state, timed, cluster, db_name })
    }

    fn pool(&self) -> &PgPool {
        &self.state.pool
    }

    async fn teardown(self, keep: bool) -> anyhow::Result<()> {
        self.state.pool.close().await;
        if keep {
            println!("database kept: {}", self.db_name);
            return Ok(());
        }
        let mut admin = self.cluster.connect_options("postgres").connect().await?;
        sqlx::query(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.db_name)).execute(&mut admin).await?;
        admin.close().await?;
        Ok(())
    }

    async fn ingest(&self, episodes: &[NewEpisode]) -> anyhow::Result<()> {
        for chunk in episodes.chunks(INGEST_BATCH) {
            mnemo::services::episodes::ingest_batch(
                self.pool(),
                &self.state.tenants,
                &self.state.webhooks,
                &self.state.lexer,
                TENANT,
                chunk.to_vec(),
            )
            .await?;
        }
        Ok(())
    }

    /// Compiles the subject's backlog; returns (memories created, batches).
    async fn compile_all(&self, subject: &str) -> anyhow::Result<(usize, usize)> {
        let (mut memories, mut batches) = (0, 0);
        loop {
            let out = mnemo::services::compile::compile_batch(
                self.pool(),
                &self.state.embedder,
                &self.state.webhooks,
                TENANT,
                subject,
                COMPILE_BATCH,
                None,
            )
            .await?;
            memories += out.memories.len();
            batches += 1;
            if !out.has_more {
                return Ok((memories, batches));
            }
        }
    }

    /// Clones `src` `copies` times into `dst` with `bench/sql/clone_subject.sql`, as the superuser.
    async fn clone_subject(&self, src: &str, dst: &str, copies: usize) -> anyhow::Result<()> {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench/sql/clone_subject.sql");
        let sql = std::fs::read_to_string(path)?
            .lines()
            .filter(|l| !l.starts_with('\\'))
            .collect::<Vec<_>>()
            .join("\n")
            .replace(":'tenant'", &format!("'{TENANT}'"))
            .replace(":'src'", &format!("'{src}'"))
            .replace(":'dst'", &format!("'{dst}'"))
            .replace(":copies", &copies.to_string());
        let mut admin = self.cluster.connect_options(&self.db_name).connect().await?;
        sqlx::raw_sql(&sql).execute(&mut admin).await?;
        sqlx::raw_sql("VACUUM ANALYZE").execute(&mut admin).await?;
        admin.close().await?;
        Ok(())
    }

    async fn memory_counts(&self, subject: &str) -> anyhow::Result<(i64, i64)> {
        let mut tx = mnemo::db::scope::begin(self.pool(), TENANT).await?;
        let row: (i64, i64) = sqlx::query_as(
            "SELECT count(*), count(*) FILTER (WHERE status = 'active') FROM memories WHERE tenant_id = $1 AND subject_id = $2",
        )
        .bind(TENANT)
        .bind(subject)
        .fetch_one(&mut *tx)
        .await?;
        Ok(row)
    }

    async fn context(
        &self,
        cache: &TaskVectorCache,
        subject: &str,
        task: &str,
        max_tokens: usize,
        options: RetrievalOptions,
    ) -> anyhow::Result<String> {
        self.context_on(self.pool(), cache, subject, task, max_tokens, options).await
    }

    async fn context_on(
        &self,
        pool: &PgPool,
        cache: &TaskVectorCache,
        subject: &str,
        task: &str,
        max_tokens: usize,
        options: RetrievalOptions,
    ) -> anyhow::Result<String> {
        let req = ContextRequest {
            subject_id: subject.to_string(),
            task: task.to_string(),
            max_tokens,
            session_id: None,
            as_of: None,
            options,
            policy: Default::default(),
        };
        Ok(assemble(pool, &self.state.embedder, cache, &self.state.subjects, TENANT, &req).await?.assembled_context)
    }

    /// Runs context calls on a fresh connection with auto_explain on (every statement's plan with
    /// actual rows, times and buffers) and prints the plan lines from the cluster's log.
    async fn explain(&self, subject: &str, tasks: &[String], max_tokens: usize) -> anyhow::Result<()> {
        let log = self.cluster.socket_dir().parent().context("cluster root")?.join("postgres.log");
        let db = &self.db_name;
        let mut admin = self.cluster.connect_options(db).connect().await?;
        for setting in [
            "session_preload_libraries = 'auto_explain'",
            "auto_explain.log_min_duration = 0",
            "auto_explain.log_analyze = on",
            "auto_explain.log_buffers = on",
            "auto_explain.log_nested_statements = on",
        ] {
            sqlx::raw_sql(&format!("ALTER DATABASE {db} SET {setting}")).execute(&mut admin).await?;
        }
        let start = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
        let pool = mnemo::db::pool::connect_app(self.cluster.connect_options(db), 1).await?;
        let cache = TaskVectorCache::default();
        let result = async {
            for task in tasks {
                self.context_on(&pool, &cache, subject, task, max_tokens, RetrievalOptions::default()).await?;
            }
            anyhow::Ok(())
        }
        .await;
        pool.close().await;
        sqlx::raw_sql(&format!("ALTER DATABASE {db} RESET ALL")).execute(&mut admin).await?;
        result?;
        let text = std::fs::read(&log)?;
        let text = String::from_utf8_lossy(&text[start as usize..]);
        let keep = ["duration:", "Scan", "Sort", "Join", "Loop", "Limit", "Removed", "Heap Fetches", "Index Cond"];
        println!("\n## plans of {} context call(s) on {subject} (auto_explain)", tasks.len());
        for line in text.lines().filter(|l| !l.contains("never executed") && keep.iter().any(|k| l.contains(k))) {
            println!("{}", line.chars().take(200).collect::<String>());
        }
        Ok(())
    }
}

/// CPU time used so far by this process (mnemo, sqlx, the embedder; not Postgres), from /proc.
fn process_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th, in USER_HZ (100).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<f64> = rest.split_whitespace().map(|x| x.parse().unwrap_or(0.0)).collect();
    (f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0)) / 100.0
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    if xs.is_empty() {
        return f64::NAN;
    }
    let m = xs.len() / 2;
    if xs.len() % 2 == 1 {
        xs[m]
    } else {
        (xs[m - 1] + xs[m]) / 2.0
    }
}

/// Nearest-rank percentile of sorted millisecond values.
fn pct(sorted: &[f64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

async fn compile_scenario(b: &Bench, a: &Args) -> anyhow::Result<()> {
    println!("| run | episodes | memories | ingest ep/s | compile s | episodes/s | memories/s | embed share | mnemo-side CPU |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let (mut eps, mut mps) = (Vec::new(), Vec::new());
    for run in 0..a.runs {
        let subject = format!("compile-{run}");
        let episodes = data::chat_episodes(&subject, 0, a.n);
        let t = Instant::now();
        b.ingest(&episodes).await?;
        let ingest = t.elapsed().as_secs_f64();
        b.timed.take();
        let cpu = process_cpu();
        let t = Instant::now();
        let (memories, _batches) = b.compile_all(&subject).await?;
        let secs = t.elapsed().as_secs_f64();
        let cpu = process_cpu() - cpu;
        let (embed, _) = b.timed.take();
        let (e, m) = (a.n as f64 / secs, memories as f64 / secs);
        eps.push(e);
        mps.push(m);
        println!(
            "| {} | {} | {memories} | {:.0} | {secs:.2} | {e:.0} | {m:.0} | {:.0}% | {:.0}% |",
            run + 1,
            a.n,
            a.n as f64 / ingest,
            100.0 * embed.as_secs_f64() / secs,
            100.0 * cpu / secs
        );
    }
    println!(
        "\nRESULT compile embedder={} episodes={} median episodes/s={:.0} memories/s={:.0}",
        a.embedder,
        a.n,
        median(eps),
        median(mps)
    );
    Ok(())
}

/// Grows a subject until at least `target` memories were created; returns (memories, episodes, seconds).
async fn build_subject(b: &Bench, subject: &str, target: usize) -> anyhow::Result<(usize, usize, f64)> {
    let t = Instant::now();
    let (mut memories, mut episodes) = (0usize, 0usize);
    while memories < target {
        // Aim at the remaining count using the ratio seen so far (about 1.7 memories an episode).
        let ratio = if episodes == 0 { 1.7 } else { memories as f64 / episodes as f64 };
        let want = (((target - memories) as f64 / ratio).ceil() as usize).clamp(1, 1000);
        let eps = data::chat_episodes(subject, episodes, want);
        let round = Instant::now();
        b.ingest(&eps).await?;
        let ingested = round.elapsed().as_secs_f64();
        episodes += want;
        let cpu = process_cpu();
        b.timed.take();
        memories += b.compile_all(subject).await?.0;
        let (embed, _) = b.timed.take();
        println!(
            "  round: +{want} episodes (ingest {ingested:.1}s, compile {:.1}s: embed {:.1}s, mnemo CPU {:.1}s) -> {memories} memories",
            round.elapsed().as_secs_f64() - ingested,
            embed.as_secs_f64(),
            process_cpu() - cpu
        );
    }
    Ok((memories, episodes, t.elapsed().as_secs_f64()))
}

async fn context_scenario(b: &Bench, a: &Args) -> anyhow::Result<()> {
    let tasks = data::context_tasks(WARMUP + a.calls);
    let mut rows = Vec::new();
    for &size in &a.sizes {
        let subject = if a.grow > 1 { format!("context-{size}x{}", a.grow) } else { format!("context-{size}") };
        let (total, active) = b.memory_counts(&subject).await?;
        let (memories, total, active) = if total > 0 {
            println!("reusing {subject}: {active} active memories of {total}");
            (total as usize, total, active)
        } else {
            let base = format!("context-{size}");
            let (mut memories, episodes, secs) = if b.memory_counts(&base).await?.0 > 0 {
                (b.memory_counts(&base).await?.0 as usize, 0, 0.0)
            } else {
                build_subject(b, &base, size).await?
            };
            println!("built {base}: {episodes} episodes -> {memories} memories in {secs:.1}s");
            if a.grow > 1 {
                let t = Instant::now();
                b.clone_subject(&base, &subject, a.grow).await?;
                memories *= a.grow;
                println!("cloned {base} x{} into {subject} in {:.1}s", a.grow, t.elapsed().as_secs_f64());
            }
            let (total, active) = b.memory_counts(&subject).await?;
            (memories, total, active)
        };
        println!("{subject}: {memories} memories ({active} active of {total})");
        if a.explain {
            b.explain(&subject, &tasks[..2], a.max_tokens).await?;
            continue;
        }
        // Warm-up: connections, plans, caches.
        let cache = TaskVectorCache::default();
        for task in &tasks[..WARMUP] {
            b.context(&cache, &subject, task, a.max_tokens, RetrievalOptions::default()).await?;
        }
        b.timed.take();
        let cpu = process_cpu();
        let mut ms = Vec::with_capacity(a.calls);
        let mut chars = 0usize;
        for task in &tasks[WARMUP..] {
            let t = Instant::now();
            chars += b.context(&cache, &subject, task, a.max_tokens, RetrievalOptions::default()).await?.len();
            ms.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        let (embed, _) = b.timed.take();
        let cpu_ms = (process_cpu() - cpu) * 1000.0 / ms.len() as f64;
        ms.sort_by(f64::total_cmp);
        let mean = ms.iter().sum::<f64>() / ms.len() as f64;
        rows.push(format!(
            "| {} | {memories} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {mean:.1} | {:.1} | {cpu_ms:.0} | {} |",
            a.embedder,
            ms.len(),
            pct(&ms, 0.5),
            pct(&ms, 0.9),
            pct(&ms, 0.99),
            pct(&ms, 1.0),
            embed.as_secs_f64() * 1000.0 / ms.len() as f64,
            chars / ms.len()
        ));
    }
    println!(
        "\n| embedder | memories | calls | p50 ms | p90 ms | p99 ms | max ms | mean ms | embed ms/call | mnemo CPU ms/call | avg context chars |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
    println!("(max_tokens {}, sequential calls, distinct tasks so every call embeds its task)", a.max_tokens);
    Ok(())
}

async fn recall_scenario(b: &Bench, a: &Args) -> anyhow::Result<()> {
    let subject = "recall";
    let (history, _positions) = data::recall_history(subject, 20, 30);
    data::check_recall_data(&history)?;
    let t = Instant::now();
    b.ingest(&history).await?;
    let (memories, _) = b.compile_all(subject).await?;
    println!(
        "history: {} episodes (20 sessions x 30 turns), {} planted facts, {memories} memories, built in {:.1}s",
        history.len(),
        data::PLANTED.len(),
        t.elapsed().as_secs_f64()
    );
    let budgets = [1000usize, 2000, 4000];
    let overlap: Vec<bool> = data::PLANTED.iter().map(data::lexical_overlap).collect();
    let cache = TaskVectorCache::default();
    let mut found = vec![vec![false; data::PLANTED.len()]; budgets.len()];
    for (k, p) in data::PLANTED.iter().enumerate() {
        for (j, &budget) in budgets.iter().enumerate() {
            found[j][k] =
                b.context(&cache, subject, p.task, budget, RetrievalOptions::default()).await?.contains(p.value);
        }
    }
    let n_ov = overlap.iter().filter(|o| **o).count();
    println!(
        "\n| embedder | max_tokens | recall | with shared word ({n_ov}) | no shared word ({}) | missed |",
        overlap.len() - n_ov
    );
    println!("|---|---|---|---|---|---|");
    for (j, budget) in budgets.iter().enumerate() {
        let hit = |f: &dyn Fn(usize) -> bool| found[j].iter().enumerate().filter(|(k, h)| **h && f(*k)).count();
        let all = hit(&|_| true);
        let with = hit(&|k| overlap[k]);
        let without = hit(&|k| !overlap[k]);
        let missed: Vec<&str> =
            data::PLANTED.iter().zip(&found[j]).filter(|(_, h)| !**h).map(|(p, _)| p.value).collect();
        println!(
            "| {} | {budget} | {all}/{} = {:.2} | {with}/{n_ov} | {without}/{} | {} |",
            a.embedder,
            data::PLANTED.len(),
            all as f64 / data::PLANTED.len() as f64,
            overlap.len() - n_ov,
            missed.join(", ")
        );
    }
    ablation(b, a, &cache, subject, &budgets).await
}

/// Recall with one retrieval technique switched off at a time, to show what each contributes.
async fn ablation(
    b: &Bench,
    a: &Args,
    cache: &TaskVectorCache,
    subject: &str,
    budgets: &[usize],
) -> anyhow::Result<()> {
    let all = RetrievalOptions::default();
    let variants = [
        ("all techniques", all),
        ("no lexical lane", RetrievalOptions { lexical: false, ..all }),
        ("no semantic lane", RetrievalOptions { semantic: false, ..all }),
        ("no neighbour turns", RetrievalOptions { neighbours: false, ..all }),
        ("no session boost", RetrievalOptions { session_matches: false, ..all }),
        ("no dates in task", RetrievalOptions { dates: false, ..all }),
    ];
    println!(
        "\n| embedder | variant | {} |",
        budgets.iter().map(|t| format!("recall@{t}")).collect::<Vec<_>>().join(" | ")
    );
    println!("|---|---|{}", "---|".repeat(budgets.len()));
    for (name, opts) in variants {
        let mut cells = Vec::new();
        for &budget in budgets {
            let mut hits = 0;
            for p in data::PLANTED {
                hits += usize::from(b.context(cache, subject, p.task, budget, opts).await?.contains(p.value));
            }
            cells.push(format!("{:.2}", hits as f64 / data::PLANTED.len() as f64));
        }
        println!("| {} | {name} | {} |", a.embedder, cells.join(" | "));
    }
    Ok(())
}

/// The subject a LoCoMo conversation is stored under.
fn locomo_subject(conv: &locomo::Conversation) -> String {
    format!("locomo-{}", conv.id)
}

fn print_locomo(label: &str, a: &Args, tally: &locomo::Tally) {
    let (p50, p95) = locomo::latency(&tally.latencies);
    println!("\n### {label}\n\n{}", tally.report(&a.budgets));
    println!("context latency: p50 {p50:.1} ms, p95 {p95:.1} ms over {} calls", tally.latencies.len());
    println!("{}", tally.result_line(label, &a.budgets));
}

/// The LoCoMo protocol against a running server, over HTTP.
async fn locomo_http(a: &Args, url: &str, convs: &[locomo::Conversation]) -> anyhow::Result<()> {
    let client = reqwest::Client::new();
    let post = |path: &str, body: serde_json::Value| {
        let path = path.to_string();
        let mut r = client.post(format!("{url}{path}")).json(&body);
        if let Some(k) = &a.api_key {
            r = r.header("x-api-key", k);
        }
        async move {
            let resp = r.send().await.with_context(|| format!("POST {path}"))?;
            let status = resp.status();
            let body: serde_json::Value = resp.json().await?;
            if !status.is_success() {
                bail!("POST {path}: {status} {body}");
            }
            anyhow::Ok(body)
        }
    };
    println!(
        "# mnemo bench: locomo over HTTP at {url} | {} | {} conversations",
        chrono::Utc::now().format("%Y-%m-%d %H:%M UTC"),
        convs.len()
    );
    let mut tally = locomo::Tally::default();
    for conv in convs {
        let subject = locomo_subject(conv);
        let t = Instant::now();
        let mut dia_of = std::collections::HashMap::new();
        for chunk in conv.turns.chunks(INGEST_BATCH) {
            let episodes: Vec<_> = chunk.iter().map(|t| locomo::episode_json(&subject, t)).collect();
            let out = post("/v1/episodes/batch", serde_json::json!({ "episodes": episodes })).await?;
            for e in out["episodes"].as_array().into_iter().flatten() {
                if let (Some(id), Some(d)) = (e["id"].as_str(), e["metadata"]["dia_id"].as_str()) {
                    dia_of.insert(id.to_string(), d.to_string());
                }
            }
        }
        let mut memories = 0;
        loop {
            let out = post("/v1/memories/compile", serde_json::json!({ "subject_id": subject })).await?;
            memories += out["memories_created"].as_u64().unwrap_or(0);
            if out["has_more"].as_bool() != Some(true) {
                break;
            }
        }
        println!(
            "{}: {} turns, {} questions, {memories} new memories, ready in {:.1}s",
            conv.id,
            conv.turns.len(),
            conv.questions.len(),
            t.elapsed().as_secs_f64()
        );
        for q in &conv.questions {
            for &budget in &a.budgets {
                let t = Instant::now();
                let body = serde_json::json!({"subject_id": subject, "task": q.text, "max_tokens": budget});
                let bundle = post("/v1/context", body).await?;
                tally.latencies.push(t.elapsed().as_secs_f64() * 1000.0);
                let tokens = bundle["token_estimate"].as_u64().unwrap_or(0) as usize;
                tally.add(&conv.id, budget, q, &locomo::shown(&bundle, &dia_of), tokens);
                tally.bundle_text(bundle["assembled_context"].as_str().unwrap_or_default());
            }
        }
    }
    print_locomo("http", a, &tally);
    Ok(())
}

/// The default options with `--set` applied (names as in `Tuning`, short).
fn tuned(set: &[(String, f64)]) -> anyhow::Result<RetrievalOptions> {
    let mut o = RetrievalOptions::default();
    let t = &mut o.tuning;
    for (k, v) in set {
        let v = *v;
        match k.as_str() {
            "sem" => t.weights.semantic = v,
            "lex" => t.weights.lexical = v,
            "ctx" => t.weights.context = v,
            "prev" => t.smooth_prev = v,
            "next" => t.smooth_next = v,
            "nshare" => t.neighbour_share = v,
            "nsrc" => t.neighbour_sources = v as usize,
            "sess" => t.session_boost = v,
            "stop" => t.session_top = v as usize,
            "spk" => t.speaker_boost = v,
            "date" => t.date_boost = v,
            "month" => t.month_boost = v,
            "whole" => t.whole_turns = v as usize,
            "wshare" => t.whole_share = v as usize,
            "tchars" => t.turn_chars = v as usize,
            "tailfrom" => t.tail_from = v as usize,
            "tailchars" => t.tail_chars = v as usize,
            "lanetok" => t.lane_tokens = v as usize,
            "swhole" => t.span_whole = v as usize,
            "stailfrom" => t.span_tail_from = v as usize,
            "stailchars" => t.span_tail_chars = v as usize,
            "dshare" => t.digest_share = v as usize,
            other => bail!("--set: unknown name {other}"),
        }
    }
    Ok(o)
}

/// The LoCoMo protocol in-process (no HTTP), with `--ablate` one retrieval technique off at a time.
async fn locomo_in_process(b: &Bench, a: &Args, convs: &[locomo::Conversation]) -> anyhow::Result<()> {
    let mut dia_of = std::collections::HashMap::new();
    for conv in convs {
        let subject = locomo_subject(conv);
        let t = Instant::now();
        let eps: Vec<NewEpisode> = conv.turns.iter().map(|t| locomo::new_episode(&subject, t)).collect();
        for chunk in eps.chunks(INGEST_BATCH) {
            let (rows, _) = mnemo::services::episodes::ingest_batch(
                b.pool(),
                &b.state.tenants,
                &b.state.webhooks,
                &b.state.lexer,
                TENANT,
                chunk.to_vec(),
            )
            .await?;
            for e in rows {
                if let Some(d) = e.metadata.get("dia_id").and_then(|d| d.as_str()) {
                    dia_of.insert(e.id.to_string(), d.to_string());
                }
            }
        }
        let (memories, _) = b.compile_all(&subject).await?;
        println!(
            "{}: {} turns, {memories} new memories, ready in {:.1}s",
            conv.id,
            conv.turns.len(),
            t.elapsed().as_secs_f64()
        );
    }
    let all = tuned(&a.set)?;
    let label = match a.set.as_slice() {
        [] => "all techniques".to_string(),
        set => format!("all techniques, {}", set.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")),
    };
    let mut variants = vec![(label.as_str(), all)];
    if a.ablate {
        variants.extend([
            ("no lexical lane", RetrievalOptions { lexical: false, ..all }),
            ("no semantic lane", RetrievalOptions { semantic: false, ..all }),
            ("no smoothing", RetrievalOptions { smoothing: false, ..all }),
            ("no neighbour turns", RetrievalOptions { neighbours: false, ..all }),
            ("no session boost", RetrievalOptions { session_matches: false, ..all }),
            ("no speaker boost", RetrievalOptions { speakers: false, ..all }),
            ("no dates in task", RetrievalOptions { dates: false, ..all }),
            ("no compact lines", RetrievalOptions { compact: false, ..all }),
            ("names kept in the task vector", RetrievalOptions { unnamed_task_vector: false, ..all }),
            ("no excerpts (long turns whole)", RetrievalOptions { excerpts: false, ..all }),
        ]);
    }
    let cache = TaskVectorCache::default();
    for (label, opts) in variants {
        let mut tally = locomo::Tally::default();
        let mut depth = locomo::Depth::default();
        for conv in convs {
            let subject = locomo_subject(conv);
            for q in &conv.questions {
                for &budget in &a.budgets {
                    let req = ContextRequest {
                        subject_id: subject.clone(),
                        task: q.text.clone(),
                        max_tokens: budget,
                        session_id: None,
                        as_of: None,
                        options: opts,
                        policy: Default::default(),
                    };
                    let t = Instant::now();
                    let bundle = assemble(b.pool(), &b.state.embedder, &cache, &b.state.subjects, TENANT, &req).await?;
                    tally.latencies.push(t.elapsed().as_secs_f64() * 1000.0);
                    let view = serde_json::json!({
                        "episodes": bundle.episodes, "facts": bundle.facts, "procedures": bundle.procedures,
                    });
                    let shown = locomo::shown(&view, &dia_of);
                    if a.misses && q.evidence.iter().any(|e| !shown.contains(e)) {
                        locomo::print_miss(conv, q, budget, &shown);
                    }
                    tally.add(&conv.id, budget, q, &shown, bundle.token_estimate);
                    tally.bundle_text(&bundle.assembled_context);
                    if a.depth
                        && budget == a.budgets[a.budgets.len() / 2]
                        && q.evidence.iter().any(|e| !shown.contains(e))
                    {
                        let deep = ContextRequest { max_tokens: 1_000_000, ..req.clone() };
                        let all =
                            assemble(b.pool(), &b.state.embedder, &cache, &b.state.subjects, TENANT, &deep).await?;
                        let ranks = locomo::evidence_ranks(&all, &dia_of, &shown, &q.evidence);
                        if a.misses {
                            let cut = bundle.selected.len();
                            let score_at = |r: Option<usize>| {
                                r.and_then(|r| all.selected.get(r - 1)).map_or(f64::NAN, |s| s.score)
                            };
                            println!(
                                "    DEPTH included {cut} (last score {:.3}); missing at {:?}, scores {:?}",
                                all.selected.get(cut.saturating_sub(1)).map_or(f64::NAN, |s| s.score),
                                ranks,
                                ranks.iter().map(|r| format!("{:.3}", score_at(*r))).collect::<Vec<_>>()
                            );
                        }
                        depth.add(q, &ranks);
                    }
                }
            }
        }
        print_locomo(label, a, &tally);
        if a.depth {
            println!("{}", depth.report(a.budgets[a.budgets.len() / 2]));
        }
    }
    Ok(())
}

/// The BEAM protocol in-process: ingest, compile with the server's synchronous call (its time
/// budget and batch cap) until `has_more` is false, then every question at every budget.
/// Reports compile messages/s and tokens/s, where compile time went, MiniLM's own throughput on
/// the same texts in the same run, and all-evidence recall per budget and category.
async fn beam_in_process(b: &Bench, a: &Args) -> anyhow::Result<()> {
    let Some(chats) = beam::load(&a.data, &a.convs)? else {
        println!("beam: skipped, {} is absent (the BEAM dev set is kept outside the repository)", a.data.display());
        return Ok(());
    };
    let deps = mnemo::services::compile::CompileDeps {
        pool: b.pool(),
        embedder: &b.state.embedder,
        hooks: &b.state.webhooks,
        compiler: &b.state.config.compiler,
    };
    let limits = mnemo::services::compile_budget::CallLimits {
        max_episodes: b.state.config.compile_batch_size,
        budget: b.state.config.compile_budget(),
    };
    println!("\n| chat | messages | tokens | compile s | messages/s | tokens/s | calls | longest call s | memories |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut msg_of = std::collections::HashMap::new();
    let (mut all_msgs, mut all_tokens, mut all_secs, mut all_embed) = (0usize, 0usize, 0f64, 0f64);
    let mut embedded = 0u64;
    let mut phases = mnemo::services::compile::Phases::default();
    for chat in &chats {
        let subject = format!("beam-{}", chat.id);
        // A database kept from an earlier run (`--db`) already holds the chat, compiled.
        let kept: Vec<(uuid::Uuid, Option<String>)> = {
            let mut tx = mnemo::db::scope::begin(b.pool(), TENANT).await?;
            let rows = sqlx::query_as("SELECT id, metadata->>'msg_id' FROM episodes WHERE subject_id = $1")
                .bind(&subject)
                .fetch_all(&mut *tx)
                .await?;
            tx.commit().await?;
            rows
        };
        if !kept.is_empty() {
            msg_of.extend(kept.into_iter().filter_map(|(id, m)| Some((id.to_string(), m?))));
            println!("| {} | kept from an earlier run | | | | | | | |", chat.id);
            continue;
        }
        let eps: Vec<NewEpisode> = chat.messages.iter().map(|m| beam::new_episode(&subject, m)).collect();
        for chunk in eps.chunks(INGEST_BATCH) {
            let (rows, _) = mnemo::services::episodes::ingest_batch(
                b.pool(),
                &b.state.tenants,
                &b.state.webhooks,
                &b.state.lexer,
                TENANT,
                chunk.to_vec(),
            )
            .await?;
            for e in rows {
                if let Some(d) = e.metadata.get("msg_id").and_then(|d| d.as_str()) {
                    msg_of.insert(e.id.to_string(), d.to_string());
                }
            }
        }
        let tokens: usize = chat.messages.iter().map(|m| mnemo::bundle::tokens::count(&m.content)).sum();
        b.timed.take();
        let t = Instant::now();
        let (mut calls, mut longest, mut memories) = (0, 0f64, 0);
        loop {
            let c = Instant::now();
            let out = mnemo::services::compile_budget::compile_within(deps, TENANT, &subject, limits, None).await?;
            longest = longest.max(c.elapsed().as_secs_f64());
            calls += 1;
            memories += out.memories.len();
            phases.add(&out.phases);
            if !out.has_more {
                break;
            }
        }
        let secs = t.elapsed().as_secs_f64();
        let (embed, texts) = b.timed.take();
        let n = chat.messages.len();
        println!(
            "| {} | {n} | {tokens} | {secs:.1} | {:.1} | {:.0} | {calls} | {longest:.1} | {memories} |",
            chat.id,
            n as f64 / secs,
            tokens as f64 / secs
        );
        (all_msgs, all_tokens, all_secs, all_embed) =
            (all_msgs + n, all_tokens + tokens, all_secs + secs, all_embed + embed.as_secs_f64());
        embedded += texts;
    }
    if all_msgs > 0 {
        compile_report(b, &chats, (all_msgs, all_tokens, all_secs, all_embed), embedded, &phases)?;
    }
    // The passages compile wrote get their vectors from the server's background worker; here,
    // alone, before the questions, and timed apart from compile.
    let t = Instant::now();
    let filled = mnemo::services::passages::fill_all(b.pool(), &b.state.embedder).await?;
    if filled > 0 {
        let secs = t.elapsed().as_secs_f64();
        println!(
            "passages: {filled} embedded in {secs:.1} s ({:.1} passages/s, the background worker's work)",
            filled as f64 / secs
        );
    }
    if a.compile_only {
        return Ok(());
    }
    let cache = TaskVectorCache::default();
    let options = tuned(&a.set)?;
    let mut tally = beam::Tally::default();
    let mut depth = beam::Depth::default();
    let mut stages: Vec<[f64; 3]> = Vec::new();
    for chat in &chats {
        let subject = format!("beam-{}", chat.id);
        for q in &chat.questions {
            for &budget in &a.budgets {
                let req = ContextRequest {
                    subject_id: subject.clone(),
                    task: q.text.clone(),
                    max_tokens: budget,
                    session_id: None,
                    as_of: None,
                    options,
                    policy: Default::default(),
                };
                // The stages of `assemble`, timed apart: the task's vector, retrieval (Postgres
                // and the in-process lanes), and suppression, ranking and packing.
                let t = Instant::now();
                let probe = mnemo::services::context::probe(&b.state.embedder, &cache, TENANT, &req).await?;
                let t_probe = t.elapsed();
                let (found, _) =
                    mnemo::services::context::candidates::retrieve(b.pool(), &probe, &req.options, &b.state.subjects)
                        .await?;
                let t_found = t.elapsed();
                let bundle = mnemo::services::context::bundle(found, &probe, &req, &req.policy);
                tally.latencies.push(t.elapsed().as_secs_f64() * 1000.0);
                stages.push([t_probe, t_found - t_probe, t.elapsed() - t_found].map(|d| d.as_secs_f64() * 1000.0));
                let view = serde_json::json!({
                    "episodes": bundle.episodes, "facts": bundle.facts, "procedures": bundle.procedures,
                });
                let shown = mnemo::eval::run::shown(&view, &msg_of);
                tally.add(budget, q, &shown);
                // BENCH_PRINT=<words of a question>: that question's bundle text, to read it.
                if std::env::var("BENCH_PRINT").is_ok_and(|w| !w.is_empty() && q.text.contains(&w)) {
                    println!("--- {budget} tokens: {}\n{}\n---", q.text, bundle.assembled_context);
                }
                if a.depth && q.evidence.iter().any(|e| !shown.contains(e)) {
                    let deep = ContextRequest { max_tokens: 1_000_000, ..req.clone() };
                    let all = assemble(b.pool(), &b.state.embedder, &cache, &b.state.subjects, TENANT, &deep).await?;
                    let ranks = locomo::evidence_ranks(&all, &msg_of, &shown, &q.evidence);
                    depth.add(budget, &q.category, bundle.selected.len(), &ranks);
                    // BENCH_MISSES=1: each missed question, its held items and its missing
                    // evidence's ranks (needs --depth).
                    if std::env::var("BENCH_MISSES").is_ok_and(|v| v == "1") {
                        println!(
                            "miss {budget} {} held {} ranks {:?}: {}",
                            q.category,
                            bundle.selected.len(),
                            ranks,
                            q.text
                        );
                    }
                }
            }
        }
    }
    let (p50, p95) = locomo::latency(&tally.latencies);
    println!("\n{}", tally.report(&a.budgets));
    println!("context latency: p50 {p50:.1} ms, p95 {p95:.1} ms over {} calls", tally.latencies.len());
    let median = |i: usize| {
        let mut v: Vec<f64> = stages.iter().map(|s| s[i]).collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    println!(
        "context stages (medians): task vector {:.2} ms, retrieval {:.2} ms, suppress+rank+pack {:.2} ms",
        median(0),
        median(1),
        median(2)
    );
    if a.depth {
        println!("\n{}", depth.report());
    }
    Ok(())
}

/// BEAM compile figures: messages and tokens per second, where the time went, and MiniLM's own
/// throughput on the first messages in the same run.
fn compile_report(
    b: &Bench,
    chats: &[beam::Chat],
    (all_msgs, all_tokens, all_secs, all_embed): (usize, usize, f64, f64),
    embedded: u64,
    phases: &mnemo::services::compile::Phases,
) -> anyhow::Result<()> {
    println!(
        "\ncompile: {all_msgs} messages, {all_tokens} tokens in {all_secs:.1} s: {:.1} messages/s, {:.0} tokens/s",
        all_msgs as f64 / all_secs,
        all_tokens as f64 / all_secs
    );
    let share = |d: Duration| format!("{:.1} s ({:.0}%)", d.as_secs_f64(), 100.0 * d.as_secs_f64() / all_secs);
    println!(
        "where compile time went: read {}, extract {}, link {}, embed {}, insert {}, supersede {}, digest {}, finish {}",
        share(phases.read),
        share(phases.extract),
        share(phases.link),
        share(phases.embed),
        share(phases.insert),
        share(phases.supersede),
        share(phases.digest),
        share(phases.finish)
    );
    println!("embedder: {embedded} texts in {all_embed:.1} s ({:.1} texts/s)", embedded as f64 / all_embed.max(1e-9));
    // The model's own throughput, same run: the first 128 messages, and a one-line text each.
    let sample: Vec<String> = chats.iter().flat_map(|c| &c.messages).take(128).map(|m| m.content.clone()).collect();
    let short: Vec<String> = sample.iter().map(|m| m.chars().take(120).collect()).collect();
    for (label, texts) in [("whole messages (up to 256 tokens)", &sample), ("120-char lines", &short)] {
        let t = Instant::now();
        b.timed.inner.embed(texts)?;
        let secs = t.elapsed().as_secs_f64();
        println!("MiniLM alone, {label}: {:.1} texts/s", texts.len() as f64 / secs);
    }
    Ok(())
}

fn profile() -> &'static str {
    if cfg!(debug_assertions) {
        "dev (deps opt-level 2, mnemo unoptimised)"
    } else {
        "release"
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let a = parse_args()?;
    let convs = if a.scenario == "locomo" {
        let Some(convs) = locomo::load(&a.data, &a.convs)? else {
            println!(
                "locomo: skipped, {} is absent (the LoCoMo dev set is kept outside the repository, see bench/README.md)",
                a.data.display()
            );
            return Ok(());
        };
        if let Some(url) = &a.url {
            return locomo_http(&a, url, &convs).await;
        }
        convs
    } else {
        Vec::new()
    };
    let b = Bench::setup(&a.embedder, a.db.as_deref()).await?;
    let pg: String = sqlx::query_scalar("SHOW server_version").fetch_one(b.pool()).await?;
    let fsync: String = sqlx::query_scalar("SHOW fsync").fetch_one(b.pool()).await?;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    println!(
        "# mnemo bench: {} | embedder {} | profile {} | nproc {} | load {load} | {} | postgres {pg} (fsync {fsync})",
        a.scenario,
        a.embedder,
        profile(),
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        chrono::Utc::now().format("%Y-%m-%d %H:%M UTC"),
    );
    let result = match a.scenario.as_str() {
        "beam" => beam_in_process(&b, &a).await,
        "compile" => compile_scenario(&b, &a).await,
        "context" => context_scenario(&b, &a).await,
        "locomo" => locomo_in_process(&b, &a, &convs).await,
        _ => recall_scenario(&b, &a).await,
    };
    let keep = a.keep_db || a.db.is_some();
    b.teardown(keep).await?;
    result
}
