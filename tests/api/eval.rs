//! Memory-quality eval: runs scenario files through HTTP against a live server.
//!
//! Files: the project's own `tests/eval/scenarios.json` (always) and the shared
//! `../shared/eval/scenarios.json` (skipped with a message when absent). Each scenario runs on a
//! fresh subject: `episodes` are POSTed as one batch, `compile` compiles until `has_more` is
//! false, `context` calls POST /v1/context, `delete_subject` deletes it, and `expect` checks the
//! last context result, the subject's memories (timeline) and counts.
#![allow(clippy::unwrap_used)]

use crate::common::llm_stub;

use std::path::PathBuf;

use serde_json::{json, Value};

struct Run<'a> {
    app: &'a crate::common::TestApp,
    subject: String,
    last_context: Option<(Value, Value)>,
}

impl Run<'_> {
    async fn step(&mut self, step: &Value) -> Result<(), String> {
        if let Some(eps) = step.get("episodes").and_then(Value::as_array) {
            let eps: Vec<Value> = eps
                .iter()
                .map(|e| {
                    let mut e = e.clone();
                    e["subject_id"] = json!(self.subject);
                    e
                })
                .collect();
            for chunk in eps.chunks(100) {
                let (s, b) = self.app.post("/v1/episodes/batch", &json!({ "episodes": chunk })).await;
                if s != 201 {
                    return Err(format!("batch ingest: {s} {b}"));
                }
            }
        }
        if step.get("compile") == Some(&json!(true)) {
            self.app.compile_all(&self.subject).await;
        }
        if let Some(ctx) = step.get("context") {
            let mut req = ctx.clone();
            req["subject_id"] = json!(self.subject);
            let (s, b) = self.app.post("/v1/context", &req).await;
            if s != 200 {
                return Err(format!("context: {s} {b}"));
            }
            self.last_context = Some((req, b));
        }
        if step.get("delete_subject") == Some(&json!(true)) {
            let r =
                self.app.client.delete(self.app.url(&format!("/v1/subjects/{}", self.subject))).send().await.unwrap();
            if r.status().as_u16() != 200 {
                return Err(format!("delete_subject: {}", r.status()));
            }
        }
        if let Some(expect) = step.get("expect") {
            self.check(expect).await?;
        }
        Ok(())
    }

    async fn check(&self, expect: &Value) -> Result<(), String> {
        let mut failures = Vec::new();
        let bundle = self.last_context.as_ref().map(|(_, b)| b.clone()).unwrap_or(Value::Null);
        let facts: Vec<String> = bundle["facts"]
            .as_array()
            .map(|f| f.iter().map(|m| m["content"].as_str().unwrap_or_default().to_string()).collect())
            .unwrap_or_default();
        let text = bundle["assembled_context"].as_str().unwrap_or_default().to_string();
        let memories = self.app.memories(&self.subject).await;
        let strs = |k: &str| -> Vec<String> {
            expect
                .get(k)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
                .unwrap_or_default()
        };
        for s in strs("facts_contain") {
            if !facts.iter().any(|f| f.contains(&s)) {
                failures.push(format!("facts lack {s:?}: {facts:?}"));
            }
        }
        for s in strs("facts_not_contain") {
            if facts.iter().any(|f| f.contains(&s)) {
                failures.push(format!("facts contain {s:?}: {facts:?}"));
            }
        }
        for s in strs("bundle_contains") {
            if !text.contains(&s) {
                failures.push(format!("bundle lacks {s:?}:\n{text}"));
            }
        }
        for s in strs("bundle_not_contains") {
            if text.contains(&s) {
                failures.push(format!("bundle contains {s:?}:\n{text}"));
            }
        }
        for s in strs("memories_not_contain") {
            if let Some(m) = memories.iter().find(|m| m["content"].as_str().unwrap_or_default().contains(&s)) {
                failures.push(format!("a memory contains {s:?}: {m}"));
            }
        }
        for s in strs("timeline_superseded_contain") {
            if !memories
                .iter()
                .any(|m| m["status"] == "superseded" && m["content"].as_str().unwrap_or_default().contains(&s))
            {
                failures.push(format!("no superseded memory contains {s:?}"));
            }
        }
        if let Some(pairs) = expect.get("claims_absent").and_then(Value::as_array) {
            for p in pairs {
                let (key, value) = (p[0].as_str().unwrap_or_default(), p[1].as_str().unwrap_or_default());
                let hit = memories.iter().any(|m| {
                    m["status"] == "active"
                        && m["metadata"]["claim"]["key"] == key
                        && m["metadata"]["claim"]["value"].as_str().map(str::to_lowercase).as_deref() == Some(value)
                });
                if hit {
                    failures.push(format!("an active memory claims {key}={value}"));
                }
            }
        }
        if let Some(max) = expect.get("token_estimate_max").and_then(Value::as_u64) {
            let got = bundle["token_estimate"].as_u64().unwrap_or(u64::MAX);
            if got > max {
                failures.push(format!("token_estimate {got} > {max}"));
            }
        }
        if let Some(n) = expect.get("repeat_identical").and_then(Value::as_u64) {
            let (req, first) = self.last_context.clone().unwrap_or((Value::Null, Value::Null));
            let mut req = req;
            // Pin as_of to the first call's, so repeats ask for exactly the same thing.
            req["as_of"] = first["as_of"].clone();
            let (_, pinned) = self.app.post("/v1/context", &req).await;
            for i in 0..n {
                let (_, again) = self.app.post("/v1/context", &req).await;
                if again != pinned {
                    failures.push(format!("repeat {i} differs"));
                }
            }
            if pinned["assembled_context"] != first["assembled_context"] {
                failures.push("pinning as_of changed the bundle".into());
            }
        }
        let count = |k: &str| expect.get(k).and_then(Value::as_i64);
        if let Some(n) = count("episode_count") {
            let (_, t) = self.app.get(&format!("/v1/timeline?subject_id={}&limit=200", self.subject)).await;
            let got = t["episodes"].as_array().map(Vec::len).unwrap_or(0) as i64;
            if got != n {
                failures.push(format!("episode_count {got} != {n}"));
            }
        }
        if let Some(n) = count("memory_count") {
            if memories.len() as i64 != n {
                failures.push(format!("memory_count {} != {n}", memories.len()));
            }
        }
        if let Some(n) = count("receipt_count") {
            let exists: Option<String> =
                sqlx::query_scalar("SELECT to_regclass('receipts')::text").fetch_one(&self.app.pool).await.unwrap();
            let got: i64 = if exists.is_some() {
                sqlx::query_scalar("SELECT count(*) FROM receipts WHERE subject_id = $1")
                    .bind(&self.subject)
                    .fetch_one(&self.app.pool)
                    .await
                    .unwrap()
            } else {
                0
            };
            if got != n {
                failures.push(format!("receipt_count {got} != {n}"));
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(failures.join("\n  "))
        }
    }
}

async fn run_file(path: &PathBuf) -> (usize, Vec<String>) {
    run_file_on(&crate::common::spawn().await, path).await
}

async fn run_file_on(app: &crate::common::TestApp, path: &PathBuf) -> (usize, Vec<String>) {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut passed = 0;
    let mut failed = Vec::new();
    for (i, sc) in doc["scenarios"].as_array().unwrap().iter().enumerate() {
        let name = sc["name"].as_str().unwrap_or("?");
        let mut run = Run { app, subject: format!("eval:{i}:{name}"), last_context: None };
        let mut outcome = Ok(());
        for step in sc["steps"].as_array().unwrap() {
            outcome = run.step(step).await;
            if outcome.is_err() {
                break;
            }
        }
        match outcome {
            Ok(()) => {
                passed += 1;
                println!("eval {name}: ok");
            }
            Err(e) => {
                println!("eval {name}: FAILED\n  {e}");
                failed.push(name.to_string());
            }
        }
    }
    (passed, failed)
}

#[tokio::test]
async fn own_scenarios_pass() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/eval/scenarios.json");
    let (passed, failed) = run_file(&path).await;
    assert!(failed.is_empty(), "{} passed, failed: {failed:?}", passed);
    assert!(passed >= 5);
}

#[tokio::test]
async fn shared_scenarios_pass() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/eval/scenarios.json");
    if !path.exists() {
        eprintln!("SKIP: ../shared/eval/scenarios.json not found (this clone has no shared/ beside it)");
        return;
    }
    let (passed, failed) = run_file(&path).await;
    assert!(failed.is_empty(), "{} passed, failed: {failed:?}", passed);
}

/// The same scenarios with `MNEMO_COMPILER=llm` against the stub model answering like a careful
/// model (tests/common/llm_stub.rs: heuristic extraction of the text it is sent, paraphrased).
#[tokio::test]
async fn own_scenarios_pass_with_the_llm_compiler() {
    use mnemo::compile::llm::{Compiler, LlmCompiler, LlmConfig};
    let stub = llm_stub::start().await;
    let llm = LlmCompiler::new(LlmConfig::new(stub.url.clone(), "careful-eval")).unwrap();
    let config = mnemo::RuntimeConfig { compiler: Compiler::Llm(std::sync::Arc::new(llm)), ..Default::default() };
    let app = crate::common::spawn_with(config).await;
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/eval/scenarios.json");
    let (passed, failed) = run_file_on(&app, &path).await;
    assert!(failed.is_empty(), "{} passed, failed: {failed:?}", passed);
    assert!(stub.calls() > 0);
    let llm_rows: i64 = sqlx::query_scalar("SELECT count(*) FROM memories WHERE metadata->>'compiler' = 'llm'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert!(llm_rows > 0);
}
