//! `loadgen`: the HTTP load generator of mnemo's benchmark suite (see `bench/README.md`).
//!
//! - `load --rate R` is open loop: request i is *intended* at `start + i/R` and its latency is
//!   measured from that instant, not from when it was actually sent. A stalled server therefore
//!   shows up as latency of every request that should have been sent during the stall
//!   (no coordinated omission). Requests that find `--concurrency` requests in flight wait for
//!   a slot, and that wait counts too.
//! - `load --rate 0` is closed loop: `--concurrency` workers send back to back; the figure is
//!   throughput (latency there is service time, not what a client at a fixed rate would see).
//! - `seed`, `delete`: ingest + compile a subject and time it; erase subjects and time it.
//! - `baseline-server`: a trivial axum handler (the machine's HTTP ceiling).
//!
//! Every measurement also samples the mnemo process (`--pid`): peak RSS (VmHWM after resetting
//! it through `/proc/PID/clear_refs`, and the sampled VmRSS maximum) and CPU of mnemo, of all
//! `postgres` processes and of the load generator itself. Each command prints one JSON line.

mod data;
mod probe;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use clap::{Args, Parser, Subcommand, ValueEnum};
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};

use probe::Probe;

type HttpClient = Client<HttpConnector, Full<Bytes>>;

#[derive(Parser)]
#[command(name = "loadgen", about = "HTTP load generator for mnemo benchmarks")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Fixed-rate (open loop) or max-throughput (closed loop) run of one scenario.
    Load(LoadArgs),
    /// Ingest episodes for one subject through the batch endpoint, then compile them (timed).
    Seed(SeedArgs),
    /// Seed subjects with episodes, then time DELETE /v1/subjects/{id} for each.
    Delete(DeleteArgs),
    /// A trivial axum server: GET / answers "ok", POST /echo parses JSON and answers a small object.
    BaselineServer {
        #[arg(long, default_value = "127.0.0.1:8199")]
        addr: String,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
enum Scenario {
    /// POST /v1/episodes, one episode, spread over --subjects subjects.
    Ingest,
    /// POST /v1/episodes/batch with --batch-size episodes of one subject (of --subjects).
    Batch,
    /// POST /v1/context for --subject, tasks cycled from a list of distinct tasks.
    Context,
    /// An agent's loop over --subjects subjects named `<--subject>-<k>`: one episode for a
    /// subject, then a context call on it, then the next subject.
    Turns,
    /// GET --path (health probe or the baseline server).
    Get,
    /// POST --path with a small JSON body (baseline server's /echo).
    Echo,
}

#[derive(Args, Clone)]
struct Common {
    /// Base URL of the server.
    #[arg(long, default_value = "http://127.0.0.1:8100")]
    url: String,
    /// Process to sample for RSS and CPU (the mnemo server).
    #[arg(long)]
    pid: Option<u32>,
    /// Free-form label copied into the JSON output.
    #[arg(long, default_value = "")]
    label: String,
    /// Value of X-Tenant-ID (none: the default tenant).
    #[arg(long)]
    tenant: Option<String>,
}

#[derive(Args)]
struct LoadArgs {
    #[command(flatten)]
    common: Common,
    #[arg(long, value_enum)]
    scenario: Scenario,
    /// Requests per second (open loop); 0 = closed loop at maximum throughput.
    #[arg(long, default_value_t = 0.0)]
    rate: f64,
    /// Closed loop: workers. Open loop: most requests in flight (more wait, and the wait counts).
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Seconds measured.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Seconds of the same load before measuring (discarded).
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// Context: the subject. Ingest/batch: prefix of the subjects written.
    #[arg(long, default_value = "load")]
    subject: String,
    /// Ingest/batch: number of subjects the writes are spread over.
    #[arg(long, default_value_t = 100)]
    subjects: usize,
    #[arg(long, default_value_t = 100)]
    batch_size: usize,
    /// Context: emit_receipt in the request (absent: tenant config decides).
    #[arg(long)]
    receipts: Option<bool>,
    #[arg(long, default_value_t = 4000)]
    max_tokens: u32,
    /// Context: cycle over this many distinct tasks (repeats hit the task-vector cache).
    #[arg(long, default_value_t = 2000)]
    tasks: usize,
    /// Get/echo: the path.
    #[arg(long, default_value = "/")]
    path: String,
    /// Seed of the data stream (use a new one per run so ingest never repeats idempotently).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Args)]
struct SeedArgs {
    #[command(flatten)]
    common: Common,
    #[arg(long)]
    subject: String,
    #[arg(long)]
    episodes: usize,
    /// Position in the deterministic stream (continue a subject: pass the count already sent).
    #[arg(long, default_value_t = 0)]
    offset: usize,
    #[arg(long, default_value_t = 100)]
    batch_size: usize,
    /// Batches in flight (they serialise on the subject's counter row; 2 overlaps HTTP and SQL).
    #[arg(long, default_value_t = 2)]
    concurrency: usize,
    /// Compile after ingest (sync compile until has_more is false), timed separately.
    #[arg(long)]
    compile: bool,
    /// Ingest this many episodes, compile, and repeat (growing subjects in rounds).
    #[arg(long)]
    round: Option<usize>,
}

#[derive(Args)]
struct DeleteArgs {
    #[command(flatten)]
    common: Common,
    #[arg(long, default_value = "del")]
    prefix: String,
    #[arg(long, default_value_t = 10_000)]
    episodes: usize,
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Compile each subject before deleting it (so memories and embeddings go too).
    #[arg(long)]
    compile: bool,
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::BaselineServer { addr } => {
            // The same runtime shape as mnemo's #[tokio::main]: one worker per core.
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            rt.block_on(baseline_server(addr))
        }
        cmd => {
            // The client uses one thread, so it takes at most one of the machine's cores.
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            let out = rt.block_on(async move {
                match cmd {
                    Cmd::Load(a) => load(a).await,
                    Cmd::Seed(a) => seed(a).await,
                    Cmd::Delete(a) => delete(a).await,
                    Cmd::BaselineServer { .. } => unreachable!(),
                }
            })?;
            println!("{out}");
            Ok(())
        }
    }
}

async fn baseline_server(addr: String) -> Result<()> {
    use axum::routing::{get, post};
    let app = axum::Router::new().route("/", get(|| async { "ok" })).route(
        "/echo",
        post(|axum::Json(v): axum::Json<Value>| async move { axum::Json(json!({"ok": v.is_object()})) }),
    );
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("baseline server on {addr}");
    axum::serve(listener, app).await?;
    Ok(())
}

fn client(pool: usize) -> HttpClient {
    let mut conn = HttpConnector::new();
    conn.set_nodelay(true);
    Client::builder(TokioExecutor::new()).pool_max_idle_per_host(pool).build(conn)
}

/// One request to send.
#[derive(Clone)]
struct Req {
    method: Method,
    path: String,
    body: Option<Bytes>,
}

/// Sends a request; returns the status and the body.
async fn send(c: &HttpClient, base: &str, tenant: Option<&str>, r: &Req) -> Result<(u16, Bytes)> {
    let mut b = Request::builder().method(r.method.clone()).uri(format!("{base}{}", r.path));
    if r.body.is_some() {
        b = b.header("content-type", "application/json");
    }
    if let Some(t) = tenant {
        b = b.header("x-tenant-id", t);
    }
    let req = b.body(Full::new(r.body.clone().unwrap_or_default()))?;
    let resp = c.request(req).await?;
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await?.to_bytes();
    Ok((status, body))
}

async fn send_json(c: &HttpClient, common: &Common, method: Method, path: &str, body: Option<Value>) -> Result<Value> {
    let r = Req { method, path: path.to_string(), body: body.map(|b| Bytes::from(b.to_string())) };
    let (status, bytes) = send(c, &common.url, common.tenant.as_deref(), &r).await?;
    if !(200..300).contains(&status) {
        bail!("{} {} -> {status}: {}", r.method, r.path, String::from_utf8_lossy(&bytes));
    }
    Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// Produces the requests of a load scenario.
struct Gen {
    scenario: Scenario,
    subject: String,
    subjects: usize,
    batch_size: usize,
    receipts: Option<bool>,
    max_tokens: u32,
    path: String,
    episodes: data::Episodes,
    tasks: Vec<String>,
    i: usize,
}

impl Gen {
    fn new(a: &LoadArgs) -> Self {
        Gen {
            scenario: a.scenario,
            subject: a.subject.clone(),
            subjects: a.subjects.max(1),
            batch_size: a.batch_size,
            receipts: a.receipts,
            max_tokens: a.max_tokens,
            path: a.path.clone(),
            episodes: data::Episodes::new(a.seed),
            tasks: if matches!(a.scenario, Scenario::Context | Scenario::Turns) {
                data::context_tasks(a.tasks.max(1))
            } else {
                Vec::new()
            },
            i: 0,
        }
    }

    fn next(&mut self) -> Req {
        let i = self.i;
        self.i += 1;
        let post = |path: &str, v: Value| Req {
            method: Method::POST,
            path: path.into(),
            body: Some(Bytes::from(v.to_string())),
        };
        match self.scenario {
            Scenario::Ingest => {
                let s = format!("{}-{}", self.subject, i % self.subjects);
                post("/v1/episodes", self.episodes.next(&s))
            }
            Scenario::Batch => {
                let s = format!("{}-{}", self.subject, i % self.subjects);
                let eps: Vec<Value> = (0..self.batch_size).map(|_| self.episodes.next(&s)).collect();
                post("/v1/episodes/batch", json!({ "episodes": eps }))
            }
            Scenario::Context => {
                let mut v = json!({
                    "subject_id": self.subject,
                    "task": self.tasks[i % self.tasks.len()],
                    "max_tokens": self.max_tokens,
                });
                if let Some(r) = self.receipts {
                    v["emit_receipt"] = json!(r);
                }
                post("/v1/context", v)
            }
            Scenario::Turns => {
                let s = format!("{}-{}", self.subject, (i / 2) % self.subjects);
                if i.is_multiple_of(2) {
                    return post("/v1/episodes", self.episodes.next(&s));
                }
                let mut v = json!({
                    "subject_id": s,
                    "task": self.tasks[(i / 2) % self.tasks.len()],
                    "max_tokens": self.max_tokens,
                });
                if let Some(r) = self.receipts {
                    v["emit_receipt"] = json!(r);
                }
                post("/v1/context", v)
            }
            Scenario::Get => Req { method: Method::GET, path: self.path.clone(), body: None },
            Scenario::Echo => post(&self.path, json!({"subject_id": "x", "task": "ping", "max_tokens": 10})),
        }
    }

    /// Items a request carries (episodes per batch), for items/s.
    fn items(&self) -> usize {
        if self.scenario == Scenario::Batch {
            self.batch_size
        } else {
            1
        }
    }
}

#[derive(Default)]
struct Samples {
    lat_us: Vec<u64>,
    errors: usize,
    first_error: Option<String>,
}

impl Samples {
    fn record(&mut self, lat: Duration, res: &Result<(u16, Bytes)>) {
        self.lat_us.push(lat.as_micros() as u64);
        let err = match res {
            Ok((s, _)) if (200..300).contains(s) => None,
            Ok((s, b)) => Some(format!("status {s}: {}", String::from_utf8_lossy(&b[..b.len().min(300)]))),
            Err(e) => Some(format!("{e:#}")),
        };
        if let Some(e) = err {
            self.errors += 1;
            self.first_error.get_or_insert(e);
        }
    }
}

/// Nearest-rank percentile of sorted values.
fn pct(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1] as f64 / 1000.0
}

fn latency_json(lat_us: &mut [u64]) -> Value {
    lat_us.sort_unstable();
    let mean =
        if lat_us.is_empty() { f64::NAN } else { lat_us.iter().sum::<u64>() as f64 / lat_us.len() as f64 / 1000.0 };
    json!({
        "p50": pct(lat_us, 50.0), "p90": pct(lat_us, 90.0), "p99": pct(lat_us, 99.0),
        "p999": pct(lat_us, 99.9), "max": pct(lat_us, 100.0), "mean": mean,
    })
}

/// Open loop: request i is due at start + i/rate; latency counts from the due time.
async fn open_loop(c: &HttpClient, a: &LoadArgs, gen: &Arc<Mutex<Gen>>, secs: f64) -> (Samples, f64) {
    let sem = Arc::new(tokio::sync::Semaphore::new(a.concurrency.max(1)));
    let samples = Arc::new(Mutex::new(Samples::default()));
    let total = (a.rate * secs).round() as u64;
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..total {
        let due = start + Duration::from_secs_f64(i as f64 / a.rate);
        if due > Instant::now() {
            tokio::time::sleep_until(due.into()).await;
        }
        let req = gen.lock().expect("gen").next();
        let (c, sem, samples, base, tenant) =
            (c.clone(), sem.clone(), samples.clone(), a.common.url.clone(), a.common.tenant.clone());
        tasks.spawn(async move {
            let _slot = sem.acquire_owned().await;
            let res = send(&c, &base, tenant.as_deref(), &req).await;
            let lat = due.elapsed();
            samples.lock().expect("samples").record(lat, &res);
        });
        // Reap finished tasks so the set does not grow without bound.
        while tasks.try_join_next().is_some() {}
    }
    let drain = tokio::time::timeout(Duration::from_secs(60), async { while tasks.join_next().await.is_some() {} });
    let unfinished = if drain.await.is_err() { tasks.len() } else { 0 };
    let elapsed = start.elapsed().as_secs_f64();
    let mut s = std::mem::take(&mut *samples.lock().expect("samples"));
    if unfinished > 0 {
        s.errors += unfinished;
        s.first_error.get_or_insert(format!("{unfinished} requests unfinished after 60 s"));
    }
    (s, elapsed)
}

/// Closed loop: `concurrency` workers send back to back until the deadline.
async fn closed_loop(c: &HttpClient, a: &LoadArgs, gen: &Arc<Mutex<Gen>>, secs: f64) -> (Samples, f64) {
    let samples = Arc::new(Mutex::new(Samples::default()));
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(secs);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..a.concurrency.max(1) {
        let (c, gen, samples, base, tenant) =
            (c.clone(), gen.clone(), samples.clone(), a.common.url.clone(), a.common.tenant.clone());
        tasks.spawn(async move {
            while Instant::now() < deadline {
                let req = gen.lock().expect("gen").next();
                let t = Instant::now();
                let res = send(&c, &base, tenant.as_deref(), &req).await;
                samples.lock().expect("samples").record(t.elapsed(), &res);
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    let elapsed = start.elapsed().as_secs_f64();
    let s = std::mem::take(&mut *samples.lock().expect("samples"));
    (s, elapsed)
}

async fn load(a: LoadArgs) -> Result<Value> {
    let c = client(a.concurrency.max(1));
    let gen = Arc::new(Mutex::new(Gen::new(&a)));
    let open = a.rate > 0.0;
    if a.warmup > 0.0 {
        if open {
            open_loop(&c, &a, &gen, a.warmup).await;
        } else {
            closed_loop(&c, &a, &gen, a.warmup).await;
        }
    }
    let probe = Probe::start(a.common.pid);
    let (mut s, elapsed) =
        if open { open_loop(&c, &a, &gen, a.duration).await } else { closed_loop(&c, &a, &gen, a.duration).await };
    let machine = probe.finish().await;
    let n = s.lat_us.len();
    let ok = n.saturating_sub(s.errors);
    let items = gen.lock().expect("gen").items();
    Ok(json!({
        "cmd": "load",
        "label": a.common.label,
        "scenario": format!("{:?}", a.scenario).to_lowercase(),
        "mode": if open { "fixed_rate" } else { "max_throughput" },
        "rate_target": a.rate,
        "concurrency": a.concurrency,
        "duration_s": elapsed,
        "requests": n,
        "ok": ok,
        "errors": s.errors,
        "first_error": s.first_error,
        "throughput_rps": ok as f64 / elapsed,
        "items_per_s": (ok * items) as f64 / elapsed,
        "items_per_request": items,
        "latency_ms": latency_json(&mut s.lat_us),
        "subject": a.subject,
        "receipts": a.receipts,
        "machine": machine,
    }))
}

/// Ingests `n` episodes (offset `off` in the stream) through the batch endpoint.
async fn ingest(
    c: &HttpClient,
    common: &Common,
    subject: &str,
    off: usize,
    n: usize,
    batch: usize,
    conc: usize,
) -> Result<()> {
    let mut stream = data::Episodes::new(0);
    for _ in 0..off {
        stream.next(subject);
    }
    let mut bodies = Vec::new();
    let mut left = n;
    while left > 0 {
        let k = left.min(batch);
        left -= k;
        let eps: Vec<Value> = (0..k).map(|_| stream.next(subject)).collect();
        bodies.push(json!({ "episodes": eps }));
    }
    let sem = Arc::new(tokio::sync::Semaphore::new(conc.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for b in bodies {
        let (c, common, permit) = (c.clone(), common.clone(), sem.clone().acquire_owned().await?);
        tasks.spawn(async move {
            let _p = permit;
            send_json(&c, &common, Method::POST, "/v1/episodes/batch", Some(b)).await.map(|_| ())
        });
        while let Some(r) = tasks.try_join_next() {
            r??;
        }
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    Ok(())
}

/// Sync compile until has_more is false; returns (memories created, batches).
async fn compile(c: &HttpClient, common: &Common, subject: &str) -> Result<(u64, u64)> {
    let (mut memories, mut batches) = (0, 0);
    loop {
        let v =
            send_json(c, common, Method::POST, "/v1/memories/compile", Some(json!({ "subject_id": subject }))).await?;
        memories += v["memories_created"].as_u64().context("memories_created")?;
        batches += 1;
        if v["has_more"] != json!(true) {
            return Ok((memories, batches));
        }
    }
}

async fn seed(a: SeedArgs) -> Result<Value> {
    let c = client(a.concurrency.max(1));
    let round = a.round.unwrap_or(a.episodes).max(1);
    let probe = Probe::start(a.common.pid);
    let (mut ingest_s, mut compile_s, mut memories, mut batches) = (0.0, 0.0, 0u64, 0u64);
    let mut rounds = Vec::new();
    let mut done = 0;
    while done < a.episodes {
        let k = round.min(a.episodes - done);
        let t = Instant::now();
        ingest(&c, &a.common, &a.subject, a.offset + done, k, a.batch_size, a.concurrency).await?;
        let ti = t.elapsed().as_secs_f64();
        ingest_s += ti;
        done += k;
        if a.compile {
            let t = Instant::now();
            let (m, b) = compile(&c, &a.common, &a.subject).await?;
            let tc = t.elapsed().as_secs_f64();
            compile_s += tc;
            memories += m;
            batches += b;
            eprintln!("{}: {done} episodes; ingest {ti:.2}s, compile {tc:.2}s -> {m} memories", a.subject);
            rounds.push(json!({"episodes": k, "ingest_s": ti, "compile_s": tc, "memories": m}));
        }
    }
    let machine = probe.finish().await;
    Ok(json!({
        "cmd": "seed",
        "label": a.common.label,
        "subject": a.subject,
        "episodes": a.episodes,
        "ingest_s": ingest_s,
        "ingest_episodes_per_s": a.episodes as f64 / ingest_s,
        "compiled": a.compile,
        "compile_s": compile_s,
        "compile_batches": batches,
        "memories": memories,
        "compile_memories_per_s": if a.compile { memories as f64 / compile_s } else { f64::NAN },
        "compile_episodes_per_s": if a.compile { a.episodes as f64 / compile_s } else { f64::NAN },
        "rounds": rounds,
        "machine": machine,
    }))
}

async fn delete(a: DeleteArgs) -> Result<Value> {
    let c = client(2);
    let mut times = Vec::new();
    let mut deleted = Vec::new();
    let mut peak = 0.0f64;
    for r in 0..a.reps {
        let subject = format!("{}-{r}", a.prefix);
        ingest(&c, &a.common, &subject, 0, a.episodes, 100, 2).await?;
        if a.compile {
            compile(&c, &a.common, &subject).await?;
        }
        let probe = Probe::start(a.common.pid);
        let t = Instant::now();
        let v = send_json(&c, &a.common, Method::DELETE, &format!("/v1/subjects/{subject}"), None).await?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        let m = probe.finish().await;
        peak = peak.max(m["rss_peak_mib"].as_f64().unwrap_or(0.0));
        deleted.push(json!({"episodes": v["episodes_deleted"], "memories": v["memories_deleted"]}));
        eprintln!("delete {subject}: {:.1} ms ({})", times[r], deleted[r]);
    }
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    Ok(json!({
        "cmd": "delete",
        "label": a.common.label,
        "episodes": a.episodes,
        "compiled": a.compile,
        "delete_ms": times,
        "median_ms": sorted.get(sorted.len() / 2),
        "deleted": deleted,
        "machine": {"rss_peak_mib": peak, "loadavg": probe::loadavg()},
    }))
}
