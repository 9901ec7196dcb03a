//! A large subject's lexical lanes ranked on the server's index of its lexemes
//! (`services::context::lexical`): after any change, made through any server or
//! straight in the database, a server that keeps indexes answers exactly as one that keeps none,
//! and once its index is current its lanes are the ones the call uses.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::Ordering::Relaxed;

use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use crate::common::{episode, spawn, spawn_replica, TestApp};
use mnemo::RuntimeConfig;

/// Tasks of every kind: rare and frequent words, numbers, stop words only, a word common in the
/// subject (every turn says "turn"), a word the server cannot stem (so Postgres ranks), a long one.
const TASKS: [&str; 12] = [
    "What did we decide about the kafka consumer lag?",
    "Where does the user work now?",
    "deploy pipeline staging rollback",
    "Summarise the budget review (request 214)",
    "Which turn mentioned the v2 migration and the 3rd retry?",
    "What is it about?",
    "Tell me about the café menu and the espresso machine.",
    "Prepare notes on incidents, dashboards, alerts, latency, retries, queues, backups, billing, \
     invoices, onboarding, hiring, roadmap, offsite, budget, pipeline and kafka.",
    "running runs ran runner",
    "What tea does the user like?",
    "postgres vacuum bloat",
    "Any news on the garden roses?",
];

/// Words of the subject's turns, the first ones far more frequent than the last.
const WORDS: [&str; 40] = [
    "deploy",
    "pipeline",
    "kafka",
    "consumer",
    "lag",
    "budget",
    "review",
    "incident",
    "dashboard",
    "alert",
    "latency",
    "retry",
    "queue",
    "backup",
    "billing",
    "invoice",
    "onboarding",
    "hiring",
    "roadmap",
    "offsite",
    "staging",
    "rollback",
    "migration",
    "postgres",
    "vacuum",
    "bloat",
    "garden",
    "roses",
    "espresso",
    "machine",
    "request",
    "runner",
    "running",
    "tulips",
    "fence",
    "paint",
    "laptop",
    "charger",
    "printer",
    "toner",
];

/// `n` turns from turn `from` on: a fact every 25th (where the user works and what tea they
/// like, changing over time), the rest a few words drawn with a falling frequency.
fn turns(from: usize, n: usize, seed: u64) -> Vec<String> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let employers = ["Acme Bakery", "Globex Foods", "Initech"];
    (from..from + n)
        .map(|i| {
            if i % 25 == 0 {
                let e = employers[(i / 500) % employers.len()];
                return format!("Turn {i}: I work at {e} now, and my favourite tea is number {}.", i % 7);
            }
            let words: Vec<&str> = (0..rng.gen_range(4..10))
                .map(|_| {
                    let x: f64 = rng.gen();
                    WORDS[((x * x * x) * WORDS.len() as f64) as usize]
                })
                .collect();
            let extra = if i % 97 == 0 { format!(" v2 build {}", i % 5) } else { String::new() };
            format!("Turn {i}: {}.{extra}", words.join(" "))
        })
        .collect()
}

async fn ingest(app: &TestApp, subject: &str, texts: &[String]) {
    for chunk in texts.chunks(100) {
        let eps: Vec<Value> = chunk
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut e = episode(subject, t);
                e["session_id"] = json!(format!("s{}", i % 3));
                e
            })
            .collect();
        let (s, b) = app.post("/v1/episodes/batch", &json!({ "episodes": eps })).await;
        assert_eq!(s, 201, "{b}");
    }
}

/// Both servers' bundles of every task at one instant (`as_of`, else now): they must be equal.
async fn same(keeps: &TestApp, keeps_none: &TestApp, subject: &str, as_of: Option<&str>, step: &str) -> Vec<Value> {
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let now = mnemo::model::time::format(&mnemo::model::time::now_micros());
    let as_of = as_of.unwrap_or(&now);
    let mut out = Vec::new();
    for task in TASKS {
        let req = json!({"subject_id": subject, "task": task, "max_tokens": 700, "as_of": as_of});
        let (s1, kept) = keeps.post("/v1/context", &req).await;
        let (s2, fresh) = keeps_none.post("/v1/context", &req).await;
        assert_eq!((s1, s2), (200, 200), "{kept} {fresh}");
        assert_eq!(kept, fresh, "after {step}, task {task:?}: the server keeping an index answered otherwise");
        out.push(kept);
    }
    out
}

/// Waits until the server's index of `subject` is of the subject's state now.
async fn index_current(app: &TestApp, subject: &str) {
    let state: String = sqlx::query_scalar("SELECT mnemo_lexical_state('default', $1)")
        .bind(subject)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    for _ in 0..3000 {
        if app.subjects.lexical.get("default", subject).is_some_and(|i| i.state == state) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the index of {subject} never reached the state {state}");
}

/// Calls whose lanes the server ranked, since `before`.
fn by_server(app: &TestApp, before: u64) -> u64 {
    app.subjects.lexical.counts.server.load(Relaxed) - before
}

fn text(bundles: &[Value]) -> String {
    bundles.iter().map(|b| b["assembled_context"].as_str().unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

#[tokio::test]
async fn an_indexed_subject_answers_as_postgres_ranks_it_after_every_change() {
    let keeps = spawn().await;
    let keeps_none = spawn_replica(&keeps, RuntimeConfig { context_index_bytes: 0, ..RuntimeConfig::default() }).await;
    let other = spawn_replica(&keeps, RuntimeConfig::default()).await;
    let s = "indexed";
    ingest(&keeps, s, &turns(0, 2100, 1)).await;
    keeps.compile_all(s).await;
    // Ranked by the server: every task with content words but the one with a word outside ASCII.
    let stemmed = TASKS.iter().filter(|t| t.is_ascii() && mnemo::bundle::terms::tsquery_for(t).is_some()).count();
    let stemmed = stemmed as u64;

    // The first calls find no index: Postgres ranks, and the server builds one.
    same(&keeps, &keeps_none, s, None, "the first calls").await;
    index_current(&keeps, s).await;
    let before = keeps.subjects.lexical.counts.server.load(Relaxed);
    let first = same(&keeps, &keeps_none, s, None, "the index was built").await;
    assert_eq!(by_server(&keeps, before), stemmed, "the current index's lanes were used");
    assert!(text(&first).contains("kafka") && text(&first).contains("Globex"), "{}", text(&first));
    let before_changes = mnemo::model::time::format(&mnemo::model::time::now_micros());

    // New turns through another server: the index is stale until brought up to date (with
    // only the new turns), then used again.
    ingest(&other, s, &turns(2100, 30, 2)).await;
    same(&keeps, &keeps_none, s, None, "new turns through another server").await;
    index_current(&keeps, s).await;
    let before = keeps.subjects.lexical.counts.server.load(Relaxed);
    same(&keeps, &keeps_none, s, None, "the index took the new turns").await;
    assert_eq!(by_server(&keeps, before), stemmed);

    // A compile with supersessions (the employer changes), then a tombstone and a text written
    // in SQL: each a new memory version.
    ingest(&other, s, &["Turn 2130: I changed jobs, I work at Hooli Catering now.".to_string()]).await;
    other.compile_all(s).await;
    same(&keeps, &keeps_none, s, None, "a compile").await;
    index_current(&keeps, s).await;
    let compiled = same(&keeps, &keeps_none, s, None, "the index took the compile").await;
    assert!(text(&compiled).contains("Hooli"), "{}", text(&compiled));
    sqlx::query(
        "UPDATE memories SET status = 'tombstoned', superseded_at = now() \
         WHERE subject_id = $1 AND content LIKE '%Hooli%'",
    )
    .bind(s)
    .execute(&keeps.pool)
    .await
    .unwrap();
    sqlx::query(
        "UPDATE memories SET content = content || ' espresso' WHERE subject_id = $1 AND content LIKE '%kafka%'",
    )
    .bind(s)
    .execute(&keeps.pool)
    .await
    .unwrap();
    same(&keeps, &keeps_none, s, None, "changes written in SQL").await;
    index_current(&keeps, s).await;
    let before = keeps.subjects.lexical.counts.server.load(Relaxed);
    let edited = same(&keeps, &keeps_none, s, None, "the index took the changes written in SQL").await;
    assert_eq!(by_server(&keeps, before), stemmed);
    assert!(!text(&edited).contains("Hooli"), "{}", text(&edited));

    // Turns written through this server: its index follows them with no call in between, so
    // the next calls find it current.
    ingest(&keeps, s, &turns(2131, 5, 4)).await;
    index_current(&keeps, s).await;
    let before = keeps.subjects.lexical.counts.server.load(Relaxed);
    same(&keeps, &keeps_none, s, None, "turns written through this server").await;
    assert_eq!(by_server(&keeps, before), stemmed);

    // A call right after this server wrote a turn (an agent's loop: its turn, then its call):
    // the index catches up with the new turn first, so the call is still ranked on it. The
    // first write's background refresh has just run, so the second one's waits out the spacing
    // between refreshes: only the catch-up can have the call find the index current.
    for round in 0..3 {
        ingest(&keeps, s, &turns(2136 + 2 * round, 1, 5)).await;
        index_current(&keeps, s).await;
        ingest(&keeps, s, &turns(2137 + 2 * round, 1, 6)).await;
        let before = keeps.subjects.lexical.counts.server.load(Relaxed);
        same(&keeps, &keeps_none, s, None, "a call right after this server's write").await;
        assert_eq!(by_server(&keeps, before), stemmed, "round {round}: ranked on the caught-up index");
    }

    // A past instant on an index holding rows recorded after it.
    let before = keeps.subjects.lexical.counts.server.load(Relaxed);
    let past = same(&keeps, &keeps_none, s, Some(&before_changes), "a past instant").await;
    assert_eq!(by_server(&keeps, before), stemmed);
    assert!(!text(&past).contains("Hooli"));

    // Erased, then new turns: nothing of the old subject may come back from the index.
    let r = other.client.delete(other.url(&format!("/v1/subjects/{s}"))).send().await.unwrap();
    assert_eq!(r.status(), 200);
    // The index held the erased subject's lexemes: it goes within about a second, though this
    // server was not asked about the subject.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while keeps.subjects.lexical.get("default", s).is_some() {
        assert!(std::time::Instant::now() < deadline, "the erased subject's index is still kept");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    ingest(&other, s, &turns(0, 1100, 3).iter().map(|t| t.replace("kafka", "tulips")).collect::<Vec<_>>()).await;
    let reborn = same(&keeps, &keeps_none, s, None, "the erasure and new turns").await;
    let shown: String = reborn.iter().map(|b| format!("{} {}", b["episodes"], b["facts"])).collect();
    assert!(!shown.contains("kafka") && shown.contains("tulips"), "{shown}");
}

/// The server's lexemes of content words are Postgres' own (`to_tsvector('english', ...)`) for
/// every word it guesses, over a vocabulary of tasks and turns; a wrong guess would only send
/// the call to Postgres' ranking, but the guesses are meant to hold.
#[tokio::test]
async fn the_servers_lexemes_are_the_english_configurations() {
    let app = spawn().await;
    let mut words: Vec<String> = TASKS
        .iter()
        .chain(WORDS.iter())
        .flat_map(|t| mnemo::bundle::terms::content_words(t))
        .chain(turns(0, 200, 9).iter().flat_map(|t| mnemo::bundle::terms::content_words(t)))
        .collect();
    for w in [
        "generously",
        "happily",
        "organization",
        "organizations",
        "agreed",
        "feed",
        "hopping",
        "caresses",
        "ponies",
        "relational",
        "conditional",
        "rational",
        "valenci",
        "digitizer",
        "conformabli",
        "radically",
        "differently",
        "vileli",
        "analogousli",
        "vietnamization",
        "predication",
        "operator",
        "feudalism",
        "decisiveness",
        "hopefulness",
        "callousness",
        "formality",
        "sensitivity",
        "sensibility",
        "triplicate",
        "formative",
        "formalize",
        "electricity",
        "electrical",
        "hopeful",
        "goodness",
        "revival",
        "allowance",
        "inference",
        "airliner",
        "gyroscopic",
        "adjustable",
        "defensible",
        "irritant",
        "replacement",
        "adjustment",
        "dependent",
        "adoption",
        "homologou",
        "communism",
        "activate",
        "angulariti",
        "homologous",
        "effective",
        "bowdlerize",
        "dying",
        "lying",
        "tying",
        "news",
        "innings",
        "skies",
        "sky",
        "cannings",
        "proceed",
        "exceed",
        "succeed",
        "generate",
        "gener",
        "arsenal",
        "communal",
        "commune",
        "earring",
        "herring",
        "consign",
        "consigned",
        "consigning",
        "consignment",
        "consist",
        "consisted",
        "knack",
        "knackered",
        "2026",
        "v2",
        "3rd",
        "x86",
        "ipv6",
        "through",
        "very",
        "doesn",
        "against",
        "yourselves",
    ] {
        words.push(w.to_string());
    }
    words.sort();
    words.dedup();
    let (mut guessed, mut agree) = (0, 0);
    let mut wrong = Vec::new();
    for w in &words {
        let Some(mine) = mnemo::lexemes::english::lexeme(w) else { continue };
        guessed += 1;
        let theirs: Vec<String> = sqlx::query_scalar("SELECT tsvector_to_array(to_tsvector('english', $1))")
            .bind(w)
            .fetch_one(&app.pool)
            .await
            .unwrap();
        if theirs == mine.iter().cloned().collect::<Vec<_>>() {
            agree += 1;
        } else {
            wrong.push(format!("{w}: {mine:?} vs {theirs:?}"));
        }
    }
    assert!(guessed > 150, "{guessed} words guessed");
    assert!(wrong.is_empty(), "{agree} of {guessed} agree; differ: {wrong:?}");
}
