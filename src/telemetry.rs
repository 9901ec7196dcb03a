//! Optional OpenTelemetry trace export (OTLP over HTTP/protobuf), off unless an endpoint is set,
//! and the memory-operation spans that follow the OpenTelemetry GenAI semantic conventions.
//!
//! Turned on by the standard variables `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (the exporter reads them, and `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_BSP_*` and `OTEL_SERVICE_NAME`, itself); `OTEL_SDK_DISABLED=true`
//! keeps it off. Only mnemo's spans are exported, never log events: a span carries the route
//! template, status, operation, tenant and counts, never a subject id, memory content, a query or
//! a key (the conventions' opt-in content attributes, `gen_ai.memory.query.text` and
//! `gen_ai.memory.records`, are never set).

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing::Span;
use tracing_subscriber::filter::FilterFn;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// Log line format.
#[derive(Debug, Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// `gen_ai.provider.name` of every memory span.
pub const PROVIDER: &str = "mnemo";

/// Whether the environment asks for trace export.
pub fn export_requested(get: impl Fn(&str) -> Option<String>) -> bool {
    let set = |k: &str| get(k).is_some_and(|v| !v.trim().is_empty());
    let disabled = get("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    !disabled && (set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") || set("OTEL_EXPORTER_OTLP_ENDPOINT"))
}

/// The export pipeline, once built: flushed and stopped by [`Exporter::shutdown`].
pub struct Exporter {
    provider: SdkTracerProvider,
}

impl Exporter {
    /// Sends what is still buffered and stops the export thread (at process exit).
    pub fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            eprintln!("mnemo: OpenTelemetry export did not shut down cleanly: {e}");
        }
    }
}

/// The tracing layer that exports mnemo's spans, when the environment asks for it.
pub fn layer<S>() -> anyhow::Result<Option<(impl Layer<S> + Send + Sync, Exporter)>>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    if !export_requested(|k| std::env::var(k).ok()) {
        return Ok(None);
    }
    let mut exporter = opentelemetry_otlp::SpanExporter::builder().with_http();
    if std::env::var_os("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_none() {
        // The base endpoint gets the signal path appended, as the OTLP exporter spec says.
        if let Ok(base) = std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT") {
            exporter = exporter.with_endpoint(format!("{}/v1/traces", base.trim_end_matches('/')));
        }
    }
    let exporter = exporter.build()?;
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("mnemo");
    }
    let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource.build()).build();
    let tracer = provider.tracer("mnemo");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_tracked_inactivity(false)
        .with_threads(false)
        .with_target(false)
        .with_filter(FilterFn::new(|m| m.is_span() && m.target().starts_with("mnemo")));
    Ok(Some((layer, Exporter { provider })))
}

/// A memory operation of the GenAI conventions (`gen_ai.operation.name`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryOp {
    /// Episodes recorded.
    Create,
    /// Memories retrieved (context bundles, search).
    Search,
    /// Memories compiled from episodes (new ones supersede older ones).
    Update,
    /// A memory or a whole subject erased.
    Delete,
}

/// The span of one memory operation in `tenant` (its store), a child of the request's span.
/// Record what it touched with [`record_count`] and, for one record, [`record_id`].
pub fn memory_span(op: MemoryOp, tenant: &str) -> Span {
    macro_rules! span {
        ($name:literal) => {
            tracing::info_span!(
                $name,
                otel.kind = "internal",
                gen_ai.operation.name = $name,
                gen_ai.provider.name = PROVIDER,
                gen_ai.memory.store.id = tenant,
                gen_ai.memory.record.id = tracing::field::Empty,
                gen_ai.memory.record.count = tracing::field::Empty,
                otel.status_code = tracing::field::Empty,
            )
        };
    }
    match op {
        MemoryOp::Create => span!("create_memory"),
        MemoryOp::Search => span!("search_memory"),
        MemoryOp::Update => span!("update_memory"),
        MemoryOp::Delete => span!("delete_memory"),
    }
}

/// How many records the operation returned or changed (`gen_ai.memory.record.count`).
pub fn record_count(span: &Span, n: usize) {
    span.record("gen_ai.memory.record.count", i64::try_from(n).unwrap_or(i64::MAX));
}

/// The one record the operation touched (`gen_ai.memory.record.id`): an opaque id, never content.
pub fn record_id(span: &Span, id: &str) {
    span.record("gen_ai.memory.record.id", id);
}

/// Runs `fut` inside `span`: on success records the count `count` gives, on failure marks the
/// span failed (`otel.status_code = ERROR`; the cause stays in the logs).
pub async fn traced<T, E>(
    span: Span,
    fut: impl std::future::Future<Output = Result<T, E>>,
    count: impl FnOnce(&T) -> usize,
) -> Result<T, E> {
    use tracing::Instrument as _;
    let result = fut.instrument(span.clone()).await;
    match &result {
        Ok(value) => record_count(&span, count(value)),
        Err(_) => {
            span.record("otel.status_code", "ERROR");
        }
    }
    result
}

/// Logs to stdout (or stderr), and exports spans over OTLP when `export` and the environment
/// ask for it (see [`layer`]); the returned exporter is shut down at exit.
pub fn init(format: LogFormat, to_stderr: bool, export: bool) -> Option<Exporter> {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::Layer as _;

    std::panic::set_hook(Box::new(log_panic));
    let filter = tracing_subscriber::EnvFilter::try_from_env("MNEMO_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    let fmt = tracing_subscriber::fmt::layer().with_target(false);
    // The stdio bridge owns stdout for JSON-RPC.
    let fmt = match (to_stderr, format) {
        (true, _) => fmt.with_writer(std::io::stderr).boxed(),
        (false, LogFormat::Json) => fmt.json().flatten_event(true).boxed(),
        (false, LogFormat::Text) => fmt.boxed(),
    };
    // MNEMO_LOG sets what is logged; exported spans have their own filter (see telemetry).
    let fmt = fmt.with_filter(filter);
    // The OTLP client blocks: it is built off the async runtime's threads.
    let otel =
        if export { std::thread::scope(|s| s.spawn(layer).join()).unwrap_or_else(|_| Ok(None)) } else { Ok(None) };
    let (otel, exporter) = match otel {
        Ok(Some((layer, exporter))) => (Some(layer), Some(exporter)),
        Ok(None) => (None, None),
        Err(e) => {
            eprintln!("mnemo: OpenTelemetry export is off: {e:#}");
            (None, None)
        }
    };
    tracing_subscriber::registry().with(otel).with(fmt).init();
    exporter
}

/// Reports a panic once, as a log event: inside a request it carries the request's span and id
/// (the request then answers the opaque 500 from `CatchPanicLayer`).
fn log_panic(info: &std::panic::PanicHookInfo<'_>) {
    let location = info.location().map(|l| format!("{}:{}", l.file(), l.line()));
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(non-string payload)");
    tracing::error!(request_id = crate::error::current_request_id(), panic = message, location, "panic");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn export_is_off_unless_an_endpoint_is_set() {
        assert!(!export_requested(env(&[])));
        assert!(!export_requested(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")])));
        assert!(export_requested(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")])));
        assert!(export_requested(env(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c:4318/v1/traces")])));
        assert!(!export_requested(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
            ("OTEL_SDK_DISABLED", "TRUE"),
        ])));
    }
}
