//! Cross-cutting HTTP behaviour: probes, request ids, auth, tenants, timeline and subjects.
#![allow(clippy::unwrap_used)]

use crate::common::{episode, spawn, spawn_with, split};
use mnemo::RuntimeConfig;
use serde_json::json;
use sha2::{Digest, Sha256};

#[tokio::test]
async fn probes_and_version() {
    let app = spawn().await;
    assert_eq!(app.get("/healthz").await, (200, json!({"status": "ok"})));
    assert_eq!(app.get("/health").await.0, 200);
    let (s, ready) = app.get("/readyz").await;
    assert_eq!(s, 200);
    assert_eq!(ready["status"], "ready");
    assert_eq!(ready["checks"][0]["name"], "database");
    let (s, v) = app.get("/v1/version").await;
    assert_eq!(s, 200);
    assert_eq!(v["api_contract"], "v1");
}

#[tokio::test]
async fn readyz_is_503_when_the_database_is_gone() {
    let app = spawn().await;
    app.app_pool.close().await;
    let (s, ready) = app.get("/readyz").await;
    assert_eq!(s, 503);
    assert_eq!(ready["status"], "not_ready");
}

#[tokio::test]
async fn requests_get_a_503_with_retry_after_while_the_database_is_unreachable() {
    let app = spawn().await;
    app.app_pool.close().await;
    let r = app.client.post(app.url("/v1/episodes")).json(&episode("u1", "I live in Oslo.")).send().await.unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "1");
    let (_, body) = split(r).await;
    assert_eq!(body["error"]["code"], "database_unavailable");
}

#[tokio::test]
async fn request_id_is_echoed_or_generated() {
    let app = spawn().await;
    let r = app.client.get(app.url("/healthz")).header("X-Request-ID", "abc-123").send().await.unwrap();
    assert_eq!(r.headers()["x-request-id"], "abc-123");
    let r = app.client.get(app.url("/healthz")).send().await.unwrap();
    let id = r.headers()["x-request-id"].to_str().unwrap().to_string();
    assert_eq!(id.len(), 16);
    assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
    // Error bodies carry the same id.
    let r =
        app.client.post(app.url("/v1/episodes")).header("X-Request-ID", "req-9").json(&json!({})).send().await.unwrap();
    let (_, body) = split(r).await;
    assert_eq!(body["error"]["request_id"], "req-9");
}

#[tokio::test]
async fn unknown_route_and_wrong_method_use_the_envelope() {
    let app = spawn().await;
    let (s, body) = app.get("/v1/nope").await;
    assert_eq!(s, 404);
    assert_eq!(body["error"]["code"], "http_error");
    let r = app.client.delete(app.url("/v1/episodes")).send().await.unwrap();
    let (s, body) = split(r).await;
    assert_eq!(s, 405);
    assert_eq!(body["error"]["code"], "http_error");
}

#[tokio::test]
async fn api_key_is_required_when_configured() {
    let cfg = RuntimeConfig { api_key_sha256: Some(Sha256::digest(b"s3cret").into()), ..RuntimeConfig::default() };
    let app = spawn_with(cfg).await;
    let (s, body) = app.get("/v1/subjects").await;
    assert_eq!(s, 401);
    assert_eq!(body["error"]["code"], "missing_api_key");
    let r = app.client.get(app.url("/v1/subjects")).header("X-API-Key", "wrong").send().await.unwrap();
    let (s, body) = split(r).await;
    assert_eq!(s, 403);
    assert_eq!(body["error"]["code"], "invalid_api_key");
    let r = app.client.get(app.url("/v1/subjects")).header("X-API-Key", "s3cret").send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // A key in the query string is ignored unless MNEMO_ALLOW_QUERY_API_KEY is on.
    let r = app.client.get(app.url("/v1/subjects?api_key=s3cret")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let cfg = RuntimeConfig {
        api_key_sha256: Some(Sha256::digest(b"s3cret").into()),
        allow_query_api_key: true,
        ..RuntimeConfig::default()
    };
    let allowed = spawn_with(cfg).await;
    let r = allowed.client.get(allowed.url("/v1/subjects?api_key=s3cret")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // Probes stay public.
    assert_eq!(app.get("/healthz").await.0, 200);
    assert_eq!(app.get("/v1/version").await.0, 200);
}

#[tokio::test]
async fn tenants_never_see_each_other() {
    let app = spawn().await;
    assert_eq!(app.post_as("acme", "/v1/episodes", &episode("user:1", "acme data")).await.0, 201);
    assert_eq!(app.post("/v1/episodes", &episode("user:1", "default data")).await.0, 201);
    let (_, t) = app.get_as("acme", "/v1/timeline?subject_id=user:1").await;
    assert_eq!(t["episodes"].as_array().unwrap().len(), 1);
    assert_eq!(t["episodes"][0]["payload"]["messages"][0]["content"], "acme data");
    let (_, t) = app.get("/v1/timeline?subject_id=user:1").await;
    assert_eq!(t["episodes"].as_array().unwrap().len(), 1, "no header = the default tenant only");
    assert_eq!(t["episodes"][0]["payload"]["messages"][0]["content"], "default data");
    let (_, t) = app.get_as("other", "/v1/timeline?subject_id=user:1").await;
    assert_eq!(t["episodes"].as_array().unwrap().len(), 0);
    let (_, s) = app.get_as("other", "/v1/subjects").await;
    assert_eq!(s["total"], 0);
    let (status, _) = app.get_as(&"t".repeat(300), "/v1/subjects").await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn timeline_pages_in_event_order() {
    let app = spawn().await;
    let mut eps = Vec::new();
    for i in 0..5 {
        let mut e = episode("user:1", &format!("e{i}"));
        // Ingested in reverse event order: the timeline must follow occurred_at.
        e["occurred_at"] = json!(format!("2026-01-0{}T00:00:00Z", 5 - i));
        eps.push(e);
    }
    assert_eq!(app.post("/v1/episodes/batch", &json!({"episodes": eps})).await.0, 201);
    let text = |t: &serde_json::Value| -> Vec<String> {
        t["episodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["payload"]["messages"][0]["content"].as_str().unwrap().to_string())
            .collect()
    };
    let (_, t) = app.get("/v1/timeline?subject_id=user:1&limit=2").await;
    assert_eq!(text(&t), vec!["e4", "e3"]);
    assert_eq!(t["episodes_has_more"], true);
    assert_eq!(t["memories_has_more"], false);
    let (_, t) = app.get("/v1/timeline?subject_id=user:1&limit=2&offset=4").await;
    assert_eq!(text(&t), vec!["e0"]);
    assert_eq!(t["episodes_has_more"], false);
    let (_, t) = app.get("/v1/timeline?subject_id=user:1&limit=2&newest_first=true").await;
    assert_eq!(text(&t), vec!["e1", "e0"], "newest page, returned ascending");
    for bad in ["limit=0", "limit=201", "offset=-1", "status=gone", "newest_first=maybe"] {
        let (s, b) = app.get(&format!("/v1/timeline?subject_id=user:1&{bad}")).await;
        assert_eq!(s, 422, "{bad}: {b}");
    }
    assert_eq!(app.get("/v1/timeline").await.0, 422);
    assert_eq!(app.get("/v1/timeline?subject_id=user:1&status=active").await.0, 200);
}

#[tokio::test]
async fn subjects_are_listed_with_counts() {
    let app = spawn().await;
    for s in ["b", "a", "c", "a", "_snapshot/x"] {
        app.post("/v1/episodes", &episode(s, "x")).await;
    }
    let (_, body) = app.get("/v1/subjects?limit=2").await;
    assert_eq!(body["total"], 3);
    assert_eq!(
        body["subjects"],
        json!([{"subject_id": "a", "episode_count": 2, "memory_count": 0},
               {"subject_id": "b", "episode_count": 1, "memory_count": 0}])
    );
    let (_, body) = app.get("/v1/subjects?limit=2&offset=2").await;
    assert_eq!(body["subjects"][0]["subject_id"], "c");
    assert_eq!(app.get("/v1/subjects?limit=500").await.0, 422);
}

#[tokio::test]
async fn episodes_are_append_only_in_the_database() {
    let app = spawn().await;
    app.post("/v1/episodes", &episode("user:1", "keep me")).await;
    let upd = sqlx::query("UPDATE episodes SET source = 'x'").execute(&app.pool).await;
    assert!(upd.unwrap_err().to_string().contains("append-only"));
    let del = sqlx::query("DELETE FROM episodes").execute(&app.pool).await;
    assert!(del.is_err());
    let trunc = sqlx::query("TRUNCATE episodes").execute(&app.pool).await;
    assert!(trunc.is_err());
    assert_eq!(app.count("episodes").await, 1);
    // Only the erasure path (transaction-local flag) may delete.
    let mut tx = app.pool.begin().await.unwrap();
    sqlx::query("SELECT set_config('mnemo.erasure', 'on', true)").execute(&mut *tx).await.unwrap();
    // The flag lets rows go, never changes them.
    sqlx::query("SAVEPOINT u").execute(&mut *tx).await.unwrap();
    let upd = sqlx::query("UPDATE episodes SET source = 'x'").execute(&mut *tx).await;
    assert!(upd.unwrap_err().to_string().contains("append-only"));
    sqlx::query("ROLLBACK TO SAVEPOINT u").execute(&mut *tx).await.unwrap();
    let n = sqlx::query("DELETE FROM episodes").execute(&mut *tx).await.unwrap().rows_affected();
    tx.commit().await.unwrap();
    assert_eq!(n, 1);
}

#[tokio::test]
async fn healthcheck_command_probes_a_live_server() {
    let app = spawn().await;
    let addr = app.base.trim_start_matches("http://").to_string();
    let ok = tokio::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(["healthcheck", "--addr", &addr])
        .status()
        .await
        .unwrap();
    assert!(ok.success());
    let down = tokio::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(["healthcheck", "--addr", "127.0.0.1:1"])
        .output()
        .await
        .unwrap();
    assert!(!down.status.success());
}

/// The value of one exact series (`name{labels}`) in a Prometheus scrape, 0 when absent.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test]
async fn metrics_are_served_on_their_own_listener_by_route_template() {
    let app = spawn().await;
    let scrape = || async {
        app.client.get(format!("{}/metrics", app.metrics_base)).send().await.unwrap().text().await.unwrap()
    };
    let subject = "user:secret-subject-7f3a";
    let before = scrape().await;
    assert_eq!(app.post("/v1/episodes", &episode(subject, "hi")).await.0, 201);
    let (sessions_status, b) = app.get(&format!("/v1/subjects/{subject}/sessions")).await;
    assert!(sessions_status < 500, "{b}");
    app.get(&format!("/v1/timeline?subject_id={subject}")).await;
    app.post("/v1/memories/compile", &json!({"subject_id": subject})).await;
    assert_eq!(app.get("/v1/no-such-route").await.0, 404);
    let text = scrape().await;
    // Every server of this test binary records into the one process-wide recorder, so other
    // tests' requests may be counted too: counts only grow by at least ours.
    for series in [
        "mnemo_http_requests_total{method=\"POST\",route=\"/v1/episodes\",status=\"201\"}".to_string(),
        format!(
            "mnemo_http_requests_total{{method=\"GET\",route=\"/v1/subjects/{{subject_id}}/sessions\",status=\"{sessions_status}\"}}"
        ),
        "mnemo_http_requests_total{method=\"GET\",route=\"unmatched\",status=\"404\"}".to_string(),
        "mnemo_http_request_duration_seconds_count{method=\"GET\",route=\"/v1/timeline\"}".to_string(),
    ] {
        assert!(sample(&text, &series) >= sample(&before, &series) + 1.0, "{series} not counted:\n{text}");
    }
    assert!(
        text.contains("mnemo_http_request_duration_seconds_bucket{method=\"GET\",route=\"/v1/timeline\",le=\"0.005\"}")
    );
    assert!(text.contains("# TYPE mnemo_http_request_duration_seconds histogram"));
    assert!(text.contains("mnemo_embedding_duration_seconds_count"));
    assert!(text.contains("mnemo_compile_jobs_total{outcome=\"completed\"}"));
    for series in ["mnemo_ingest_statements_total", "mnemo_ingest_statement_episodes_total"] {
        assert!(sample(&text, series) >= sample(&before, series) + 1.0, "{series} not counted:\n{text}");
    }
    assert!(text.contains("mnemo_db_pool_connections{state=\"max\"} 10"));
    assert!(!text.contains("secret-subject"), "labels are route templates, never raw paths");
    assert!(!text.contains("no-such-route"), "unmatched paths are not labels either");
    // Not on the API port.
    assert_eq!(app.get("/metrics").await.0, 404);
}

#[tokio::test]
async fn readyz_turns_503_when_shutdown_starts_and_in_flight_requests_finish() {
    let config = RuntimeConfig { shutdown_drain_secs: 5, ..RuntimeConfig::default() };
    let mut app = spawn_with(config).await;
    assert_eq!(app.get("/readyz").await.0, 200);
    // A write held behind a table lock is the slow request in flight.
    let mut lock = app.pool.begin().await.unwrap();
    sqlx::query("LOCK TABLE episodes IN ACCESS EXCLUSIVE MODE").execute(&mut *lock).await.unwrap();
    let slow = tokio::spawn({
        let request = app.client.post(app.url("/v1/episodes")).json(&episode("user:drain", "still here"));
        async move { request.send().await.map(|r| r.status().as_u16()) }
    });
    let waiting = format!("SELECT count(*) FROM ({}) w", crate::common::WAITING_HERE);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while sqlx::query_scalar::<_, i64>(&waiting).fetch_one(&app.pool).await.unwrap() == 0 {
        assert!(std::time::Instant::now() < deadline, "the write never reached the lock");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    app.begin_shutdown();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let ready = loop {
        let (s, body) = app.get("/readyz").await;
        if s == 503 {
            break body;
        }
        assert!(std::time::Instant::now() < deadline, "readyz stayed {s}");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    assert_eq!(ready["status"], "not_ready");
    assert_eq!(ready["checks"][0]["name"], "shutdown");
    assert_eq!(app.get("/ready").await.0, 503);
    // Alive while draining: liveness must not restart a server that is shutting down cleanly.
    assert_eq!(app.get("/healthz").await.0, 200);

    // After the drain period the listener closes; the request in flight still gets its answer.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while app.client.get(app.url("/healthz")).send().await.is_ok() {
        assert!(std::time::Instant::now() < deadline, "the listener never closed");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(!slow.is_finished());
    lock.rollback().await.unwrap();
    assert_eq!(slow.await.unwrap().unwrap(), 201);
}

#[tokio::test]
async fn security_headers_on_every_answer_without_breaking_openapi_or_mcp() {
    let app = spawn().await;
    let expect = [
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("x-frame-options", "DENY"),
        ("content-security-policy", "default-src 'none'; frame-ancestors 'none'"),
    ];
    for path in ["/v1/subjects", "/openapi.json", "/v1/no-such-route", "/readyz"] {
        let r = app.client.get(app.url(path)).send().await.unwrap();
        for (name, value) in expect {
            assert_eq!(r.headers().get(name).and_then(|v| v.to_str().ok()), Some(value), "{path}: {name}");
        }
    }
    let r = app.client.get(app.url("/openapi.json")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let (_, doc) = split(r).await;
    assert!(doc["paths"]["/v1/context"].is_object());
    let (s, headers, body) =
        crate::common::mcp::post_with(&app, None, &crate::common::mcp::request(1, "tools/list", json!({})), &[]).await;
    assert_eq!(s, 200, "{body}");
    assert!(body["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{body}");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert!(headers.contains_key("x-request-id"));
}
