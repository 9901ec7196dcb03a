//! Runs the official Python SDK (statewave==1.5.0) against live mnemo servers.
//!
//! The test command (`scripts/test`) installs the SDK into `target/compat-venv`. Without that
//! virtualenv this test says so and skips; set `MNEMO_REQUIRE_COMPAT=1` to make that a failure.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use mnemo::RuntimeConfig;
use sha2::{Digest, Sha256};

#[tokio::test]
async fn statewave_sdk_suite_passes() {
    let Some(python) = crate::common::venv_python("statewave==1.5.0") else {
        return;
    };
    let open = crate::common::spawn().await;
    let keyed = crate::common::spawn_with(RuntimeConfig {
        api_key_sha256: Some(Sha256::digest(b"compat-key").into()),
        ..RuntimeConfig::default()
    })
    .await;
    let limited = crate::common::spawn_with(RuntimeConfig {
        access: mnemo::services::access::AccessPolicy { region: None, rate_limit_rpm: 120 },
        ..RuntimeConfig::default()
    })
    .await;
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/compat");
    let out = tokio::process::Command::new(python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(&dir)
        // The MCP client suite has its own servers (tests/mcp.rs).
        .arg(format!("--ignore={}", dir.join("mcp").display()))
        .env("MNEMO_URL", &open.base)
        .env("MNEMO_URL_KEYED", &keyed.base)
        .env("MNEMO_URL_LIMITED", &limited.base)
        .env("MNEMO_KEY", "compat-key")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the Statewave SDK suite failed:\n{stdout}");
}
