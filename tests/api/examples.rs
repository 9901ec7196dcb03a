//! The examples in `examples/` run against a real server, so they keep working: the Python agent
//! loop (`examples/python/agent_loop.py`, through the Statewave SDK) and the MCP configuration
//! files for desktop and coding agents (`examples/mcp/`, through the official MCP client).
//!
//! Both use the compatibility venv (`target/compat-venv`, made by `scripts/test`); without it they
//! are skipped with a message, unless `MNEMO_REQUIRE_COMPAT` is set.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

/// Runs a Python file with the venv's interpreter against `base`; fails with its output.
async fn run(python: &std::path::Path, file: &str, base: &str) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = tokio::process::Command::new(python)
        .arg(root.join(file))
        .env("MNEMO_URL", base)
        .env_remove("MNEMO_API_KEY")
        .env("MNEMO_BIN", env!("CARGO_BIN_EXE_mnemo"))
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{file} failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

#[tokio::test]
async fn the_python_agent_loop_runs_against_a_server() {
    let Some(python) = crate::common::venv_python("statewave==1.5.0") else { return };
    let app = crate::common::spawn().await;
    let out = run(&python, "examples/python/agent_loop.py", &app.base).await;
    assert!(out.contains("replay reproduced the same bytes"), "{out}");
    // The example erases its demo subject when it is done.
    assert_eq!(app.count("episodes").await, 0);
}

#[tokio::test]
async fn the_mcp_configuration_files_connect_as_written() {
    let Some(python) = crate::common::venv_python("mcp==2.3.0") else { return };
    let app = crate::common::spawn().await;
    let out = run(&python, "tests/examples/check_mcp_configs.py", &app.base).await;
    assert!(out.contains("through the stdio bridge"), "{out}");
}
