//! Prometheus metrics, served on their own address (`MNEMO_METRICS_ADDR`), never on the API port.
//!
//! Recorded through the `metrics` facade and rendered by `metrics-exporter-prometheus`: request
//! counts and latency histograms by route and status, compile jobs by outcome, embedding time,
//! and connection-pool use. Labels are route templates (`/v1/receipts/{id}`), never raw paths,
//! so subject ids never become label values. Without a metrics listener no recorder is installed
//! and recording is a no-op.

use std::sync::OnceLock;
use std::time::Duration;

use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram, Unit};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

const HTTP_REQUESTS: &str = "mnemo_http_requests_total";
const HTTP_DURATION: &str = "mnemo_http_request_duration_seconds";
const EMBEDDING_DURATION: &str = "mnemo_embedding_duration_seconds";
const COMPILE_JOBS: &str = "mnemo_compile_jobs_total";
const POOL_CONNECTIONS: &str = "mnemo_db_pool_connections";
const LLM_TOKENS: &str = "mnemo_llm_tokens_total";
const LLM_CALLS: &str = "mnemo_llm_calls_total";
const LLM_CALL_DURATION: &str = "mnemo_llm_call_duration_seconds";
const LLM_EPISODES: &str = "mnemo_llm_episodes_total";
const READ_ROUTES: &str = "mnemo_read_routes_total";
const INGEST_STATEMENTS: &str = "mnemo_ingest_statements_total";
const INGEST_STATEMENT_EPISODES: &str = "mnemo_ingest_statement_episodes_total";
const CONTEXT_LEXICAL: &str = "mnemo_context_lexical_lanes_total";
const EPISODE_LEXEMES: &str = "mnemo_episode_lexemes_total";

/// Latency bucket upper bounds, in seconds (every histogram here is a duration).
const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

/// How often histogram samples are folded into buckets when nobody scrapes.
pub const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The process-wide recorder's handle, installing the recorder on first use.
pub fn handle() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        #[allow(clippy::expect_used)] // Fails only for an empty bucket list.
        let builder = PrometheusBuilder::new().set_buckets(&BUCKETS).expect("buckets are not empty");
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("another metrics recorder is installed; /metrics will stay empty");
        }
        describe();
        handle
    })
}

fn describe() {
    describe_counter!(HTTP_REQUESTS, "HTTP requests by method, route and status.");
    describe_histogram!(HTTP_DURATION, Unit::Seconds, "Request latency by method and route.");
    describe_histogram!(EMBEDDING_DURATION, Unit::Seconds, "Time per embedding call (a batch of texts).");
    describe_counter!(COMPILE_JOBS, "Async compile jobs finished by this process.");
    describe_counter!(
        READ_ROUTES,
        "Reads with a replica configured, by where they went (replica, primary_lagging, primary_replica_down)."
    );
    describe_gauge!(POOL_CONNECTIONS, "Database pool connections.");
    describe_counter!(INGEST_STATEMENTS, "Statements that wrote single-episode requests (group commit).");
    describe_counter!(
        CONTEXT_LEXICAL,
        "Context calls on large subjects by where their lexical lanes were ranked (server: this process's index; \
         database: no index, or one of another state or task lexemes)."
    );
    describe_counter!(
        INGEST_STATEMENT_EPISODES,
        "Single-episode requests those statements carried (over the statements: the mean group size)."
    );
    describe_counter!(
        EPISODE_LEXEMES,
        "Episodes recorded by where their lexemes were computed (server: this process; postgres: the insert statement)."
    );
    describe_counter!(LLM_TOKENS, "Tokens sent to (in) and received from (out) the LLM compiler's model.");
    describe_counter!(LLM_CALLS, "LLM compiler requests by outcome (ok, unavailable, malformed, rejected).");
    describe_histogram!(LLM_CALL_DURATION, Unit::Seconds, "Time per LLM compiler request.");
    describe_counter!(LLM_EPISODES, "Episodes the LLM compiler compiled, by compiler (llm, or heuristic on fallback).");
    // Both outcomes exist from the start, so a rate over them never lacks a series.
    for outcome in ["completed", "failed"] {
        counter!(COMPILE_JOBS, "outcome" => outcome).increment(0);
    }
}

/// Records one finished request; `route` is the route template, `method` a known method or `other`.
pub fn record_request(method: &'static str, route: &str, status: u16, elapsed: Duration) {
    let route = route.to_string();
    counter!(HTTP_REQUESTS, "method" => method, "route" => route.clone(), "status" => status.to_string()).increment(1);
    histogram!(HTTP_DURATION, "method" => method, "route" => route).record(elapsed);
}

/// Records one embedding call (a batch of texts).
pub fn record_embedding(elapsed: Duration) {
    histogram!(EMBEDDING_DURATION).record(elapsed);
}

/// Counts a finished compile job.
pub fn record_job(completed: bool) {
    counter!(COMPILE_JOBS, "outcome" => if completed { "completed" } else { "failed" }).increment(1);
}

/// Counts one statement of single-episode ingest and the requests it carried.
pub fn record_ingest_statement(episodes: usize) {
    counter!(INGEST_STATEMENTS).increment(1);
    counter!(INGEST_STATEMENT_EPISODES).increment(episodes as u64);
}

/// Counts episodes by where their lexemes were computed (`server` or `postgres`).
pub fn record_episode_lexemes(by: &'static str, episodes: usize) {
    counter!(EPISODE_LEXEMES, "by" => by).increment(episodes as u64);
}

/// Counts one context call on a large subject by where its lexical lanes were ranked.
pub fn record_context_lexical(ranked_by: &'static str) {
    counter!(CONTEXT_LEXICAL, "ranked_by" => ranked_by).increment(1);
}

/// Counts one read routed with a replica configured.
pub fn record_read_route(route: &'static str) {
    counter!(READ_ROUTES, "route" => route).increment(1);
}

/// Records one LLM compiler request and how it ended.
pub fn record_llm_call(outcome: &'static str, elapsed: Duration) {
    counter!(LLM_CALLS, "outcome" => outcome).increment(1);
    histogram!(LLM_CALL_DURATION).record(elapsed);
}

/// Records what one LLM compile cost and how its episodes were compiled.
pub fn record_llm_compile(tokens_in: u64, tokens_out: u64, llm_episodes: u64, fallback_episodes: u64) {
    counter!(LLM_TOKENS, "direction" => "in").increment(tokens_in);
    counter!(LLM_TOKENS, "direction" => "out").increment(tokens_out);
    counter!(LLM_EPISODES, "compiler" => "llm").increment(llm_episodes);
    counter!(LLM_EPISODES, "compiler" => "heuristic").increment(fallback_episodes);
}

/// Sets the pool gauges (read at scrape time): connections open, idle, and the maximum.
pub fn record_pool(open: u32, idle: usize, max: u32) {
    gauge!(POOL_CONNECTIONS, "state" => "open").set(open);
    gauge!(POOL_CONNECTIONS, "state" => "idle").set(idle as f64);
    gauge!(POOL_CONNECTIONS, "state" => "max").set(max);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_cumulative_buckets() {
        let h = handle();
        record_request("GET", "/v1/unit/{id}", 200, Duration::from_millis(3));
        record_request("GET", "/v1/unit/{id}", 200, Duration::from_millis(30));
        record_pool(3, 1, 20);
        let text = h.render();
        assert!(text.contains("mnemo_http_requests_total{method=\"GET\",route=\"/v1/unit/{id}\",status=\"200\"} 2"));
        let bucket = |le: &str| {
            format!(
                "mnemo_http_request_duration_seconds_bucket{{method=\"GET\",route=\"/v1/unit/{{id}}\",le=\"{le}\"}}"
            )
        };
        assert!(text.contains(&format!("{} 1", bucket("0.005"))), "{text}");
        assert!(text.contains(&format!("{} 2", bucket("0.05"))), "{text}");
        assert!(text.contains(&format!("{} 2", bucket("+Inf"))), "{text}");
        assert!(text.contains("mnemo_compile_jobs_total{outcome=\"failed\"}"));
        assert!(text.contains("mnemo_db_pool_connections{state=\"max\"} 20"));
        assert!(text.contains("# TYPE mnemo_http_request_duration_seconds histogram"));
    }
}
