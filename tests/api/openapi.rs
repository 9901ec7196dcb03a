//! The OpenAPI document matches the routes and the committed `openapi.json`.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

#[test]
fn every_route_is_documented_and_nothing_else() {
    let routes: BTreeSet<(String, String)> =
        mnemo::http::endpoints().into_iter().map(|(m, p)| (m.to_string(), p.to_string())).collect();
    let documented: BTreeSet<(String, String)> = mnemo::http::openapi::documented().into_iter().collect();
    let undocumented: Vec<_> = routes.difference(&documented).collect();
    let stale: Vec<_> = documented.difference(&routes).collect();
    assert!(
        undocumented.is_empty() && stale.is_empty(),
        "undocumented: {undocumented:?}; documented but not routed: {stale:?}"
    );
}

#[test]
fn committed_file_matches_the_code() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("openapi.json");
    let committed: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(
        committed == mnemo::http::openapi::document(),
        "openapi.json is out of date: run `cargo run -- openapi > openapi.json`"
    );
}

#[tokio::test]
async fn served_publicly() {
    let app = crate::common::spawn_with(mnemo::RuntimeConfig {
        api_key_sha256: Some([7u8; 32]),
        ..mnemo::RuntimeConfig::default()
    })
    .await;
    let (s, doc) = app.get("/openapi.json").await;
    assert_eq!(s, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["paths"]["/v1/context"]["post"].is_object());
}

#[test]
fn document_is_valid_openapi() {
    let python = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/compat-venv/bin/python");
    if !python.exists() {
        assert!(std::env::var("MNEMO_REQUIRE_COMPAT").is_err(), "target/compat-venv is missing");
        eprintln!("SKIP: target/compat-venv not found; run scripts/test");
        return;
    }
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("openapi.json");
    let out = std::process::Command::new(python)
        .args([
            "-c",
            "import json,sys; from openapi_spec_validator import validate; validate(json.load(open(sys.argv[1])))",
        ])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_document_states_the_limits_of_model_limits() {
    use mnemo::model::limits::*;
    let doc = mnemo::http::openapi::document();
    let schemas = &doc["components"]["schemas"];
    // The request's own fields (its receipt fields are `ReceiptFields`, flattened in).
    let context = &schemas["ContextRequest"]["allOf"][1]["properties"];
    assert_eq!(context["max_tokens"]["maximum"].as_i64(), Some(MAX_BUDGET_TOKENS));
    assert_eq!(context["max_tokens"]["default"].as_i64(), Some(DEFAULT_BUDGET_TOKENS));
    assert_eq!(context["task"]["maxLength"].as_u64(), Some(MAX_TASK_CHARS as u64));
    assert_eq!(context["subject_id"]["maxLength"].as_u64(), Some(MAX_ID_CHARS as u64));
    let handoff = &schemas["HandoffRequest"]["allOf"][1]["properties"];
    assert_eq!(handoff["max_tokens"]["maximum"].as_i64(), Some(MAX_HANDOFF_TOKENS));
    assert_eq!(handoff["max_tokens"]["default"].as_i64(), Some(DEFAULT_BUDGET_TOKENS));
}
