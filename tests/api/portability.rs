//! Statewave's subject backup document: `GET /admin/export/{subject_id}` and `POST /admin/import`.
//!
//! Files: the project's own `tests/fixtures/statewave/*.json` (always) and the real Statewave
//! 0.7.1 export `../shared/eval/fixtures/statewave-0.7.1-export.json` (skipped with a message
//! when absent).
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use crate::common::{spawn, TestApp};
use mnemo::services::statewave_backup::document::checksum;
use serde_json::{json, Value};

fn own_fixture(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/statewave").join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

async fn timeline(app: &TestApp, tenant: &str, subject: &str) -> Value {
    let (s, b) = app.get_as(tenant, &format!("/v1/timeline?subject_id={subject}&limit=200")).await;
    assert_eq!(s, 200, "{b}");
    b
}

async fn rows(app: &TestApp) -> (i64, i64, i64) {
    (app.count("episodes").await, app.count("memories").await, app.count("subject_counters").await)
}

#[tokio::test]
async fn statewave_0_7_1_export_imports_and_answers() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/eval/fixtures/statewave-0.7.1-export.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("SKIP: ../shared/eval/fixtures/statewave-0.7.1-export.json not found (no shared/ beside this clone)");
        return;
    };
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["checksum"].as_str().unwrap(), checksum(doc.get("episodes"), doc.get("memories")));
    let app = spawn().await;
    let (s, b) = app.post("/admin/import", &json!({"document": doc})).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        b,
        json!({"subject_id": "user:export-demo", "tenant_id": "default", "episodes_imported": 6,
               "memories_imported": 11, "ids_preserved": true})
    );
    let t = timeline(&app, "default", "user:export-demo").await;
    assert_eq!(t["episodes"].as_array().unwrap().len(), 6);
    let memories = t["memories"].as_array().unwrap();
    assert_eq!(memories.len(), 11);
    // Ids, kinds, validity and status are kept.
    for m in doc["memories"].as_array().unwrap() {
        let got = memories.iter().find(|g| g["id"] == m["id"]).unwrap();
        assert_eq!((&got["kind"], &got["status"], &got["content"]), (&m["kind"], &m["status"], &m["content"]));
        assert_eq!(got["valid_to"], m["valid_to"]);
    }
    // Claims were re-derived from the content through the registry.
    let keys: Vec<&str> = memories.iter().filter_map(|m| m["metadata"]["claim"]["key"].as_str()).collect();
    assert!(keys.contains(&"employment.current_employer") && keys.contains(&"identity.name"), "{keys:?}");
    // Every episode had been compiled by Statewave: compiling again makes nothing.
    assert!(app.compile_all("user:export-demo").await.is_empty());
    let (s, b) = app.get("/v1/memories/search?subject_id=user:export-demo&q=Initech").await;
    assert_eq!(s, 200, "{b}");
    assert!(
        b["memories"].as_array().unwrap().iter().any(|m| m["content"].as_str().unwrap().contains("Initech")),
        "{b}"
    );
    let (s, b) =
        app.post("/v1/context", &json!({"subject_id": "user:export-demo", "task": "What is the user's name?"})).await;
    assert_eq!(s, 200, "{b}");
    assert!(b["assembled_context"].as_str().unwrap().contains("Dana Reyes"), "{b}");
    // A second import with the same ids is refused; with fresh ids it lands beside the first.
    let before = rows(&app).await;
    let (s, b) = app.post("/admin/import", &json!({"document": doc})).await;
    assert_eq!(s, 400, "{b}");
    assert!(b["error"]["message"].as_str().unwrap().starts_with("ID conflict: 6 episode(s)"), "{b}");
    assert_eq!(rows(&app).await, before);
    let body = json!({"document": doc, "preserve_ids": false, "target_subject_id": "user:copy"});
    let (s, b) = app.post("/admin/import", &body).await;
    assert_eq!((s, &b["ids_preserved"]), (200, &json!(false)), "{b}");
    let copy = timeline(&app, "default", "user:copy").await;
    let episode_ids: Vec<&Value> = copy["episodes"].as_array().unwrap().iter().map(|e| &e["id"]).collect();
    for m in copy["memories"].as_array().unwrap() {
        assert!(m["source_episode_ids"].as_array().unwrap().iter().all(|s| episode_ids.contains(&s)), "{m}");
    }
}

#[tokio::test]
async fn own_fixture_keeps_tenant_status_and_claims() {
    let app = spawn().await;
    let doc = own_fixture("small-export.json");
    let (s, b) = app.post("/admin/import", &json!({"document": doc})).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["tenant_id"], "acme");
    let t = timeline(&app, "acme", "user:small").await;
    let episodes = t["episodes"].as_array().unwrap();
    assert_eq!(episodes[0]["occurred_at"], "2026-02-01T09:00:00.000000Z");
    assert_eq!(episodes[1]["payload"]["messages"][0]["content"], "I work at Initech now \u{1f600}");
    let m = t["memories"].as_array().unwrap();
    let old = m.iter().find(|m| m["content"] == "I work at Globex").unwrap();
    assert_eq!((&old["status"], &old["valid_to"]), (&json!("superseded"), &json!("2026-02-02T10:30:00.123456Z")));
    let name = m.iter().find(|m| m["content"] == "My name is Zo\u{eb} Park").unwrap();
    assert_eq!(name["metadata"]["claim"]["key"], "identity.name");
    // The spec's test-vector document imports too (its subject and tenant come from the file).
    let (s, b) = app.post("/admin/import", &json!({"document": own_fixture("spec-vector.json")})).await;
    assert_eq!((s, &b["tenant_id"], &b["subject_id"]), (200, &json!("default"), &json!("user:1")), "{b}");
    // Its episode had never been compiled: compile reads it (and only it).
    let compiled = app.compile_all("user:1").await;
    assert!(!compiled.is_empty());
}

#[tokio::test]
async fn export_then_import_into_another_tenant_gives_the_same_timeline() {
    let app = spawn().await;
    let subject = "user:rt";
    for text in ["My name is Ana Lima and I live in Quito.", "I work at Globex.", "I work at Initech now."] {
        let (s, b) = app.post_as("t1", "/v1/episodes", &crate::common::episode(subject, text)).await;
        assert_eq!(s, 201, "{b}");
        let (s, b) = app.post_as("t1", "/v1/memories/compile", &json!({"subject_id": subject})).await;
        assert_eq!(s, 200, "{b}");
    }
    let original = timeline(&app, "t1", subject).await;
    assert!(original["memories"].as_array().unwrap().iter().any(|m| m["status"] == "superseded"), "{original}");

    let (s, doc) = app.get(&format!("/admin/export/{subject}?tenant_id=t1")).await;
    assert_eq!(s, 200, "{doc}");
    let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 8);
    assert_eq!((&doc["format_version"], &doc["tenant_id"]), (&json!("1.0"), &json!("t1")));
    assert_eq!(doc["checksum"].as_str().unwrap(), checksum(doc.get("episodes"), doc.get("memories")));
    assert_eq!(doc["counts"], json!({"episodes": 3, "memories": original["memories"].as_array().unwrap().len()}));
    assert!(doc["episodes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e.get("session_id").is_none() && e["last_compiled_at"].is_string()));
    assert!(doc["memories"].as_array().unwrap().iter().all(|m| m["embedding"].is_null()));

    // The ids exist in t1, so with preserved ids the same database refuses them in any tenant
    // (Statewave's ids are global keys) and writes nothing.
    let (s, b) = app.post("/admin/import", &json!({"document": doc, "target_tenant_id": "t2"})).await;
    assert_eq!(s, 400, "{b}");
    assert!(b["error"]["message"].as_str().unwrap().starts_with("ID conflict: 3 episode(s)"), "{b}");
    assert_eq!(tenant_rows(&app, "t2").await, 0);
    // Into another database they keep their ids.
    let other = spawn().await;
    let (s, b) = other.post("/admin/import", &json!({"document": doc, "target_tenant_id": "t2"})).await;
    assert_eq!(s, 200, "{b}");
    let copy = timeline(&other, "t2", subject).await;
    assert_eq!(copy, original);
    // The copy exports to the same records, apart from the tenant they name.
    let (s, again) = other.get_as("t2", &format!("/admin/export/{subject}")).await;
    assert_eq!(s, 200, "{again}");
    let strip = |d: &Value, part: &str| -> Vec<Value> {
        d[part]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let mut r = r.clone();
                r.as_object_mut().unwrap().remove("tenant_id");
                r.as_object_mut().unwrap().remove("last_compiled_at");
                r
            })
            .collect()
    };
    assert_eq!(strip(&again, "episodes"), strip(&doc, "episodes"));
    assert_eq!(strip(&again, "memories"), strip(&doc, "memories"));
    // Nothing is compiled twice, and later facts still supersede imported ones.
    let (s, b) = other.post_as("t2", "/v1/episodes", &crate::common::episode(subject, "I work at Umbrella now.")).await;
    assert_eq!(s, 201, "{b}");
    let (s, b) = other.post_as("t2", "/v1/memories/compile", &json!({"subject_id": subject})).await;
    assert_eq!(s, 200, "{b}");
    let after = timeline(&other, "t2", subject).await;
    let active_employers: Vec<&Value> = after["memories"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["status"] == "active" && m["metadata"]["claim"]["key"] == "employment.current_employer")
        .map(|m| &m["metadata"]["claim"]["value"])
        .collect();
    assert_eq!(active_employers, vec![&json!("umbrella")]);
}

#[tokio::test]
async fn bad_documents_are_refused_and_write_nothing() {
    let app = spawn().await;
    let doc = own_fixture("small-export.json");
    let refused = |s: u16, b: &Value, want: &str| {
        assert!(s == 400 || s == 422, "{s} {b}");
        let msg = b["error"]["message"].as_str().unwrap();
        assert!(msg.contains(want), "{msg}");
    };
    let mut tampered = doc.clone();
    tampered["memories"][0]["content"] = json!("user: something else");
    let (s, b) = app.post("/admin/import", &json!({"document": tampered})).await;
    refused(s, &b, "Checksum mismatch");
    let mut v2 = doc.clone();
    v2["format_version"] = json!("2.0");
    let (s, b) = app.post("/admin/import", &json!({"document": v2})).await;
    refused(s, &b, "Unsupported format version: 2.0 (expected 1.0)");
    let mut number = doc.clone();
    number["format_version"] = json!(1.0);
    let (s, b) = app.post("/admin/import", &json!({"document": number})).await;
    refused(s, &b, "Unsupported format version");
    // A truncated file is not JSON at all.
    let text = serde_json::to_string(&json!({"document": doc})).unwrap();
    let r = app
        .client
        .post(app.url("/admin/import"))
        .header("content-type", "application/json")
        .body(text[..text.len() / 2].to_string())
        .send()
        .await
        .unwrap();
    let (s, b) = crate::common::split(r).await;
    assert_eq!((s, &b["error"]["code"]), (422, &json!("validation_error")), "{b}");
    let (s, b) = app.post("/admin/import", &json!({"document": "not an object"})).await;
    refused(s, &b, "document");
    // A bad field names its record; the checksum is right, so this is the first failure.
    let mut bad_time = doc.clone();
    bad_time["episodes"][1]["created_at"] = json!("last tuesday");
    bad_time["checksum"] = json!(checksum(bad_time.get("episodes"), bad_time.get("memories")));
    let (s, b) = app.post("/admin/import", &json!({"document": bad_time})).await;
    refused(s, &b, "episodes[1].created_at");
    let mut bad_status = doc.clone();
    bad_status["memories"][2]["status"] = json!("archived");
    bad_status["checksum"] = json!(checksum(bad_status.get("episodes"), bad_status.get("memories")));
    let (s, b) = app.post("/admin/import", &json!({"document": bad_status})).await;
    refused(s, &b, "memories[2].status");
    let mut no_subject = doc.clone();
    no_subject["subject_id"] = json!("");
    let (s, b) = app.post("/admin/import", &json!({"document": no_subject})).await;
    refused(s, &b, "No subject_id specified");
    assert_eq!(rows(&app).await, (0, 0, 0));
    assert_eq!(app.count("tenants").await, 0);
}

#[tokio::test]
async fn a_subject_with_uncompiled_episodes_is_not_imported_into() {
    let app = spawn().await;
    let (s, _) = app.post_as("acme", "/v1/episodes", &crate::common::episode("user:small", "I like tea.")).await;
    assert_eq!(s, 201);
    let before = rows(&app).await;
    let (s, b) =
        app.post("/admin/import", &json!({"document": own_fixture("small-export.json"), "preserve_ids": false})).await;
    assert_eq!((s, &b["error"]["code"]), (409, &json!("subject_not_compiled")), "{b}");
    assert_eq!(rows(&app).await, before);
    // Once compiled, the import is added after what the subject holds.
    app.post_as("acme", "/v1/memories/compile", &json!({"subject_id": "user:small"})).await;
    let (s, b) =
        app.post("/admin/import", &json!({"document": own_fixture("small-export.json"), "preserve_ids": false})).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(timeline(&app, "acme", "user:small").await["episodes"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn export_and_import_are_tenant_scoped() {
    let app = spawn().await;
    let alpha = mnemo::services::keys::create(&app.pool, "alpha", mnemo::services::keys::Scope::Tenant, None)
        .await
        .unwrap()
        .secret;
    let admin = mnemo::services::keys::create(&app.pool, "ops", mnemo::services::keys::Scope::Operator, None)
        .await
        .unwrap()
        .secret;
    let r = app
        .client
        .post(app.url("/v1/episodes"))
        .header("X-API-Key", &alpha)
        .json(&crate::common::episode("user:a", "I live in Bergen."))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let get = |key: &str, path: &str| {
        let r = app.client.get(app.url(path)).header("X-API-Key", key);
        async move { crate::common::split(r.send().await.unwrap()).await }
    };
    // A tenant key reaches neither endpoint, not even for its own tenant.
    let (s, b) = get(&alpha, "/admin/export/user:a").await;
    assert_eq!((s, &b["error"]["code"]), (403, &json!("admin_required")));
    let r = app
        .client
        .post(app.url("/admin/import"))
        .header("X-API-Key", &alpha)
        .json(&json!({"document": own_fixture("small-export.json"), "target_tenant_id": "alpha"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    // An admin key sees the subject only in the tenant it names.
    let (s, b) = get(&admin, "/admin/export/user:a?tenant_id=alpha").await;
    assert_eq!((s, &b["counts"]["episodes"]), (200, &json!(1)), "{b}");
    let (s, b) = get(&admin, "/admin/export/user:a?tenant_id=beta").await;
    assert_eq!((s, b["error"]["message"].as_str().unwrap()), (404, "No data found for subject 'user:a'"));
    let (s, _) = get(&admin, "/admin/export/user:a").await;
    assert_eq!(s, 404, "the admin key's own tenant has no such subject");
}

fn cli(app: &TestApp, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(args)
        .env("MNEMO_DATABASE_URL", app.database_url())
        .env("MNEMO_EMBEDDER", "hash")
        .output()
        .unwrap()
}

#[tokio::test]
async fn cli_exports_and_imports_with_progress_lines() {
    let app = spawn().await;
    app.ingest_and_compile("user:cli", &["My name is Ana Lima.", "I work at Globex.", "I work at Initech now."]).await;
    let out = cli(&app, &["export", "--subject", "user:cli"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Not a terminal: plain progress lines.
    assert!(stderr.contains("exporting: ") && stderr.contains(" rows ("), "{stderr}");
    let (s, served) = app.get("/admin/export/user:cli").await;
    assert_eq!(s, 200);
    let mut written: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(written["checksum"], served["checksum"]);
    written["exported_at"] = served["exported_at"].clone();
    assert_eq!(written, served);

    let dir = std::env::temp_dir().join(format!("mnemo-port-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("user-cli.json");
    std::fs::write(&file, &out.stdout).unwrap();
    let file = file.to_str().unwrap();
    // The ids are used in this database (tenant default): refused in any tenant.
    let out = cli(&app, &["import", file, "--tenant", "t2", "--preserve-ids"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("ID conflict"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(tenant_rows(&app, "t2").await, 0);
    let other = spawn().await;
    let out = cli(&other, &["import", file, "--tenant", "t2", "--preserve-ids"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((&printed["tenant_id"], &printed["episodes_imported"]), (&json!("t2"), &json!(3)));
    assert!(String::from_utf8_lossy(&out.stderr).contains("embedding: "));
    let (a, b) = (timeline(&app, "default", "user:cli").await, timeline(&other, "t2", "user:cli").await);
    assert_eq!(a, b);
    // Again: the ids are taken now, and nothing is written.
    let app = other;
    let before = rows(&app).await;
    let out = cli(&app, &["import", file, "--tenant", "t2", "--preserve-ids"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("ID conflict"), "{}", String::from_utf8_lossy(&out.stderr));
    // A truncated file names where it stops.
    let text = std::fs::read_to_string(file).unwrap();
    let cut = dir.join("cut.json");
    std::fs::write(&cut, &text[..text.len() / 3]).unwrap();
    let out = cli(&app, &["import", cut.to_str().unwrap(), "--tenant", "t3"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("line 1 column"), "{stderr}");
    assert_eq!(rows(&app).await, before);
    std::fs::remove_dir_all(&dir).ok();
}

// ---- mnemo's own lossless dump (JSON Lines) ----

fn signing_keys() -> mnemo::receipts::signing::SigningKeys {
    mnemo::receipts::signing::SigningKeys::parse(r#"{"k1": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}"#).unwrap()
}

async fn signed_app() -> TestApp {
    let embedder = mnemo::embed::build(&mnemo::embed::EmbedderConfig::Hash { dims: 384 }).unwrap();
    crate::common::spawn_state(mnemo::RuntimeConfig::default(), embedder, signing_keys()).await
}

/// A tenant with two subjects: sessions, a snapshot, metadata, a resolution, labels, a
/// supersession and two signed receipts. Returns the receipt ids.
async fn rich_tenant(app: &TestApp, tenant: &str) -> Vec<String> {
    crate::common::set_config(app, tenant, json!({"receipt_signing_key_id": "k1"})).await;
    let subject = "user:rich";
    let texts = ["My name is Ana Lima.", "I work at Globex.", "I work at Initech now.", "I prefer green tea."];
    for text in texts {
        let mut e = crate::common::episode(subject, text);
        e["session_id"] = json!("s1");
        let (s, b) = app.post_as(tenant, "/v1/episodes", &e).await;
        assert_eq!(s, 201, "{b}");
        let (s, b) = app.post_as(tenant, "/v1/memories/compile", &json!({"subject_id": subject})).await;
        assert_eq!(s, 200, "{b}");
    }
    let (s, b) = app.post_as(tenant, "/v1/episodes", &crate::common::episode("user:other", "I live in Oslo.")).await;
    assert_eq!(s, 201, "{b}");
    app.post_as(tenant, "/v1/memories/compile", &json!({"subject_id": "user:other"})).await;
    let t = timeline(app, tenant, subject).await;
    assert!(t["memories"].as_array().unwrap().iter().any(|m| m["status"] == "superseded"));
    let name =
        t["memories"].as_array().unwrap().iter().find(|m| m["content"] == "My name is Ana Lima").unwrap().clone();
    let r = app
        .client
        .patch(app.url(&format!("/v1/memories/{}/labels", name["id"].as_str().unwrap())))
        .header("X-Tenant-ID", tenant)
        .json(&json!({"sensitivity_labels": ["pii"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let path = format!("/v1/subjects/{subject}/sessions/s1");
    let (s, log) = app.get_as(tenant, &path).await;
    assert_eq!(s, 200, "{log}");
    let (s, b) = app.patch_as(tenant, &path, &json!({"metadata": {"title": "Onboarding"}})).await;
    assert_eq!(s, 200, "{b}");
    let snap = json!({"summary": "Ana introduced herself and her job.", "pinned": [log["episodes"][0]["id"]],
                      "covers_through": log["episodes"][2]["cursor"], "prev": null});
    let (s, b) = app.put_as(tenant, &format!("{path}/snapshot"), &snap).await;
    assert_eq!(s, 201, "{b}");
    let res = json!({"subject_id": subject, "session_id": "s1", "status": "resolved", "resolution_summary": "Set up."});
    let (s, b) = app.post_as(tenant, "/v1/resolutions", &res).await;
    assert_eq!(s, 200, "{b}");
    let mut receipts = Vec::new();
    for task in ["Where does the user work?", "What does the user drink?"] {
        let body = json!({"subject_id": subject, "task": task, "emit_receipt": true, "session_id": "s1"});
        let (s, b) = app.post_as(tenant, "/v1/context", &body).await;
        assert_eq!(s, 200, "{b}");
        receipts.push(b["receipt_id"].as_str().unwrap().to_string());
    }
    receipts
}

fn row_lines(dump: &[u8]) -> Vec<String> {
    let text = String::from_utf8(dump.to_vec()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    lines[1..lines.len() - 1].iter().map(|l| l.to_string()).collect()
}

fn write_temp(name: &str, bytes: &[u8]) -> String {
    let dir = std::env::temp_dir().join(format!("mnemo-dump-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_string()
}

async fn tenant_rows(app: &TestApp, tenant: &str) -> i64 {
    let mut n = 0;
    for table in ["episodes", "memories", "receipts", "session_snapshots", "subject_counters", "resolutions"] {
        let sql = format!("SELECT count(*) FROM {table} WHERE tenant_id = $1");
        n += sqlx::query_scalar::<_, i64>(&sql).bind(tenant).fetch_one(&app.pool).await.unwrap();
    }
    n
}

#[tokio::test]
async fn mnemo_dump_moves_a_tenant_losslessly() {
    let a = signed_app().await;
    let receipts = rich_tenant(&a, "rich").await;
    let out = cli(&a, &["export", "--tenant", "rich", "--format", "mnemo"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dump = out.stdout;
    let first: Value = serde_json::from_str(String::from_utf8_lossy(&dump).lines().next().unwrap()).unwrap();
    assert_eq!(
        (&first["format"], &first["format_version"], &first["subject_id"]),
        (&json!("mnemo-dump"), &json!(1), &Value::Null)
    );
    assert_eq!(first["tables"]["receipts"], 2);
    let file = write_temp("rich.jsonl", &dump);

    let b = signed_app().await;
    let out = cli(&b, &["import", &file]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["tenant_id"], "rich");
    for subject in ["user:rich", "user:other"] {
        assert_eq!(timeline(&a, "rich", subject).await, timeline(&b, "rich", subject).await);
    }
    // Exported again, the copy gives the same rows, line for line.
    let again = cli(&b, &["export", "--tenant", "rich", "--format", "mnemo"]);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(row_lines(&again.stdout), row_lines(&dump));
    // The same request at the same instant gives the same bytes.
    let as_of = chrono::Utc::now().to_rfc3339();
    for task in ["Where does the user work?", "What is the user's name?"] {
        let body =
            json!({"subject_id": "user:rich", "task": task, "session_id": "s1", "as_of": as_of, "emit_receipt": false});
        let send =
            |app: &TestApp| app.client.post(app.url("/v1/context")).header("X-Tenant-ID", "rich").json(&body).send();
        let (ra, rb) = (send(&a).await.unwrap(), send(&b).await.unwrap());
        assert_eq!((ra.status().as_u16(), rb.status().as_u16()), (200, 200));
        assert_eq!(ra.bytes().await.unwrap(), rb.bytes().await.unwrap(), "{task}");
    }
    // Receipts verify, the chain verifies, and replay reproduces the bytes.
    for id in &receipts {
        let (_, v) = b.get_as("rich", &format!("/v1/receipts/{id}/verify")).await;
        assert_eq!((&v["valid"], &v["reason"]), (&json!(true), &json!("ok")), "{v}");
        let (s, r) = b.post_as("rich", &format!("/v1/receipts/{id}/replay"), &json!({})).await;
        assert_eq!((s, &r["reproduced"]), (200, &json!(true)), "{r}");
    }
    let (_, chain) = b.get_as("rich", "/v1/receipts/chain/verify").await;
    assert_eq!(chain["ok"], true, "{chain}");
    // Refusals write nothing: an occupied tenant, a changed byte, a cut file, another version.
    let out = cli(&b, &["import", &file]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already holds data"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(dump.clone()).unwrap();
    let changed = text.replacen("Globex", "Globez", 1);
    let out = cli(&b, &["import", &write_temp("changed.jsonl", changed.as_bytes()), "--tenant", "fresh"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("checksum mismatch"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().collect();
    let cut = lines[..lines.len() - 3].join("\n") + "\n";
    let out = cli(&b, &["import", &write_temp("cut.jsonl", cut.as_bytes()), "--tenant", "fresh"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("without its trailer line"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let half = &text[..text.len() / 2];
    let out = cli(&b, &["import", &write_temp("half.jsonl", half.as_bytes()), "--tenant", "fresh"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not JSON"), "{}", String::from_utf8_lossy(&out.stderr));
    let v2 = text.replacen("\"format_version\":1", "\"format_version\":2", 1);
    let out = cli(&b, &["import", &write_temp("v2.jsonl", v2.as_bytes()), "--tenant", "fresh"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("line 1: field format_version"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(tenant_rows(&b, "fresh").await, 0);

    // One subject moves on its own, into another tenant; its receipts still verify one by one.
    let out = cli(&a, &["export", "--tenant", "rich", "--subject", "user:rich", "--format", "mnemo"]);
    assert!(out.status.success());
    let out = cli(&b, &["import", &write_temp("subject.jsonl", &out.stdout), "--tenant", "copy"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(timeline(&a, "rich", "user:rich").await, timeline(&b, "copy", "user:rich").await);
    let (_, v) = b.get_as("copy", &format!("/v1/receipts/{}/verify", receipts[0])).await;
    assert_eq!(v["reason"], "ok", "{v}");
}

#[tokio::test]
async fn every_tenant_table_is_dumped_or_left_out_on_purpose() {
    let app = spawn().await;
    let mut conn = app.pool.acquire().await.unwrap();
    let mut schema = mnemo::db::dump::tenant_tables(&mut conn).await.unwrap();
    schema.sort();
    let mut known: Vec<String> = mnemo::db::dump::TABLES.iter().map(|t| t.name.to_string()).collect();
    known.extend(mnemo::db::dump::NOT_EXPORTED.iter().map(|(t, _)| t.to_string()));
    known.sort();
    assert_eq!(schema, known, "a new table with tenant rows must join db::dump::TABLES or NOT_EXPORTED");
    let subject_tables = mnemo::db::erase::tables_with_subjects(&mut conn).await.unwrap();
    for t in mnemo::db::dump::TABLES {
        assert_eq!(t.per_subject, subject_tables.contains(&t.name.to_string()), "{}", t.name);
    }
}

// ---- the Statewave-format export is streamed ----

/// A rich subject plus an episode with non-ASCII text, floats and nested metadata that compile
/// has not reached (so `last_compiled_at` is null for it).
async fn streamed_subject(app: &TestApp) {
    rich_tenant(app, "rich").await;
    let mut e = crate::common::episode("user:rich", "Zo\u{eb} \u{1f600} \"hi\"\n\tand \\ back");
    e["payload"]["x"] = json!(1.0);
    e["payload"]["y"] = json!(0.00001);
    e["payload"]["big"] = json!(1.2345678901234568e17);
    e["metadata"] = json!({"b": 2, "a": [1.5, null, true, {"z": "\u{7f}"}]});
    let (s, b) = app.post_as("rich", "/v1/episodes", &e).await;
    assert_eq!(s, 201, "{b}");
}

fn exported_at(doc: &[u8]) -> chrono::DateTime<chrono::Utc> {
    let v: Value = serde_json::from_slice(doc).unwrap();
    chrono::DateTime::parse_from_rfc3339(v["exported_at"].as_str().unwrap()).unwrap().to_utc()
}

/// The document as the in-memory implementation wrote it (before the export was streamed):
/// `serde_json` over the whole `ExportDocument`, its checksum computed over the whole arrays.
fn in_memory_reference(doc: &[u8]) -> String {
    use mnemo::services::statewave_backup::records::{EpisodeRecord, ExportDocument, MemoryRecord};
    let v: Value = serde_json::from_slice(doc).unwrap();
    let episodes: Vec<EpisodeRecord> = serde_json::from_value(v["episodes"].clone()).unwrap();
    let memories: Vec<MemoryRecord> = serde_json::from_value(v["memories"].clone()).unwrap();
    let (subject, tenant) = (v["subject_id"].as_str().unwrap(), v["tenant_id"].as_str().unwrap());
    let doc = ExportDocument::new(subject, tenant, &exported_at(doc), episodes, memories).unwrap();
    serde_json::to_string(&doc).unwrap()
}

#[tokio::test]
async fn streamed_statewave_export_is_byte_identical_to_the_in_memory_document() {
    let app = signed_app().await;
    streamed_subject(&app).await;
    let r = app.client.get(app.url("/admin/export/user:rich?tenant_id=rich")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    let served = r.bytes().await.unwrap().to_vec();
    let doc: Value = serde_json::from_slice(&served).unwrap();
    assert!(doc["episodes"].as_array().unwrap().iter().any(|e| e["last_compiled_at"].is_null()));
    assert!(doc["memories"].as_array().unwrap().iter().any(|m| m["status"] == "superseded"));
    assert_eq!(doc["checksum"].as_str().unwrap(), checksum(doc.get("episodes"), doc.get("memories")));
    assert_eq!(String::from_utf8(served.clone()).unwrap(), in_memory_reference(&served));
    // The CLI writes the same bytes, plus a final newline.
    let out = cli(&app, &["export", "--tenant", "rich", "--subject", "user:rich"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8(out.stdout.clone()).unwrap(), in_memory_reference(&out.stdout) + "\n");
    let written: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(written["checksum"], doc["checksum"]);
}

// ---- preserved ids are checked across the whole database ----

#[tokio::test]
async fn preserved_ids_in_another_tenant_are_refused() {
    let app = spawn().await;
    let doc = own_fixture("small-export.json");
    let (s, b) = app.post("/admin/import", &json!({"document": doc})).await;
    assert_eq!((s, &b["tenant_id"]), (200, &json!("acme")), "{b}");
    // The same ids into tenant beta (which cannot see acme's rows): refused, nothing written.
    let (s, b) = app.post("/admin/import", &json!({"document": doc, "target_tenant_id": "beta"})).await;
    assert_eq!((s, &b["error"]["code"]), (400, &json!("http_error")), "{b}");
    assert_eq!(
        b["error"]["message"],
        "ID conflict: 2 episode(s) and 4 memory(ies) already exist. Use preserve_ids=false to import with new ids"
    );
    // Memories alone conflict too (Statewave 0.7.1 would fail on the primary key instead).
    let mut memories_only = doc.clone();
    memories_only["episodes"] = json!([]);
    memories_only["checksum"] = json!(checksum(memories_only.get("episodes"), memories_only.get("memories")));
    let (s, b) = app.post("/admin/import", &json!({"document": memories_only, "target_tenant_id": "beta"})).await;
    assert_eq!(s, 400, "{b}");
    assert!(b["error"]["message"].as_str().unwrap().starts_with("ID conflict: 0 episode(s) and 4 memory(ies)"));
    assert_eq!(tenant_rows(&app, "beta").await, 0);
    assert_eq!(app.count("tenants").await, 1);
    // With fresh ids it lands.
    let body = json!({"document": doc, "target_tenant_id": "beta", "preserve_ids": false});
    let (s, b) = app.post("/admin/import", &body).await;
    assert_eq!(s, 200, "{b}");

    // The function behind the check answers ids only: as the server's role, in tenant gamma,
    // acme's rows stay invisible while their ids are reported as used.
    let ids: Vec<uuid::Uuid> =
        doc["episodes"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().parse().unwrap()).collect();
    let mut tx = app.app_pool.begin().await.unwrap();
    sqlx::query("SELECT set_config('mnemo.tenant', 'gamma', true)").execute(&mut *tx).await.unwrap();
    let visible: i64 = sqlx::query_scalar("SELECT count(*) FROM episodes WHERE id = ANY($1)")
        .bind(&ids)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(visible, 0, "row-level security hides other tenants' episodes");
    let fresh = uuid::Uuid::new_v4();
    let mut asked = ids.clone();
    asked.push(fresh);
    let used: Vec<(String, uuid::Uuid)> = sqlx::query_as("SELECT kind, id FROM mnemo_ids_in_use($1, $2)")
        .bind(&asked)
        .bind(&[fresh][..])
        .fetch_all(&mut *tx)
        .await
        .unwrap();
    let mut want: Vec<(String, uuid::Uuid)> = ids.iter().map(|id| ("episode".to_string(), *id)).collect();
    want.sort();
    assert_eq!(used, want);
    let (role, definer): (String, bool) =
        sqlx::query_as("SELECT current_user::text, prosecdef FROM pg_proc WHERE proname = 'mnemo_ids_in_use'")
            .fetch_one(&mut *tx)
            .await
            .unwrap();
    assert_eq!((role.as_str(), definer), ("mnemo_app", true));
}

// ---- merging a mnemo subject dump into a subject that holds data ----

async fn ingest(app: &TestApp, tenant: &str, subject: &str, text: &str, key: Option<&str>, session: &str) {
    let mut e = crate::common::episode(subject, text);
    e["session_id"] = json!(session);
    if let Some(k) = key {
        e["idempotency_key"] = json!(k);
    }
    let (s, b) = app.post_as(tenant, "/v1/episodes", &e).await;
    assert!(s == 201 || s == 200, "{b}");
    let (s, b) = app.post_as(tenant, "/v1/memories/compile", &json!({"subject_id": subject})).await;
    assert_eq!(s, 200, "{b}");
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn merge_adds_a_subject_dump_to_an_existing_subject() {
    let (a, b) = (signed_app().await, signed_app().await);
    crate::common::set_config(&a, "src", json!({"receipt_signing_key_id": "k1"})).await;
    crate::common::set_config(&b, "src", json!({"receipt_signing_key_id": "k1"})).await;
    let subject = "user:m";
    ingest(&a, "src", subject, "My name is Ana Lima.", Some("k1"), "sa").await;
    ingest(&a, "src", subject, "I work at Globex.", Some("k2"), "sa").await;
    ingest(&a, "src", subject, "I prefer green tea.", Some("k3"), "sa").await;
    let body = json!({"subject_id": subject, "task": "Where does Ana work?", "emit_receipt": true});
    let (s, r) = a.post_as("src", "/v1/context", &body).await;
    assert_eq!(s, 200, "{r}");
    let out = cli(&a, &["export", "--tenant", "src", "--subject", subject, "--format", "mnemo"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let file = write_temp("merge.jsonl", &out.stdout);

    // The target subject already has its own history: k1 is the same episode, one is new.
    ingest(&b, "src", subject, "My name is Ana Lima.", Some("k1"), "sb").await;
    ingest(&b, "src", subject, "I live in Quito.", None, "sb").await;
    let (s, r) =
        b.post_as("src", "/v1/context", &json!({"subject_id": subject, "task": "Where?", "emit_receipt": true})).await;
    assert_eq!(s, 200, "{r}");
    let own_receipt = r["receipt_id"].as_str().unwrap().to_string();
    let existing_k1: String =
        sqlx::query_scalar("SELECT id::text FROM episodes WHERE tenant_id = 'src' AND idempotency_key = 'k1'")
            .fetch_one(&b.pool)
            .await
            .unwrap();

    // Without --merge: refused, pointing at the option.
    let out = cli(&b, &["import", &file]);
    assert!(!out.status.success() && stderr_of(&out).contains("--merge"), "{}", stderr_of(&out));

    let out = cli(&b, &["import", &file, "--merge"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["merged"], true, "{printed}");
    assert_eq!((&printed["skipped"]["episodes"], &printed["skipped"]["receipts"]), (&json!(1), &json!(1)), "{printed}");

    let after = timeline(&b, "src", subject).await;
    let episodes = after["episodes"].as_array().unwrap();
    assert_eq!(episodes.len(), 4, "{after}");
    let seqs: Vec<(i64, Option<String>)> = sqlx::query_as(
        "SELECT seq, idempotency_key FROM episodes WHERE tenant_id = 'src' AND subject_id = $1 ORDER BY seq",
    )
    .bind(subject)
    .fetch_all(&b.pool)
    .await
    .unwrap();
    let keys: Vec<Option<&str>> = seqs.iter().map(|(_, k)| k.as_deref()).collect();
    assert_eq!(seqs.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [1, 2, 3, 4]);
    assert_eq!(keys, [Some("k1"), None, Some("k2"), Some("k3")]);
    // The dump's memories came with their ids; the one made from k1 now cites the existing episode.
    let src = timeline(&a, "src", subject).await;
    let memories = after["memories"].as_array().unwrap();
    for m in src["memories"].as_array().unwrap() {
        let got = memories.iter().find(|g| g["id"] == m["id"]).unwrap_or_else(|| panic!("{m}"));
        assert_eq!(got["content"], m["content"]);
    }
    let name = memories.iter().filter(|m| m["content"] == "My name is Ana Lima").collect::<Vec<_>>();
    assert!(name.len() >= 2 && name.iter().all(|m| m["source_episode_ids"] == json!([existing_k1])), "{name:?}");
    // Nothing is compiled twice; the target's receipt chain still verifies, with its own receipt only.
    let (s, c) = b.post_as("src", "/v1/memories/compile", &json!({"subject_id": subject})).await;
    assert_eq!((s, c["memories"].as_array().map(Vec::len)), (200, Some(0)), "{c}");
    let (_, chain) = b.get_as("src", "/v1/receipts/chain/verify").await;
    assert_eq!(chain["ok"], true, "{chain}");
    let receipts: i64 =
        sqlx::query_scalar("SELECT count(*) FROM receipts WHERE tenant_id = 'src'").fetch_one(&b.pool).await.unwrap();
    assert_eq!(receipts, 1);
    // The merge happened now: a receipt issued before it still replays to the same bytes.
    let (s, r) = b.post_as("src", &format!("/v1/receipts/{own_receipt}/replay"), &json!({})).await;
    assert_eq!((s, &r["reproduced"]), (200, &json!(true)), "{r}");
    // New episodes continue after the merged ones.
    ingest(&b, "src", subject, "I work at Initech now.", None, "sb").await;
    let t = timeline(&b, "src", subject).await;
    assert_eq!(t["episodes"].as_array().unwrap().len(), 5);

    // The same dump again: its memory ids are taken; refused naming the line, nothing written.
    let rows_before = tenant_rows(&b, "src").await;
    let out = cli(&b, &["import", &file, "--merge"]);
    let err = stderr_of(&out);
    assert!(!out.status.success() && err.contains("field row.id") && err.contains("line "), "{err}");
    assert_eq!(tenant_rows(&b, "src").await, rows_before);

    // A session the target already uses is refused too.
    ingest(&b, "other", subject, "I like chess.", None, "sa").await;
    let rows_before = tenant_rows(&b, "other").await;
    let out = cli(&b, &["import", &file, "--merge", "--tenant", "other"]);
    let err = stderr_of(&out);
    assert!(!out.status.success() && err.contains("field row.session_id") && err.contains("'sa'"), "{err}");
    assert_eq!(tenant_rows(&b, "other").await, rows_before);
    // A tenant dump never merges.
    let out = cli(&a, &["export", "--tenant", "src", "--format", "mnemo"]);
    let whole = write_temp("whole.jsonl", &out.stdout);
    let out = cli(&b, &["import", &whole, "--merge"]);
    assert!(!out.status.success() && stderr_of(&out).contains("subject dump"), "{}", stderr_of(&out));
}

#[tokio::test]
async fn import_body_errors_are_located_and_write_nothing() {
    let app = spawn().await;
    let first = |b: &Value| (b["error"]["details"][0]["loc"].clone(), b["error"]["details"][0]["type"].clone());
    let (s, b) = app.post("/admin/import", &json!({})).await;
    assert_eq!((s, first(&b)), (422, (json!(["body", "document"]), json!("missing"))), "{b}");
    let (s, b) = app.post("/admin/import", &json!({"document": [1, 2]})).await;
    assert_eq!((s, first(&b)), (422, (json!(["body", "document"]), json!("dict_type"))), "{b}");
    let (s, b) = app.post("/admin/import", &json!({"document": {}, "target_tenant_id": "a\tb"})).await;
    assert_eq!((s, first(&b)), (422, (json!(["body", "target_tenant_id"]), json!("string_length"))), "{b}");
    let (s, b) = app.post("/admin/import", &json!({"document": {}, "preserve_ids": "yes"})).await;
    assert_eq!((s, first(&b)), (422, (json!(["body", "preserve_ids"]), json!("bool_type"))), "{b}");
    assert_eq!(app.count("episodes").await + app.count("memories").await, 0);
}

/// A long episode imported from a Statewave backup gets its passages, as compile gives them.
#[tokio::test]
async fn an_imported_long_episode_gets_its_passages() {
    let app = spawn().await;
    let subject = "user:long";
    let long = "I keep notes on every trip I take, with the trains and the hotels and what I ate. ".repeat(12);
    let (s, b) = app.post_as("t1", "/v1/episodes", &crate::common::episode(subject, &long)).await;
    assert_eq!(s, 201, "{b}");
    let (s, b) = app.post_as("t1", "/v1/memories/compile", &json!({"subject_id": subject})).await;
    assert_eq!(s, 200, "{b}");
    let (s, doc) = app.get(&format!("/admin/export/{subject}?tenant_id=t1")).await;
    assert_eq!(s, 200, "{doc}");
    let other = spawn().await;
    let (s, b) = other.post("/admin/import", &json!({"document": doc, "target_tenant_id": "t2"})).await;
    assert_eq!(s, 200, "{b}");
    let count = |pool| async move {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM episode_passages WHERE subject_id = 'user:long'")
            .fetch_one(pool)
            .await
            .unwrap()
    };
    let (there, here) = (count(&app.pool).await, count(&other.pool).await);
    assert!(there >= 1 && here == there, "{there} passages compiled, {here} imported");
}
