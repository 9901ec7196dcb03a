//! Readiness of the database: whether it answers a trivial statement in time.

use std::time::{Duration, Instant};

use sqlx::PgPool;

/// How long the database may take to answer before the server reports itself not ready.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The outcome of one probe.
#[derive(Debug, Clone, Copy)]
pub struct DatabaseProbe {
    /// The database answered within [`PROBE_TIMEOUT`].
    pub ok: bool,
    /// Time to the answer (or to the timeout), in milliseconds rounded to two decimals.
    pub latency_ms: f64,
    /// Why not, when it did not answer (no database error text: it can name hosts and roles).
    pub detail: Option<&'static str>,
}

/// Probes the database once.
pub async fn database(pool: &PgPool) -> DatabaseProbe {
    let started = Instant::now();
    let outcome = tokio::time::timeout(PROBE_TIMEOUT, crate::db::health::ping(pool)).await;
    let latency_ms = (started.elapsed().as_secs_f64() * 100_000.0).round() / 100.0;
    let (ok, detail) = match outcome {
        Ok(Ok(())) => (true, None),
        Ok(Err(_)) => (false, Some("database query failed")),
        Err(_) => (false, Some("database did not answer within 2s")),
    };
    DatabaseProbe { ok, latency_ms, detail }
}
