//! Prometheus metrics, served on their own address (`MNEMO_METRICS_ADDR`), never on the API port.
//!
//! Hand-rolled text exposition: request counts and latency histograms by route and status,
//! compile jobs by outcome, embedding time, and connection-pool use. Labels are route
//! templates (`/v1/receipts/{id}`), never raw paths, so subject ids never become label values.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Latency bucket upper bounds, in seconds.
const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

#[derive(Default, Clone)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    sum: f64,
    total: u64,
}

impl Histogram {
    fn observe(&mut self, secs: f64) {
        for (i, b) in BUCKETS.iter().enumerate() {
            if secs <= *b {
                self.counts[i] += 1;
            }
        }
        self.sum += secs;
        self.total += 1;
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (i, b) in BUCKETS.iter().enumerate() {
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{b}\"}} {}", self.counts[i]);
        }
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}", self.total);
        let brace = if labels.is_empty() { String::new() } else { format!("{{{labels}}}") };
        let _ = writeln!(out, "{name}_sum{brace} {}", self.sum);
        let _ = writeln!(out, "{name}_count{brace} {}", self.total);
    }
}

// Embedding happens deep in compile and search; one process-wide histogram avoids threading
// the metrics handle through every call.
static EMBEDDING: Mutex<Histogram> = Mutex::new(Histogram { counts: [0; BUCKETS.len()], sum: 0.0, total: 0 });

/// Records one embedding call (a batch of texts).
pub fn record_embedding(elapsed: Duration) {
    if let Ok(mut h) = EMBEDDING.lock() {
        h.observe(elapsed.as_secs_f64());
    }
}

/// Process-wide metrics.
#[derive(Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    latency: Mutex<BTreeMap<(String, String), Histogram>>,
    jobs_completed: AtomicU64,
    jobs_failed: AtomicU64,
}

impl Metrics {
    /// Records one finished request.
    pub fn record_request(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        if let Ok(mut m) = self.requests.lock() {
            *m.entry((method.to_string(), route.to_string(), status)).or_default() += 1;
        }
        if let Ok(mut m) = self.latency.lock() {
            m.entry((method.to_string(), route.to_string())).or_default().observe(elapsed.as_secs_f64());
        }
    }

    /// Counts a finished compile job.
    pub fn record_job(&self, completed: bool) {
        let c = if completed { &self.jobs_completed } else { &self.jobs_failed };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// The exposition text; `pool` is (connections open, idle, max).
    pub fn render(&self, pool: (u32, usize, u32)) -> String {
        let mut out = String::new();
        out.push_str("# HELP mnemo_http_requests_total HTTP requests by method, route and status.\n");
        out.push_str("# TYPE mnemo_http_requests_total counter\n");
        if let Ok(m) = self.requests.lock() {
            for ((method, route, status), n) in m.iter() {
                let _ = writeln!(
                    out,
                    "mnemo_http_requests_total{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {n}"
                );
            }
        }
        out.push_str("# HELP mnemo_http_request_duration_seconds Request latency by method and route.\n");
        out.push_str("# TYPE mnemo_http_request_duration_seconds histogram\n");
        if let Ok(m) = self.latency.lock() {
            for ((method, route), h) in m.iter() {
                h.render(
                    &mut out,
                    "mnemo_http_request_duration_seconds",
                    &format!("method=\"{method}\",route=\"{route}\""),
                );
            }
        }
        out.push_str("# HELP mnemo_embedding_duration_seconds Time per embedding call (a batch of texts).\n");
        out.push_str("# TYPE mnemo_embedding_duration_seconds histogram\n");
        if let Ok(h) = EMBEDDING.lock() {
            h.render(&mut out, "mnemo_embedding_duration_seconds", "");
        }
        out.push_str("# HELP mnemo_compile_jobs_total Async compile jobs finished by this process.\n");
        out.push_str("# TYPE mnemo_compile_jobs_total counter\n");
        let _ = writeln!(
            out,
            "mnemo_compile_jobs_total{{outcome=\"completed\"}} {}",
            self.jobs_completed.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "mnemo_compile_jobs_total{{outcome=\"failed\"}} {}",
            self.jobs_failed.load(Ordering::Relaxed)
        );
        out.push_str("# HELP mnemo_db_pool_connections Database pool connections.\n");
        out.push_str("# TYPE mnemo_db_pool_connections gauge\n");
        let _ = writeln!(out, "mnemo_db_pool_connections{{state=\"open\"}} {}", pool.0);
        let _ = writeln!(out, "mnemo_db_pool_connections{{state=\"idle\"}} {}", pool.1);
        let _ = writeln!(out, "mnemo_db_pool_connections{{state=\"max\"}} {}", pool.2);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_cumulative_buckets() {
        let m = Metrics::default();
        m.record_request("GET", "/v1/receipts/{id}", 200, Duration::from_millis(3));
        m.record_request("GET", "/v1/receipts/{id}", 200, Duration::from_millis(30));
        m.record_job(true);
        let text = m.render((3, 1, 20));
        assert!(text.contains("mnemo_http_requests_total{method=\"GET\",route=\"/v1/receipts/{id}\",status=\"200\"} 2"));
        assert!(text.contains("le=\"0.005\"} 1"));
        assert!(text.contains("le=\"0.05\"} 2"));
        assert!(text.contains("le=\"+Inf\"} 2"));
        assert!(text.contains("mnemo_compile_jobs_total{outcome=\"completed\"} 1"));
        assert!(text.contains("mnemo_db_pool_connections{state=\"max\"} 20"));
    }
}
