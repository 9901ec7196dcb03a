//! Facts that change: the update and look-alike evals (every `tests/eval/updates*.json`: the
//! first suite, `updates.json`, the varied one written for issue 52, `updates_varied.json`, and
//! a smaller one measured once after the rules were written, `updates_heldout.json`, one
//! written after the rules for chains and purposes, `updates_followup.json`, and one written
//! before the rules for replacements and other people's changes were run on it,
//! `updates_fresh.json`, and one written by a writer who had not read the rules,
//! `updates_sixth.json`, `updates_restated.json`, and `updates_ordinary.json`, written before
//! the rules it then changed).
//!
//! Each case is a short multi-session history told by one user: sessions a day apart, one
//! episode per turn, compiled after each session as a live agent would. Then the case's question
//! is asked for a context bundle (1,000 tokens) and the bundle's text is checked:
//! - an `update` case is applied when every `must` (new value) is in the bundle and no
//!   `must_not` (old value) is; it is shown as history when the old value appears only on lines
//!   marked "(earlier)" (the compiler could not say surely that the change replaces it, so the
//!   bundle shows both, the old one marked); otherwise it counts as a stale value left (on an
//!   unmarked line), a missing new value, or both;
//! - a `lookalike` case (someone else's change, a plan, a question, a negation, pasted text, an
//!   instruction, another instance of the same thing) wrongly superseded a true fact when a
//!   `must` value is missing from the bundle or a memory holding it was superseded.
//!
//! The run prints the figures per kind and register, and the failing cases; it fails when a
//! figure falls below the floor measured when this eval was written (a regression), and on any
//! look-alike supersession beyond the ones listed in the report. `hash` always runs; `minilm`
//! runs when the model files are present (required under `MNEMO_REQUIRE_MODEL`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::llm_stub;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};

/// Budget of the context call (the histories are small; the budget never decides a case).
const MAX_TOKENS: u64 = 1000;

#[derive(Default, Debug)]
struct Tally {
    cases: usize,
    applied: usize,
    history: usize,
    stale: usize,
    missing: usize,
    wrongly_superseded: usize,
}

struct Report {
    by: BTreeMap<(String, String), Tally>,
    failures: Vec<String>,
}

impl Report {
    fn total(&self, kind: &str) -> Tally {
        let mut t = Tally::default();
        for ((k, _), v) in &self.by {
            if k == kind {
                t.cases += v.cases;
                t.applied += v.applied;
                t.history += v.history;
                t.stale += v.stale;
                t.missing += v.missing;
                t.wrongly_superseded += v.wrongly_superseded;
            }
        }
        t
    }
}

fn turn(t: &Value) -> (String, String) {
    match t {
        Value::String(s) => ("user".into(), s.clone()),
        other => (
            other["role"].as_str().unwrap_or("user").to_string(),
            other["content"].as_str().unwrap_or_default().to_string(),
        ),
    }
}

async fn run_case(app: &crate::common::TestApp, suite: &str, i: usize, case: &Value) -> (bool, String) {
    let subject = format!("upd:{suite}:{i}");
    let base = chrono::DateTime::parse_from_rfc3339("2026-01-05T09:00:00Z").unwrap();
    for (k, session) in case["sessions"].as_array().unwrap().iter().enumerate() {
        let episodes: Vec<Value> = session
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(n, t)| {
                let (role, content) = turn(t);
                let at = base + chrono::Duration::days(k as i64) + chrono::Duration::seconds(n as i64);
                json!({"subject_id": subject, "source": "chat", "type": "message", "session_id": format!("s{k}"),
                       "occurred_at": at.to_rfc3339(), "payload": {"messages": [{"role": role, "content": content}]}})
            })
            .collect();
        let (s, b) = app.post("/v1/episodes/batch", &json!({ "episodes": episodes })).await;
        assert_eq!(s, 201, "{b}");
        app.compile_all(&subject).await;
    }
    let req = json!({"subject_id": subject, "task": case["question"], "max_tokens": MAX_TOKENS});
    let (s, bundle) = app.post("/v1/context", &req).await;
    assert_eq!(s, 200, "{bundle}");
    let text = bundle["assembled_context"].as_str().unwrap_or_default().to_string();
    // EVAL_PRINT=<case name> (or `all`): the case's bundle and memories, to read why it fails.
    if std::env::var("EVAL_PRINT").is_ok_and(|n| n == "all" || case["name"].as_str() == Some(n.as_str())) {
        println!("--- {subject} {}\n{text}", case["name"]);
        for m in app.memories(&subject).await {
            println!(
                "  memory {} {} {} {} {} {}",
                m["id"], m["kind"], m["status"], m["content"], m["metadata"]["revises"], m["metadata"]["claim"]
            );
        }
    }
    let strs = |k: &str| -> Vec<String> {
        case[k].as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect()).unwrap_or_default()
    };
    let missing: Vec<String> = strs("must").into_iter().filter(|m| !text.contains(m.as_str())).collect();
    // What the bundle presents as current: every line but those marked as earlier.
    let current: String = text.lines().filter(|l| !l.starts_with("- (earlier) ")).collect::<Vec<_>>().join("\n");
    let stale: Vec<String> = strs("must_not").into_iter().filter(|m| current.contains(m.as_str())).collect();
    let history: Vec<String> = strs("must_not").into_iter().filter(|m| text.contains(m.as_str())).collect();
    let mut superseded = Vec::new();
    if case["kind"] == "lookalike" {
        for m in app.memories(&subject).await {
            let content = m["content"].as_str().unwrap_or_default();
            if m["status"] == "superseded" && strs("must").iter().any(|v| content.contains(v.as_str())) {
                superseded.push(content.to_string());
            }
        }
    }
    // A look-alike's true value shown only as earlier is demoted as wrongly as one superseded.
    if case["kind"] == "lookalike" {
        superseded.extend(
            strs("must")
                .into_iter()
                .filter(|m| text.contains(m.as_str()) && !current.contains(m.as_str()))
                .map(|m| format!("shown as earlier: {m}")),
        );
    }
    let ok = missing.is_empty() && stale.is_empty() && superseded.is_empty();
    let detail = format!("missing {missing:?} stale {stale:?} earlier {history:?} superseded {superseded:?}");
    (ok, detail)
}

/// Reports per suite file (`updates.json`, `updates_varied.json`, …), in file name order.
type Reports = BTreeMap<String, Report>;

async fn run(embedder: Arc<dyn mnemo::embed::Embedder>, label: &str) -> Reports {
    run_with(mnemo::RuntimeConfig::default(), embedder, label).await
}

async fn run_with(config: mnemo::RuntimeConfig, embedder: Arc<dyn mnemo::embed::Embedder>, label: &str) -> Reports {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/eval");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("updates") && n.ends_with(".json"))
        })
        .collect();
    files.sort();
    let app = crate::common::spawn_full(config, embedder).await;
    let mut reports = Reports::new();
    for path in files {
        let suite = path.file_stem().and_then(|n| n.to_str()).unwrap().to_string();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let report = run_suite(&app, &suite, &doc, label).await;
        reports.insert(suite, report);
    }
    reports
}

async fn run_suite(app: &crate::common::TestApp, suite: &str, doc: &Value, label: &str) -> Report {
    let mut report = Report { by: BTreeMap::new(), failures: Vec::new() };
    for (i, case) in doc["cases"].as_array().unwrap().iter().enumerate() {
        let kind = case["kind"].as_str().unwrap().to_string();
        let register = case["register"].as_str().unwrap_or("?").to_string();
        let (ok, detail) = run_case(app, suite, i, case).await;
        let t = report.by.entry((kind.clone(), register)).or_default();
        t.cases += 1;
        if kind == "update" {
            let shown_earlier = detail.contains("earlier [\"");
            t.applied += usize::from(ok && !shown_earlier);
            t.history += usize::from(ok && shown_earlier);
            if ok && shown_earlier {
                println!("  HISTORY {label} {suite} {}", case["name"].as_str().unwrap_or("?"));
            }
            t.stale += usize::from(detail.contains("stale [\""));
            t.missing += usize::from(detail.contains("missing [\""));
        } else {
            t.wrongly_superseded += usize::from(!ok);
        }
        if !ok {
            report.failures.push(format!("{label} {suite} {kind} {}: {detail}", case["name"].as_str().unwrap_or("?")));
        }
    }
    println!("update eval ({label}, {suite}): kind/register: cases, applied, shown as history, stale left, new value missing, look-alikes wrongly superseded");
    for ((kind, register), t) in &report.by {
        println!(
            "  {kind:9} {register:17} {:3} {:3} {:3} {:3} {:3} {:3}",
            t.cases, t.applied, t.history, t.stale, t.missing, t.wrongly_superseded
        );
    }
    let (u, l) = (report.total("update"), report.total("lookalike"));
    println!(
        "  TOTAL {label} {suite}: updates applied {}/{}, shown as history {}, stale values left {}, missing new values {}, look-alikes wrongly superseded {}/{}",
        u.applied, u.cases, u.history, u.stale, u.missing, l.wrongly_superseded, l.cases
    );
    for f in &report.failures {
        println!("  FAIL {f}");
    }
    report
}

/// Floors measured when the eval was last calibrated (see docs/compile.md, "Facts that change"):
/// `(suite, least updates applied, most stale values left unmarked)`. No look-alike may be superseded in any suite but the one
/// listed in [`KNOWN_WRONG`].
fn check(reports: &Reports, floors: &[(&str, usize, usize)]) {
    let first = &reports["updates"];
    let (u, l) = (first.total("update"), first.total("lookalike"));
    assert!(u.cases >= 150 && l.cases >= 50, "the first suite needs 150 update and 50 look-alike cases");
    let varied = &reports["updates_varied"];
    let (u, l) = (varied.total("update"), varied.total("lookalike"));
    assert!(u.cases >= 60 && l.cases >= 30, "the varied suite needs 60 update and 30 look-alike cases");
    for (suite, min_applied, max_stale) in floors {
        let u = reports[*suite].total("update");
        assert!(u.applied >= *min_applied, "{suite}: updates applied {} < floor {min_applied}", u.applied);
        assert!(u.stale <= *max_stale, "{suite}: stale values left {} > ceiling {max_stale}", u.stale);
    }
    for (suite, r) in reports {
        let allowed = KNOWN_WRONG.iter().filter(|(s, _)| s == suite).count();
        let wrong: Vec<&String> = r.failures.iter().filter(|f| f.contains(" lookalike ")).collect();
        let known = |f: &&String| KNOWN_WRONG.iter().any(|(s, case)| s == suite && f.contains(&format!(" {case}:")));
        assert!(
            wrong.len() <= allowed && wrong.iter().all(known),
            "{suite}: look-alikes wrongly superseded: {wrong:?}"
        );
    }
}

/// Look-alikes still superseded, by suite: "the docs site is deployed with Netlify now" retires
/// "the API is deployed with Helm charts" (the judge does not tell two subjects of one verb
/// apart); found by the follow-up suite's first run.
const KNOWN_WRONG: &[(&str, &str)] = &[
    ("updates_followup", "fu-la-other-purpose"),
    // MiniLM only: "we adopted a kitten too" doubts the dog by meaning (shown as earlier, not
    // superseded); "too" as an adding word cost two updates ("too expensive").
    ("updates_sixth", "sx-la-also-kitten"),
];

#[tokio::test]
async fn updates_with_hash() {
    let embedder = mnemo::embed::build(&mnemo::embed::EmbedderConfig::Hash { dims: 384 }).unwrap();
    let reports = run(embedder, "hash").await;
    check(
        &reports,
        &[
            ("updates", 129, 35),
            ("updates_varied", 49, 5),
            ("updates_heldout", 16, 3),
            ("updates_followup", 11, 4),
            ("updates_fresh", 24, 3),
            ("updates_sixth", 28, 10),
            ("updates_ordinary", 20, 5),
            ("updates_restated", 5, 1),
        ],
    );
}

#[tokio::test]
async fn updates_with_minilm() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".mnemo/models/all-MiniLM-L6-v2");
    if !dir.join("model.safetensors").exists() {
        assert!(std::env::var("MNEMO_REQUIRE_MODEL").is_err(), "MNEMO_REQUIRE_MODEL is set but the model is missing");
        eprintln!("SKIP: MiniLM model files not found; run scripts/bootstrap");
        return;
    }
    let embedder = mnemo::embed::build(&mnemo::embed::EmbedderConfig::MiniLm { model_dir: dir }).unwrap();
    let reports = run(embedder, "minilm").await;
    check(
        &reports,
        &[
            ("updates", 129, 5),
            ("updates_varied", 49, 5),
            ("updates_heldout", 16, 2),
            ("updates_followup", 11, 1),
            ("updates_fresh", 24, 1),
            ("updates_sixth", 28, 5),
            ("updates_ordinary", 20, 1),
            ("updates_restated", 5, 1),
        ],
    );
}

/// The same cases with `MNEMO_COMPILER=llm` and the stub answering like a careful model
/// (tests/common/llm_stub.rs), hash embeddings: the server's checks and linking keep the
/// figures of the heuristic compiler.
#[tokio::test]
async fn updates_with_the_llm_compiler() {
    use mnemo::compile::llm::{Compiler, LlmCompiler, LlmConfig};
    let stub = llm_stub::start().await;
    let llm = LlmCompiler::new(LlmConfig::new(stub.url.clone(), "careful-eval")).unwrap();
    let config = mnemo::RuntimeConfig { compiler: Compiler::Llm(Arc::new(llm)), ..Default::default() };
    let embedder = mnemo::embed::build(&mnemo::embed::EmbedderConfig::Hash { dims: 384 }).unwrap();
    let reports = run_with(config, embedder, "llm-stub+hash").await;
    assert!(stub.calls() > 0);
    check(
        &reports,
        &[
            ("updates", 123, 43),
            ("updates_varied", 45, 10),
            ("updates_heldout", 17, 3),
            ("updates_followup", 10, 7),
            ("updates_fresh", 21, 7),
            ("updates_sixth", 23, 16),
            ("updates_ordinary", 21, 5),
            ("updates_restated", 5, 2),
        ],
    );
}
