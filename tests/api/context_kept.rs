//! A small subject's rows kept between context calls (`services::context::subjects`, migration
//! 0032): after any change, made through any server or straight in the database, a server that
//! keeps a copy answers exactly as a server that keeps none.

use serde_json::{json, Value};

use crate::common::{episode, spawn, spawn_replica, TestApp};
use mnemo::RuntimeConfig;

const TASKS: [&str; 4] = [
    "Where does the user work now?",
    "What tea does the user like?",
    "What did we say about the garden and the roses?",
    "Summarise the last few turns.",
];

/// The bundles of `TASKS` for `subject` at `as_of` (every field of the response).
async fn bundles(app: &TestApp, subject: &str, as_of: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for task in TASKS {
        let req = json!({"subject_id": subject, "task": task, "max_tokens": 600, "as_of": as_of});
        let (s, b) = app.post("/v1/context", &req).await;
        assert_eq!(s, 200, "{b}");
        out.push(b);
    }
    out
}

/// Both servers' bundles at one instant: they must be equal. Returns them.
async fn same(keeps: &TestApp, keeps_none: &TestApp, subject: &str, step: &str) -> Vec<Value> {
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let as_of = mnemo::model::time::format(&mnemo::model::time::now_micros());
    let kept = bundles(keeps, subject, &as_of).await;
    let fresh = bundles(keeps_none, subject, &as_of).await;
    for (k, f) in kept.iter().zip(&fresh) {
        assert_eq!(k, f, "after {step}: the server keeping a copy answered otherwise");
    }
    kept
}

fn text(bundles: &[Value]) -> String {
    bundles.iter().map(|b| b["assembled_context"].as_str().unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

async fn ingest(app: &TestApp, subject: &str, texts: &[&str]) {
    let eps: Vec<Value> = texts.iter().map(|t| episode(subject, t)).collect();
    let (s, b) = app.post("/v1/episodes/batch", &json!({ "episodes": eps })).await;
    assert_eq!(s, 201, "{b}");
}

#[tokio::test]
async fn a_kept_subject_follows_every_change_made_anywhere() {
    let keeps = spawn().await;
    let keeps_none = spawn_replica(&keeps, RuntimeConfig { context_cache_bytes: 0, ..RuntimeConfig::default() }).await;
    let other = spawn_replica(&keeps, RuntimeConfig::default()).await;
    let s = "kept";
    let first: Vec<String> = (0..12)
        .map(|i| format!("Turn {i}: I work at Acme Bakery as a pastry chef, and the garden roses are blooming."))
        .collect();
    ingest(&keeps, s, &first.iter().map(String::as_str).collect::<Vec<_>>()).await;
    keeps.compile_all(s).await;
    let start = same(&keeps, &keeps_none, s, "the first calls").await;
    assert!(text(&start).contains("Acme"));
    let before_changes = mnemo::model::time::format(&mnemo::model::time::now_micros());

    // A new turn through another server: the kept copy is stale, the fingerprint says so.
    ingest(&other, s, &["My favourite tea is rooibos with honey."]).await;
    assert!(text(&same(&keeps, &keeps_none, s, "a turn through another server").await).contains("rooibos"));

    // Compiling it and a change of employer (a new memory supersedes the old one).
    ingest(&other, s, &["I changed jobs: I now work at Globex Foods as a baker."]).await;
    other.compile_all(s).await;
    let changed = same(&keeps, &keeps_none, s, "a compile with a supersession").await;
    assert!(text(&changed).contains("Globex"), "{}", text(&changed));

    // Labels, through the API of another server, on the fact the first task shows.
    let fact_ids = |bundles: &[Value]| -> Vec<String> {
        bundles[0]["facts"].as_array().unwrap().iter().map(|f| f["id"].as_str().unwrap().to_string()).collect()
    };
    let globex = other.memories(s).await.into_iter().find(|m| {
        m["status"] == "active" && m["kind"] == "profile_fact" && m["content"].as_str().unwrap().contains("Globex")
    });
    let Some(globex) = globex else { panic!("no fact of the new employer") };
    let id = globex["id"].as_str().unwrap().to_string();
    assert!(fact_ids(&changed).contains(&id), "the first task shows the new employer fact: {}", text(&changed));
    let (st, b) =
        other.patch_as("default", &format!("/v1/memories/{id}/labels"), &json!({"sensitivity_labels": ["pii"]})).await;
    assert_eq!(st, 200, "{b}");
    let labelled = same(&keeps, &keeps_none, s, "new labels").await;
    let fact = labelled[0]["facts"].as_array().unwrap().iter().find(|f| f["id"] == id.as_str()).unwrap().clone();
    assert_eq!(fact["sensitivity_labels"], json!(["pii"]));

    // Changes an operator makes in the database itself: a memory's text, a tombstone.
    sqlx::query("UPDATE memories SET content = 'I work at Initech now' WHERE subject_id = $1 AND id = $2::uuid")
        .bind(s)
        .bind(&id)
        .execute(&keeps.pool)
        .await
        .unwrap();
    assert!(text(&same(&keeps, &keeps_none, s, "a memory's text written in SQL").await).contains("Initech"));
    sqlx::query(
        "UPDATE memories SET status = 'tombstoned', superseded_at = now() WHERE subject_id = $1 AND id = $2::uuid",
    )
    .bind(s)
    .bind(&id)
    .execute(&keeps.pool)
    .await
    .unwrap();
    let forgotten = same(&keeps, &keeps_none, s, "a tombstone written in SQL").await;
    assert!(!fact_ids(&forgotten).contains(&id));
    sqlx::query("DELETE FROM supersession_records WHERE subject_id = $1").bind(s).execute(&keeps.pool).await.unwrap();
    same(&keeps, &keeps_none, s, "supersession records deleted in SQL").await;

    // A past instant, on a copy that holds rows recorded after it.
    let past_kept = bundles(&keeps, s, &before_changes).await;
    let past_fresh = bundles(&keeps_none, s, &before_changes).await;
    assert_eq!(past_kept, past_fresh, "a past instant on the kept copy");
    assert!(!text(&past_kept).contains("rooibos"));

    // Erased through another server, then as many new turns as before: nothing of the old
    // subject may come back from the copy.
    let r = other.client.delete(other.url(&format!("/v1/subjects/{s}"))).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let gone = same(&keeps, &keeps_none, s, "the erasure").await;
    assert!(!text(&gone).contains("Acme") && !text(&gone).contains("rooibos"), "{}", text(&gone));
    let again: Vec<String> = (0..14).map(|i| format!("Turn {i}: we planted tulips by the fence.")).collect();
    ingest(&other, s, &again.iter().map(String::as_str).collect::<Vec<_>>()).await;
    other.compile_all(s).await;
    let reborn = same(&keeps, &keeps_none, s, "new turns after the erasure").await;
    assert!(!text(&reborn).contains("Acme") && text(&reborn).contains("tulips"), "{}", text(&reborn));
}

/// A subject of turns only (no memory was ever written, so its memory version stays 0) erased
/// and then given as many new turns: the fingerprint still differs (its latest turn's id), so
/// the copy of the erased turns is not used.
#[tokio::test]
async fn an_erased_subject_of_turns_only_never_comes_back_from_a_copy() {
    let keeps = spawn().await;
    let keeps_none = spawn_replica(&keeps, RuntimeConfig { context_cache_bytes: 0, ..RuntimeConfig::default() }).await;
    let s = "turns-only";
    ingest(&keeps, s, &["The garden roses are blooming.", "I like rooibos tea."]).await;
    assert!(text(&same(&keeps, &keeps_none, s, "the first calls").await).contains("rooibos"));
    let r = keeps_none.client.delete(keeps_none.url(&format!("/v1/subjects/{s}"))).send().await.unwrap();
    assert_eq!(r.status(), 200);
    ingest(&keeps_none, s, &["We planted tulips.", "The fence needs paint."]).await;
    let after = text(&same(&keeps, &keeps_none, s, "the erasure and two new turns").await);
    assert!(!after.contains("rooibos") && after.contains("tulips"), "{after}");
}

/// Waits until `app` keeps nothing of `subject` (its copies are dropped about once a second
/// after an erasure made elsewhere); fails after 10 s.
async fn until_forgotten(app: &TestApp, subject: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while app.subjects.get("default", subject).is_some() {
        assert!(std::time::Instant::now() < deadline, "{subject}: still kept 10 s after its erasure");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A subject erased through another server, or by another process (the `mnemo erase` command
/// calls the erase service as this test does), leaves no copy in a server that kept one, even
/// when that server is never asked about the subject again; other subjects' copies stay.
#[tokio::test]
async fn a_copy_goes_within_seconds_of_an_erasure_made_elsewhere() {
    let keeps = spawn().await;
    let other = spawn_replica(&keeps, RuntimeConfig::default()).await;
    for s in ["erased-by-api", "erased-by-command", "stays"] {
        ingest(&keeps, s, &["The garden roses are blooming.", "I like rooibos tea."]).await;
        bundles(&keeps, s, &mnemo::model::time::format(&mnemo::model::time::now_micros())).await;
        assert!(keeps.subjects.get("default", s).is_some(), "{s}: a small subject is kept after a call");
    }

    let r = other.client.delete(other.url("/v1/subjects/erased-by-api")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    until_forgotten(&keeps, "erased-by-api").await;

    let keys = mnemo::receipts::signing::SigningKeys::empty();
    let hooks = mnemo::services::webhooks::Webhooks::disabled();
    mnemo::services::erase::erase_subject(&other.app_pool, &keys, &hooks, "default", "erased-by-command")
        .await
        .unwrap();
    until_forgotten(&keeps, "erased-by-command").await;

    assert!(keeps.subjects.get("default", "stays").is_some(), "only erased subjects' copies go");
}

/// What the statement sends to a server holding a copy: nothing when nothing changed, only the
/// changed memory after one memory changed, only the new turn after a turn came.
#[tokio::test]
async fn a_call_on_a_kept_subject_gets_only_what_changed() {
    use mnemo::db::context::{candidates, Fetched, Probe, Sent, SmallCall};
    let app = spawn().await;
    let s = "delta";
    let turns: Vec<String> =
        (0..20).map(|i| format!("Turn {i}: I work at Acme Bakery and like rooibos tea.")).collect();
    ingest(&app, s, &turns.iter().map(String::as_str).collect::<Vec<_>>()).await;
    app.compile_all(s).await;
    let probe = Probe::new("default", s, mnemo::model::time::now_micros(), Some("tea".into()));
    let pool = &app.app_pool;
    let call = |known: Option<(String, i64)>| {
        let probe = probe.clone();
        async move {
            let known = known.as_ref().map(|(f, x)| (f.as_str(), *x));
            match candidates(pool, &probe, false, false, known, None).await.unwrap().0 {
                Fetched::Subject(call) => call,
                Fetched::Pool(_) => panic!("a small subject came back as a pool"),
                Fetched::Hits(_) => panic!("a small subject came back as hits"),
            }
        }
    };
    let known = |c: &SmallCall, rows: &mnemo::db::context::SubjectRows| {
        Some((c.fingerprint.clone(), rows.memories.iter().map(|m| m.xmin).max().unwrap()))
    };
    let mut first = call(None).await;
    let Some(rows) = first.rows(None).unwrap() else { panic!("all rows were sent") };
    assert_eq!((rows.memories.len() > 10, rows.episodes.len()), (true, 20));

    let same = call(known(&first, &rows)).await;
    assert_eq!((same.memories_sent, same.episodes_sent), (Sent::Kept, Sent::Kept));
    assert_eq!(same.fingerprint, first.fingerprint);

    let id = rows.memories[3].candidate.memory.id;
    let (st, b) =
        app.patch_as("default", &format!("/v1/memories/{id}/labels"), &json!({"sensitivity_labels": ["pii"]})).await;
    assert_eq!(st, 200, "{b}");
    let mut changed = call(known(&first, &rows)).await;
    assert_eq!((changed.memories_sent, changed.episodes_sent), (Sent::Changed, Sent::Kept));
    assert_eq!(changed.memories.iter().map(|m| m.candidate.memory.id).collect::<Vec<_>>(), vec![id]);
    let Some(after_labels) = changed.rows(Some(&rows)).unwrap() else { panic!("the copy was not used") };
    assert_eq!(after_labels.memories.len(), rows.memories.len());
    let labelled = after_labels.memories.iter().find(|m| m.candidate.memory.id == id).unwrap();
    assert_eq!(labelled.candidate.memory.sensitivity_labels, vec!["pii".to_string()]);

    ingest(&app, s, &["One more turn about tea."]).await;
    let mut more = call(known(&changed, &after_labels)).await;
    assert_eq!((more.memories_sent, more.episodes_sent), (Sent::Kept, Sent::After));
    assert_eq!(more.episodes.len(), 1);
    let Some(after_turn) = more.rows(Some(&after_labels)).unwrap() else { panic!("the copy was not used") };
    assert_eq!(after_turn.episodes.len(), 21);
    assert!(after_turn.episodes.windows(2).all(|w| w[0].candidate.seq < w[1].candidate.seq));
}
