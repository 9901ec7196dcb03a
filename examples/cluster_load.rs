//! Bounded mixed load (ingest, timeline read-back, compile, context with and without receipts) against one or more mnemo
//! processes, then a check of the database: no acknowledged episode lost, no episode or memory
//! duplicated, no receipt chain forked, no read that missed the client's own acknowledged write. Used by `scripts/cluster test`.
//!
//! ```sh
//! cargo run --example cluster_load -- --urls http://127.0.0.1:18101,http://127.0.0.1:18102 \
//!   --db postgres://postgres@127.0.0.1:15433/mnemo --secs 20 --clients 8 --label two-procs
//! ```
//!
//! A request that cannot connect (a process killed) moves to the next URL, as a load balancer
//! would; a 503 waits for its `Retry-After` and retries. Ingests carry an idempotency key, so a
//! retry after an unanswered request cannot duplicate. Prints one JSON line with the figures;
//! exits non-zero when a check fails or a 5xx other than 503 was answered.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use serde_json::{json, Value};

struct Args {
    urls: Vec<String>,
    db: String,
    secs: u64,
    clients: usize,
    subjects: usize,
    label: String,
    tenant: String,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut a = Args {
        urls: vec![],
        db: String::new(),
        secs: 20,
        clients: 8,
        subjects: 4,
        label: "run".into(),
        tenant: format!("load-{}", ulid::Ulid::new().to_string().to_lowercase()),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--urls" => a.urls = v.split(',').map(String::from).collect(),
            "--db" => a.db = v,
            "--secs" => a.secs = v.parse()?,
            "--clients" => a.clients = v.parse()?,
            "--subjects" => a.subjects = v.parse()?,
            "--label" => a.label = v,
            "--tenant" => a.tenant = v,
            _ => bail!("unknown flag {flag}"),
        }
    }
    if a.urls.is_empty() || a.db.is_empty() {
        bail!("--urls and --db are required");
    }
    Ok(a)
}

/// What the clients saw, shared between them.
#[derive(Default)]
struct Tally {
    ok: AtomicU64,
    ingests: AtomicU64,
    compiles: AtomicU64,
    contexts: AtomicU64,
    timelines: AtomicU64,
    /// Timeline reads right after an acknowledged ingest that did not show it.
    stale_reads: AtomicU64,
    unavailable_503: AtomicU64,
    other_5xx: AtomicU64,
    other_4xx: AtomicU64,
    connect_retries: AtomicU64,
    /// Longest time one request took from its first failed attempt to its success, in ms.
    longest_outage_ms: AtomicU64,
    /// (idempotency key, episode id) of every acknowledged ingest.
    acked: Mutex<Vec<(String, String)>>,
}

/// What one client task sends with.
struct Client<'a> {
    http: reqwest::Client,
    urls: &'a [String],
    tenant: &'a str,
    tally: &'a Tally,
    give_up: Instant,
}

/// Sends one request, moving across URLs on connection errors and waiting out 503s, until it
/// gets an answer that is not a 503 or the deadline passes. Returns (status, body).
async fn send(c: &Client<'_>, start_at: usize, path: &str, body: Option<&Value>) -> Option<(u16, Value)> {
    let (http, urls, tenant, tally, give_up) = (&c.http, c.urls, c.tenant, c.tally, c.give_up);
    let mut first_failure: Option<Instant> = None;
    let mut i = start_at;
    loop {
        if Instant::now() > give_up {
            return None;
        }
        let url = format!("{}{}", urls[i % urls.len()], path);
        let req = match body {
            Some(b) => http.post(&url).json(b),
            None => http.get(&url),
        };
        let res = req.header("X-Tenant-ID", tenant).send().await;
        match res {
            Err(_) => {
                tally.connect_retries.fetch_add(1, Ordering::Relaxed);
                first_failure.get_or_insert_with(Instant::now);
                i += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok(r) if r.status().as_u16() == 503 => {
                tally.unavailable_503.fetch_add(1, Ordering::Relaxed);
                first_failure.get_or_insert_with(Instant::now);
                let wait = r
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(1);
                tokio::time::sleep(Duration::from_millis((wait * 1000).min(1000))).await;
                i += 1;
            }
            Ok(r) => {
                let status = r.status().as_u16();
                let body = r.json::<Value>().await.unwrap_or(Value::Null);
                if let Some(f) = first_failure {
                    tally.longest_outage_ms.fetch_max(f.elapsed().as_millis() as u64, Ordering::Relaxed);
                }
                if status >= 500 {
                    tally.other_5xx.fetch_add(1, Ordering::Relaxed);
                } else if status >= 400 {
                    tally.other_4xx.fetch_add(1, Ordering::Relaxed);
                } else {
                    tally.ok.fetch_add(1, Ordering::Relaxed);
                }
                return Some((status, body));
            }
        }
    }
}

async fn client(n: usize, args: Arc<Args>, tally: Arc<Tally>, deadline: Instant) {
    let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let c = Client {
        http,
        urls: &args.urls,
        tenant: &args.tenant,
        tally: &tally,
        give_up: deadline + Duration::from_secs(60),
    };
    let mut step: u64 = 0;
    while Instant::now() < deadline {
        step += 1;
        let subject = format!("user:{}-{}", n, step as usize % args.subjects);
        let at = n + step as usize;
        // Per round: one ingest; every 3rd a sync compile, every 5th an async one; every 4th a context.
        let key = format!("c{n}-s{step}");
        let text = if step.is_multiple_of(2) {
            format!("I live in Town{}.", step % 7)
        } else {
            format!("My project codename is Falcon{n}x{step}.")
        };
        let ep = json!({"subject_id": subject, "source": "chat", "type": "message", "idempotency_key": key,
            "payload": {"messages": [{"role": "user", "content": text}]}});
        let mut acked_id = None;
        if let Some((s, b)) = send(&c, at, "/v1/episodes", Some(&ep)).await {
            if s == 200 || s == 201 {
                tally.ingests.fetch_add(1, Ordering::Relaxed);
                let id = b["id"].as_str().unwrap_or_default().to_string();
                acked_id = Some(id.clone());
                tally.acked.lock().unwrap().push((key, id));
            }
        }
        // Read-your-writes: the timeline read right after the ingest (from another process,
        // or the replica) shows it.
        if let (Some(id), true) = (acked_id, !step.is_multiple_of(2)) {
            let path = format!("/v1/timeline?subject_id={subject}&newest_first=true&limit=5");
            if let Some((200, b)) = send(&c, at + 1, &path, None).await {
                tally.timelines.fetch_add(1, Ordering::Relaxed);
                if !b.to_string().contains(&id) {
                    tally.stale_reads.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        if step.is_multiple_of(3) || step.is_multiple_of(5) {
            let body = json!({"subject_id": subject, "async": step.is_multiple_of(5)});
            if send(&c, at, "/v1/memories/compile", Some(&body)).await.is_some() {
                tally.compiles.fetch_add(1, Ordering::Relaxed);
            }
        }
        if step.is_multiple_of(4) {
            let receipt = step.is_multiple_of(8);
            let body = json!({"subject_id": subject, "task": "Where does the user live?", "emit_receipt": receipt});
            if send(&c, at, "/v1/context", Some(&body)).await.is_some() {
                tally.contexts.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The checks on the database (as its owner, so row-level security does not hide rows).
async fn verify(args: &Args, tally: &Tally) -> anyhow::Result<Value> {
    let pool = sqlx::postgres::PgPoolOptions::new().max_connections(2).connect(&args.db).await?;
    let acked = tally.acked.lock().unwrap().clone();
    let ids: Vec<uuid::Uuid> = acked.iter().filter_map(|(_, id)| id.parse().ok()).collect();
    let found: i64 = sqlx::query_scalar("SELECT count(*) FROM episodes WHERE tenant_id = $1 AND id = ANY($2)")
        .bind(&args.tenant)
        .bind(&ids)
        .fetch_one(&pool)
        .await?;
    let lost = acked.len() as i64 - found;
    let dup_episodes: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT 1 FROM episodes WHERE tenant_id = $1 AND idempotency_key IS NOT NULL \
         GROUP BY subject_id, idempotency_key HAVING count(*) > 1) d",
    )
    .bind(&args.tenant)
    .fetch_one(&pool)
    .await?;
    let dup_memories: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT 1 FROM memories WHERE tenant_id = $1 AND status = 'active' \
         GROUP BY subject_id, kind, content HAVING count(*) > 1) d",
    )
    .bind(&args.tenant)
    .fetch_one(&pool)
    .await?;
    let memories: i64 = sqlx::query_scalar("SELECT count(*) FROM memories WHERE tenant_id = $1")
        .bind(&args.tenant)
        .fetch_one(&pool)
        .await?;
    // The chain: seq runs 1..n without gaps, each receipt links the one before, and the head
    // names the last one.
    let (receipts, broken_links, max_seq): (i64, i64, Option<i64>) = sqlx::query_as(
        "SELECT count(*), count(*) FILTER (WHERE p.receipt_hash IS DISTINCT FROM r.prev_hash AND r.seq > 1), max(r.seq) \
         FROM receipts r LEFT JOIN receipts p ON p.tenant_id = r.tenant_id AND p.seq = r.seq - 1 WHERE r.tenant_id = $1",
    )
    .bind(&args.tenant)
    .fetch_one(&pool)
    .await?;
    let head: Option<(i64, String)> =
        sqlx::query_as("SELECT last_seq, last_hash FROM receipt_chain_heads WHERE tenant_id = $1")
            .bind(&args.tenant)
            .fetch_optional(&pool)
            .await?;
    let head_ok = match (&head, max_seq) {
        (None, None) => true,
        (Some((seq, _)), Some(max)) => *seq == max,
        _ => false,
    };
    let forked = broken_links > 0 || max_seq.unwrap_or(0) != receipts || !head_ok;
    // A job left without a heartbeat (its database went away mid-batch) is superseded by the
    // subject's next submission, which compiles the same episodes: counted apart from failures.
    let (jobs_failed, jobs_superseded): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE error NOT LIKE 'superseded:%' OR error IS NULL), \
                count(*) FILTER (WHERE error LIKE 'superseded:%') \
         FROM compile_jobs WHERE tenant_id = $1 AND status = 'failed'",
    )
    .bind(&args.tenant)
    .fetch_one(&pool)
    .await?;
    Ok(json!({"acknowledged": acked.len(), "lost": lost, "duplicated_episodes": dup_episodes,
        "duplicated_memories": dup_memories, "memories": memories, "receipts": receipts,
        "chain_forked": forked, "failed_jobs": jobs_failed, "superseded_jobs": jobs_superseded}))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Arc::new(parse_args()?);
    let tally = Arc::new(Tally::default());
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.secs);
    let tasks: Vec<_> =
        (0..args.clients).map(|n| tokio::spawn(client(n, args.clone(), tally.clone(), deadline))).collect();
    for t in tasks {
        t.await?;
    }
    let secs = started.elapsed().as_secs_f64();
    // Async jobs queued at the end get a moment to finish before the chain and memories are read.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let checks = verify(&args, &tally).await?;
    let ok = tally.ok.load(Ordering::Relaxed);
    let out = json!({
        "label": args.label, "processes": args.urls.len(), "clients": args.clients, "secs": (secs * 10.0).round() / 10.0,
        "requests_ok": ok, "requests_per_sec": (ok as f64 / secs).round(),
        "ingests": tally.ingests.load(Ordering::Relaxed), "compiles": tally.compiles.load(Ordering::Relaxed),
        "contexts": tally.contexts.load(Ordering::Relaxed),
        "timelines": tally.timelines.load(Ordering::Relaxed),
        "stale_reads": tally.stale_reads.load(Ordering::Relaxed),
        "answered_503": tally.unavailable_503.load(Ordering::Relaxed),
        "answered_other_5xx": tally.other_5xx.load(Ordering::Relaxed),
        "answered_4xx": tally.other_4xx.load(Ordering::Relaxed),
        "connect_retries": tally.connect_retries.load(Ordering::Relaxed),
        "longest_client_outage_ms": tally.longest_outage_ms.load(Ordering::Relaxed),
        "checks": checks,
    });
    println!("{out}");
    let c = &out["checks"];
    let failed = c["lost"].as_i64() != Some(0)
        || c["duplicated_episodes"].as_i64() != Some(0)
        || c["duplicated_memories"].as_i64() != Some(0)
        || c["chain_forked"].as_bool() != Some(false)
        || out["answered_other_5xx"].as_u64() != Some(0)
        || out["stale_reads"].as_u64() != Some(0)
        || out["answered_4xx"].as_u64() != Some(0);
    if failed {
        bail!("cluster load {}: a check failed", args.label);
    }
    Ok(())
}
