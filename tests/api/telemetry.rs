//! OpenTelemetry export through the real binary: `mnemo serve` with `OTEL_EXPORTER_OTLP_ENDPOINT`
//! pointed at an OTLP/HTTP receiver in this test. Memory operations arrive as GenAI memory spans
//! (children of the request's server span), and no span carries the subject, the content or the task.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use serde_json::json;

use crate::common::spawn;

type Received = Arc<Mutex<Vec<Vec<u8>>>>;

/// An OTLP/HTTP trace receiver on port 0; every export's body is kept.
async fn receiver() -> (String, Received) {
    let got: Received = Arc::default();
    let keep = got.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        post(move |body: Bytes| {
            let keep = keep.clone();
            async move {
                keep.lock().unwrap().push(body.to_vec());
                // An empty ExportTraceServiceResponse: everything accepted.
                ([("content-type", "application/x-protobuf")], Vec::<u8>::new())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, got)
}

fn attrs(kv: &[KeyValue]) -> HashMap<String, Any> {
    kv.iter().filter_map(|a| Some((a.key.clone(), a.value.clone()?.value?))).collect()
}

fn text(a: &HashMap<String, Any>, key: &str) -> Option<String> {
    match a.get(key) {
        Some(Any::StringValue(s)) => Some(s.clone()),
        _ => None,
    }
}

fn int(a: &HashMap<String, Any>, key: &str) -> Option<i64> {
    match a.get(key) {
        Some(Any::IntValue(n)) => Some(*n),
        _ => None,
    }
}

#[tokio::test]
async fn memory_operations_export_genai_spans_without_content() {
    let db = spawn().await;
    let (collector, got) = receiver().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}");
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .arg("serve")
        .env("MNEMO_DATABASE_URL", db.database_url())
        .env("MNEMO_ADDR", format!("127.0.0.1:{port}"))
        .env("MNEMO_EMBEDDER", "hash")
        // Logging at warn must not stop the export of info spans.
        .env("MNEMO_LOG", "warn")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_SERVICE_NAME")
        .env_remove("OTEL_SDK_DISABLED")
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let http = reqwest::Client::new();
    let mut ready = false;
    for _ in 0..200 {
        if http.get(format!("{base}/readyz")).send().await.is_ok_and(|r| r.status().is_success()) {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ready, "mnemo serve did not become ready");

    let tenant = "otel-tenant";
    let subject = "user:otel-secret-subject";
    let call = |method: reqwest::Method, path: &str| {
        http.request(method, format!("{base}{path}")).header("X-Tenant-ID", tenant)
    };
    let episode = json!({"subject_id": subject, "source": "chat", "type": "message",
        "payload": {"messages": [{"role": "user", "content": "My cat is called Zorblaxian and I work at Quintarix."}]}});
    let r = call(reqwest::Method::POST, "/v1/episodes").json(&episode).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let r =
        call(reqwest::Method::POST, "/v1/memories/compile").json(&json!({"subject_id": subject})).send().await.unwrap();
    assert!(r.status().is_success(), "compile: {}", r.status());
    let r = call(reqwest::Method::POST, "/v1/context")
        .json(&json!({"subject_id": subject, "task": "What is the name of Zorblaxian's owner's cat?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let bundle: serde_json::Value = r.json().await.unwrap();
    assert!(bundle["assembled_context"].as_str().unwrap().contains("Zorblaxian"), "{bundle}");
    let r = call(reqwest::Method::GET, "/v1/memories/search")
        .query(&[("subject_id", subject), ("q", "Quintarix")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = call(reqwest::Method::DELETE, &format!("/v1/subjects/{subject}")).send().await.unwrap();
    assert!(r.status().is_success(), "delete: {}", r.status());

    // Batches leave every 100 ms; wait until all four operations have arrived with their
    // parents (a request's span ends after its operation's, so it may leave in a later batch).
    let wanted = ["create_memory", "update_memory", "search_memory", "delete_memory"];
    let mut spans: Vec<Span> = Vec::new();
    let mut service = None;
    for _ in 0..100 {
        spans.clear();
        for body in got.lock().unwrap().iter() {
            let req = ExportTraceServiceRequest::decode(body.as_slice()).expect("an OTLP protobuf export");
            for rs in req.resource_spans {
                if let Some(r) = &rs.resource {
                    service = text(&attrs(&r.attributes), "service.name");
                }
                spans.extend(rs.scope_spans.into_iter().flat_map(|s| s.spans));
            }
        }
        let parented = |s: &Span| spans.iter().any(|p| p.span_id == s.parent_span_id);
        if wanted.iter().all(|w| spans.iter().any(|s| s.name == *w))
            && spans.iter().filter(|s| wanted.contains(&s.name.as_str())).all(parented)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    server.start_kill().unwrap();
    assert!(!got.lock().unwrap().is_empty(), "the collector received no export");
    assert_eq!(service.as_deref(), Some("mnemo"), "{} exports, {} spans", got.lock().unwrap().len(), spans.len());
    let by_id: HashMap<Vec<u8>, &Span> = spans.iter().map(|s| (s.span_id.clone(), s)).collect();
    for op in wanted {
        let mine: Vec<&Span> = spans.iter().filter(|s| s.name == op).collect();
        assert!(!mine.is_empty(), "no {op} span among {:?}", spans.iter().map(|s| &s.name).collect::<Vec<_>>());
        for s in mine {
            let a = attrs(&s.attributes);
            assert_eq!(text(&a, "gen_ai.operation.name").as_deref(), Some(op));
            assert_eq!(text(&a, "gen_ai.provider.name").as_deref(), Some("mnemo"));
            assert_eq!(text(&a, "gen_ai.memory.store.id").as_deref(), Some(tenant));
            assert!(int(&a, "gen_ai.memory.record.count").is_some_and(|n| n >= 1), "{op}: {a:?}");
            let parent = by_id.get(&s.parent_span_id).unwrap_or_else(|| panic!("{op} has no exported parent"));
            let pa = attrs(&parent.attributes);
            assert!(parent.name.contains(" /v1/"), "{op}'s parent is {:?}", parent.name);
            assert!(int(&pa, "http.response.status_code").is_some_and(|c| (200..300).contains(&c)), "{pa:?}");
        }
    }
    // Server spans are named by the route template, never by the path that holds the subject.
    assert!(spans.iter().any(|s| s.name == "DELETE /v1/subjects/{subject_id}"));
    // Nothing of the subject, its content or the task reached the collector.
    let all: Vec<u8> = got.lock().unwrap().concat();
    for secret in ["otel-secret-subject", "Zorblaxian", "Quintarix", "owner"] {
        assert!(!all.windows(secret.len()).any(|w| w == secret.as_bytes()), "{secret:?} was exported");
    }
}
