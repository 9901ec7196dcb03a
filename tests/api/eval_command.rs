#![allow(clippy::unwrap_used)]
//! `mnemo eval` run as a user runs it: the binary against a real server, on the project's own
//! small dataset (`tests/eval/recall.jsonl`), writing its text, JSON and HTML reports.

use crate::common::spawn;

#[tokio::test]
async fn eval_measures_recall_on_a_running_server_and_writes_its_reports() {
    let app = spawn().await;
    let dir = std::env::temp_dir().join(format!("mnemo-eval-test-{}", ulid::Ulid::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/eval/recall.jsonl");
    let (json, html) = (dir.join("report.json"), dir.join("report.html"));
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .arg("eval")
        .arg(&data)
        .args(["--url", &app.base, "--budgets", "300,2000"])
        .arg("--json")
        .arg(&json)
        .arg("--html")
        .arg(&html)
        .env_remove("MNEMO_API_KEY")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("recall") && stdout.contains("compile:"), "{stdout}");

    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let budgets = report["budgets"].as_array().unwrap();
    assert_eq!(budgets.len(), 2);
    assert_eq!(budgets[0]["all"]["questions"], 10, "every question asked at every budget");
    assert_eq!(report["compile"]["turns"], 17);
    // The whole of these small conversations fits in 2,000 tokens: every evidence turn is shown.
    assert_eq!(budgets[1]["all"]["recall"], 1.0, "{report:#}");
    for category in ["update", "extraction", "preference", "multi-session", "instruction"] {
        assert!(budgets[1]["categories"][category]["questions"].as_u64() > Some(0), "{category}");
    }
    // A bigger budget never shows less.
    assert!(budgets[1]["all"]["coverage"].as_f64() >= budgets[0]["all"]["coverage"].as_f64());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<svg") && page.contains("recall.jsonl"));

    // The run's subjects are its own: a second run does not mix with the first.
    let (_, subjects) = app.get("/v1/subjects").await;
    let names: Vec<&str> =
        subjects["subjects"].as_array().unwrap().iter().filter_map(|s| s["subject_id"].as_str()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("eval:")), "{names:?}");
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn eval_refuses_a_file_it_cannot_read_with_the_reason() {
    let dir = std::env::temp_dir().join(format!("mnemo-eval-bad-{}", ulid::Ulid::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"id\": \"x\", \"turns\": 5}\n").unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .arg("eval")
        .arg(&bad)
        .args(["--url", "http://127.0.0.1:9"])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 1"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
