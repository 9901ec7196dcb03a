//! POST /v1/context through HTTP: validation, budget, determinism, as_of, gates, sessions, tenants.
#![allow(clippy::unwrap_used)]

use crate::common::{episode, spawn, spawn_full};
use serde_json::{json, Value};

fn facts(b: &Value) -> Vec<String> {
    b["facts"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn bad_requests_are_422() {
    let app = spawn().await;
    for body in [
        json!({"subject_id": "u"}),
        json!({"subject_id": "u", "task": ""}),
        json!({"subject_id": "u", "task": "x".repeat(4001)}),
        json!({"subject_id": "u", "task": "t", "max_tokens": 0}),
        json!({"subject_id": "u", "task": "t", "max_tokens": 128_001}),
        json!({"subject_id": "u", "task": "t", "session_id": 5}),
        json!({"subject_id": "u", "task": "t", "as_of": "not a time"}),
        json!({"subject_id": "u", "task": "t", "query_id": "q".repeat(65)}),
    ] {
        let (s, b) = app.post("/v1/context", &body).await;
        assert_eq!(s, 422, "{body} -> {b}");
    }
}

#[tokio::test]
async fn empty_subject_gives_the_task_only() {
    let app = spawn().await;
    let (s, b) = app.post("/v1/context", &json!({"subject_id": "nobody", "task": "Where does the user live?"})).await;
    assert_eq!(s, 200);
    assert_eq!(b["assembled_context"], "## Task\nWhere does the user live?\n");
    assert_eq!(b["facts"], json!([]));
    assert_eq!(b["receipt_emitted"], false);
    assert!(b["token_estimate"].as_u64().unwrap() > 0);
    // With memory that does not match the task, the bundle says so before the general items.
    app.ingest_and_compile("nobody", &["I use Vim."]).await;
    let (_, b) = app.post("/v1/context", &json!({"subject_id": "nobody", "task": "Where does the user live?"})).await;
    let text = b["assembled_context"].as_str().unwrap();
    assert!(text.contains("_No stored context is directly associated with this task."), "{text}");
    assert!(text.contains("I use Vim"));
}

#[tokio::test]
async fn budget_is_never_exceeded_and_bytes_repeat() {
    let app = spawn().await;
    let texts: Vec<String> = (0..60)
        .map(|i| format!("Session note {i}: I use tool{i} and my project{i} runs on port {}.", 8000 + i))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    app.ingest_and_compile("u", &refs).await;
    let (_, first) = app.post("/v1/context", &json!({"subject_id": "u", "task": "Which tools and ports?"})).await;
    let as_of = first["as_of"].clone();
    for budget in [1, 5, 20, 60, 200, 800, 4000] {
        let req = json!({"subject_id": "u", "task": "Which tools and ports?", "max_tokens": budget, "as_of": as_of});
        let (s, a) = app.post("/v1/context", &req).await;
        assert_eq!(s, 200);
        assert!(a["token_estimate"].as_u64().unwrap() <= budget, "budget {budget}: {}", a["token_estimate"]);
        for _ in 0..2 {
            let (_, again) = app.post("/v1/context", &req).await;
            assert_eq!(again, a, "same request, same data, same as_of: same bytes");
        }
    }
}

#[tokio::test]
async fn as_of_shows_what_was_believed_then() {
    let app = spawn().await;
    app.ingest_and_compile("u", &["I work at Globex."]).await;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let (_, mid) = app.post("/v1/context", &json!({"subject_id": "u", "task": "Where does the user work?"})).await;
    let t_mid = mid["as_of"].clone();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    app.ingest_and_compile("u", &["I work at Initech now."]).await;

    let (_, now) = app.post("/v1/context", &json!({"subject_id": "u", "task": "Where does the user work?"})).await;
    let text = now["assembled_context"].as_str().unwrap();
    assert!(text.contains("Initech") && !text.contains("Globex"), "{text}");

    let (_, then) =
        app.post("/v1/context", &json!({"subject_id": "u", "task": "Where does the user work?", "as_of": t_mid})).await;
    let text = then["assembled_context"].as_str().unwrap();
    assert!(text.contains("Globex") && !text.contains("Initech"), "{text}");
    let globex = then["facts"].as_array().unwrap().iter().find(|m| m["content"] == "I work at Globex").unwrap();
    assert_eq!(globex["status"], "active", "as believed at the time");
    assert_eq!(globex["valid_to"], Value::Null);
}

#[tokio::test]
async fn caller_identity_gate() {
    let app = spawn().await;
    sqlx::query("INSERT INTO tenant_configs (tenant_id, config, version) VALUES ('strict', '{\"require_caller_identity\": true}', 1)")
        .execute(&app.pool)
        .await
        .unwrap();
    let (s, b) = app.post_as("strict", "/v1/context", &json!({"subject_id": "u", "task": "t", "caller_id": "a"})).await;
    assert_eq!(s, 401);
    assert_eq!(b["error"]["code"], "http_error");
    let ok = json!({"subject_id": "u", "task": "t", "caller_id": "bot-1", "caller_type": "agent"});
    assert_eq!(app.post_as("strict", "/v1/context", &ok).await.0, 200);
    assert_eq!(app.post("/v1/context", &json!({"subject_id": "u", "task": "t"})).await.0, 200);
}

#[tokio::test]
async fn current_session_is_grouped_and_tenants_are_apart() {
    let app = spawn().await;
    let mut a = episode("u", "We were debugging the login timeout yesterday.");
    a["session_id"] = json!("old");
    let mut b = episode("u", "The login timeout is back again today.");
    b["session_id"] = json!("now");
    app.post("/v1/episodes/batch", &json!({"episodes": [a, b]})).await;
    let (_, ctx) =
        app.post("/v1/context", &json!({"subject_id": "u", "task": "login timeout", "session_id": "now"})).await;
    let text = ctx["assembled_context"].as_str().unwrap();
    assert!(text.contains("### Current session (now)"), "{text}");
    assert!(text.contains("### Session old"), "{text}");
    assert_eq!(ctx["sessions"].as_array().unwrap().len(), 2);
    assert_eq!(ctx["provenance"]["episode_ids"].as_array().unwrap().len(), 2);
    let (_, other) = app.post_as("other", "/v1/context", &json!({"subject_id": "u", "task": "login timeout"})).await;
    assert_eq!(other["episodes"], json!([]));
    assert!(!other["assembled_context"].as_str().unwrap().contains("login timeout is back"));
}

/// The MiniLM embedder, or None (with a SKIP line) when the model files are missing and the run
/// does not require them.
fn minilm() -> Option<std::sync::Arc<dyn mnemo::embed::Embedder>> {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".mnemo/models/all-MiniLM-L6-v2");
    if !dir.join("model.safetensors").exists() {
        assert!(std::env::var("MNEMO_REQUIRE_MODEL").is_err(), "MNEMO_REQUIRE_MODEL is set but the model is missing");
        eprintln!("SKIP: MiniLM model files not found; run scripts/bootstrap");
        return None;
    }
    Some(mnemo::embed::build(&mnemo::embed::EmbedderConfig::MiniLm { model_dir: dir }).unwrap())
}

#[tokio::test]
async fn semantic_lane_finds_what_words_do_not() {
    let Some(embedder) = minilm() else { return };
    let app = spawn_full(mnemo::RuntimeConfig::default(), embedder).await;
    let mut texts: Vec<String> = (0..40).map(|i| format!("Can you reformat this table for me? ({i})")).collect();
    texts.insert(5, "By the way, my dog's name is Biscuit and she is a beagle.".into());
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    app.ingest_and_compile("u", &refs).await;
    let (_, b) = app
        .post("/v1/context", &json!({"subject_id": "u", "task": "What pet does the user have?", "max_tokens": 200}))
        .await;
    let text = b["assembled_context"].as_str().unwrap();
    assert!(text.contains("Biscuit"), "{text}");
    assert!(facts(&b).iter().any(|f| f.contains("Biscuit")));
    let (_, s) = app.get("/v1/memories/search?subject_id=u&q=pet%20animal&semantic=true&limit=3").await;
    assert_eq!(s["search_mode"], "semantic");
    assert!(s["memories"][0]["content"].as_str().unwrap().contains("Biscuit"), "{s}");
}

/// The approximate vector lanes (HNSW candidates, re-scored exactly) give the bundle the exact
/// lanes give when the index can return every vector, and the server's index builder makes
/// valid indexes (and leaves them alone the second time).
#[tokio::test]
async fn approximate_vector_lanes_match_the_exact_ones_on_a_small_subject() {
    let Some(embedder) = minilm() else { return };
    let app = spawn_full(mnemo::RuntimeConfig::default(), embedder.clone()).await;
    let built = mnemo::db::vector_index::ensure(&app.pool, embedder.model_id(), embedder.dims()).await.unwrap();
    assert_eq!(built.len(), mnemo::db::vector_index::TABLES.len(), "{built:?}");
    assert!(mnemo::db::vector_index::ensure(&app.pool, embedder.model_id(), embedder.dims()).await.unwrap().is_empty());
    let valid: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = ANY($1) AND i.indisvalid",
    )
    .bind(&built)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(valid, mnemo::db::vector_index::TABLES.len() as i64);

    let mut texts: Vec<String> = (0..30).map(|i| format!("Can you reformat this table for me? ({i})")).collect();
    texts.insert(7, "By the way, my dog's name is Biscuit and she is a beagle.".into());
    texts.insert(19, "I moved to Lisbon last spring for a job at a fintech.".into());
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    app.ingest_and_compile("u", &refs).await;

    let cache = mnemo::services::context::TaskVectorCache::default();
    let subjects = mnemo::services::context::SubjectCache::default();
    for task in ["What pet does the user have?", "Where does the user live and work?"] {
        let mut bundles = Vec::new();
        for approx_vectors_from in [mnemo::db::context::APPROX_VECTORS_FROM, 0] {
            let req = mnemo::services::context::ContextRequest {
                subject_id: "u".into(),
                task: task.into(),
                max_tokens: 300,
                session_id: None,
                as_of: None,
                options: mnemo::services::context::RetrievalOptions { approx_vectors_from, ..Default::default() },
                policy: Default::default(),
            };
            let b = mnemo::services::context::assemble(&app.app_pool, &embedder, &cache, &subjects, "default", &req)
                .await
                .unwrap();
            bundles.push(b.assembled_context);
        }
        assert_eq!(bundles[0], bundles[1], "{task}");
    }
    assert!(facts_text(&app, "What pet does the user have?").await.contains("Biscuit"));
}

async fn facts_text(app: &crate::common::TestApp, task: &str) -> String {
    let (_, b) = app.post("/v1/context", &json!({"subject_id": "u", "task": task, "max_tokens": 300})).await;
    b["assembled_context"].as_str().unwrap().to_string()
}

/// Candidate signals for a task straight from the retrieval queries (as the server runs them:
/// mnemo_app, the tenant named by the statement).
async fn lexical_scores(app: &crate::common::TestApp, subject: &str, task_words: &str, as_of: &str) -> Vec<f64> {
    let as_of = chrono::DateTime::parse_from_rfc3339(as_of).unwrap().with_timezone(&chrono::Utc);
    let probe = mnemo::db::context::Probe::new("default", subject, as_of, Some(task_words.to_string()));
    let subjects = mnemo::services::context::SubjectCache::default();
    let (found, _) =
        mnemo::services::context::candidates::found(&app.app_pool, &probe, false, false, &subjects).await.unwrap();
    found.memories.iter().map(|c| c.lex).chain(found.episodes.iter().map(|c| c.lex)).collect()
}

/// The subject's stored term counts: (source, lexeme, df), in order.
async fn term_counts(app: &crate::common::TestApp, subject: &str) -> Vec<(String, String, i64)> {
    sqlx::query_as("SELECT source, lexeme, df FROM subject_terms WHERE subject_id = $1 ORDER BY source, lexeme")
        .bind(subject)
        .fetch_all(&app.pool)
        .await
        .unwrap()
}

/// The term counts of every memory and compiled episode of a subject, for each source that has
/// reached COMMON_TERM_DF items (a source under it has none stored).
async fn recount(app: &crate::common::TestApp, subject: &str) -> Vec<(String, String, i64)> {
    sqlx::query_as(
        "SELECT src, lexeme, count(*) FROM ( \
           SELECT 'memory' AS src, t.lexeme FROM memories m, unnest(m.content_tsv) t WHERE m.subject_id = $1 \
           UNION ALL \
           SELECT 'episode', t.lexeme FROM episodes e JOIN compile_cursors c USING (tenant_id, subject_id), \
             unnest(e.search_tsv) t WHERE e.subject_id = $1 AND e.seq <= c.compiled_seq) x \
         WHERE (SELECT count(*) FROM memories WHERE subject_id = $1) >= $2 AND src = 'memory' \
            OR (SELECT compiled_seq FROM compile_cursors WHERE subject_id = $1) >= $2 AND src = 'episode' \
         GROUP BY src, lexeme ORDER BY src, lexeme",
    )
    .bind(subject)
    .bind(mnemo::db::terms::COMMON_TERM_DF)
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

/// A subject under COMMON_TERM_DF items has no term counts (no word of it can be common); one
/// counted batch by batch before that rule, with counts under the threshold, goes on adding.
#[tokio::test]
async fn small_subjects_are_not_counted_and_earlier_counts_go_on() {
    let app = spawn().await;
    app.ingest_and_compile("fresh", &["My favourite standup comedian is Ali Wong."]).await;
    assert!(term_counts(&app, "fresh").await.is_empty());

    sqlx::query(
        "INSERT INTO subject_terms (tenant_id, subject_id, source, lexeme, df) VALUES ($1, 'old', 'episode', 'standup', 3)",
    )
    .bind(mnemo::model::text::DEFAULT_TENANT)
    .execute(&app.pool)
    .await
    .unwrap();
    app.ingest_and_compile("old", &["Another standup show tonight."]).await;
    let counts = term_counts(&app, "old").await;
    let df = |lexeme: &str| counts.iter().find(|c| c.0 == "episode" && c.1 == lexeme).map(|c| c.2);
    assert_eq!(df("standup"), Some(4), "{counts:?}");
    assert_eq!(df("tonight"), Some(1), "{counts:?}");
    assert!(counts.iter().all(|c| c.0 == "episode"), "memories were not counted before: {counts:?}");
}

/// A word found in COMMON_TERM_DF of a subject's items stops counting for its full-text lanes
/// from the instant compile counted it there; a call as of an earlier instant still uses it, and
/// the other words of the task still count. Erasure removes the subject's term statistics.
#[tokio::test]
async fn a_word_in_a_thousand_items_stops_counting_from_then_on() {
    let app = spawn().await;
    let n = mnemo::db::terms::COMMON_TERM_DF as usize;
    // Half the episodes first, then the rest: the word becomes common in the second half.
    for (from, to) in [(0, n / 2), (n / 2, n)] {
        for chunk in (from..to).collect::<Vec<_>>().chunks(100) {
            let eps: Vec<Value> =
                chunk.iter().map(|i| episode("big", &format!("Ticket {i}: the standup moved again."))).collect();
            let (s, b) = app.post("/v1/episodes/batch", &json!({ "episodes": eps })).await;
            assert_eq!(s, 201, "{b}");
        }
        app.compile_all("big").await;
        if from == 0 {
            // Under COMMON_TERM_DF compiled episodes no episode lexeme can be common: not counted yet.
            let episode_rows: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM subject_terms WHERE subject_id = 'big' AND source = 'episode'",
            )
            .fetch_one(&app.pool)
            .await
            .unwrap();
            assert_eq!(episode_rows, 0);
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(term_counts(&app, "big").await, recount(&app, "big").await);
    }
    app.ingest_and_compile("big", &["My favourite standup comedian is Ali Wong."]).await;
    // Once counted, later batches add to the counts: they stay those of every item.
    assert_eq!(term_counts(&app, "big").await, recount(&app, "big").await);
    let (_, ctx) = app.post("/v1/context", &json!({"subject_id": "big", "task": "standup comedian"})).await;
    let now = ctx["as_of"].as_str().unwrap().to_string();

    let terms: Vec<(String, String, i64, bool)> = sqlx::query_as(
        "SELECT source, lexeme, df, common_since IS NOT NULL FROM subject_terms \
         WHERE subject_id = 'big' AND lexeme IN ('standup', 'comedian') ORDER BY source, lexeme",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let common: Vec<_> = terms.iter().filter(|t| t.3).map(|t| (t.0.as_str(), t.1.as_str())).collect();
    assert_eq!(common, [("episode", "standup"), ("memory", "standup")], "{terms:?}");
    assert!(terms.iter().all(|t| t.2 >= 1), "{terms:?}");

    // Now: "standup" adds nothing anywhere, "comedian" still ranks the one item that has it.
    let scores = lexical_scores(&app, "big", "standup", &now).await;
    assert!(!scores.is_empty() && scores.iter().all(|&s| s == 0.0), "common word still ranked");
    let scores = lexical_scores(&app, "big", "standup | comedian", &now).await;
    assert!(scores.iter().filter(|&&s| s > 0.0).count() >= 1, "the rare word must still count");
    assert!(scores.iter().filter(|&&s| s > 0.0).count() <= 3, "only the comedian items score: {scores:?}");

    // Before the word became common it counted.
    let since: chrono::DateTime<chrono::Utc> = sqlx::query_scalar(
        "SELECT common_since FROM subject_terms WHERE subject_id = 'big' AND source = 'memory' AND lexeme = 'standup'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let before = (since - chrono::Duration::microseconds(1)).to_rfc3339();
    let scores = lexical_scores(&app, "big", "standup", &before).await;
    assert!(scores.iter().any(|&s| s > 0.0), "as of before, the word still ranked");

    let r = app.client.delete(app.url("/v1/subjects/big")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(app.count("subject_terms").await, 0);
}

/// Long turns beyond the best three show the sentences that share the task's words, marked
/// with "…"; the best three and short turns show whole; the bundle still lists every turn.
#[tokio::test]
async fn long_turns_show_the_sentences_that_match_the_task() {
    let app = spawn().await;
    let filler = "Hey, good to hear from you again, it has been a while since we last talked about anything.";
    let mut texts: Vec<String> = (0..6)
        .map(|i| format!("{filler} Last weekend I repaired bicycle number {i} in the garage with my neighbour. Anyway, how are the kids and the dog doing lately?"))
        .collect();
    texts.push("My bicycle is blue.".to_string());
    for t in &texts {
        let (s, b) = app.post("/v1/episodes", &episode("rider", t)).await;
        assert_eq!(s, 201, "{b}");
    }
    let (_, b) = app
        .post(
            "/v1/context",
            &json!({"subject_id": "rider", "task": "Which bicycle did I repair in the garage?", "max_tokens": 4000}),
        )
        .await;
    let text = b["assembled_context"].as_str().unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("- ") && l.contains("bicycle")).collect();
    assert_eq!(lines.len(), 7, "{text}");
    let whole = lines.iter().filter(|l| l.contains(filler)).count();
    let excerpts: Vec<&&str> = lines.iter().filter(|l| l.contains("… Last weekend I repaired bicycle")).collect();
    assert_eq!(whole, 3, "{text}");
    assert_eq!(excerpts.len(), 3, "{text}");
    assert!(excerpts.iter().all(|l| l.ends_with('…') && !l.contains("kids")), "{text}");
    assert!(text.contains("- user: My bicycle is blue."), "{text}");
    assert_eq!(b["episodes"].as_array().unwrap().len(), 7, "{b}");
}

/// A task about the user's own words ("which … did I mention") ranks the user's turns before
/// the agent's answers that match it as well; the same task asked neutrally does not. (A soft
/// signal: it decides between turns of about the same relevance, as the turns of one long chat
/// about one project are.)
#[tokio::test]
async fn a_task_about_the_users_own_words_ranks_their_turns_first() {
    // With words alone the best-matching turns all score 1 (BM25 as a share of the best), and
    // no signal decides between them; the cosine leaves room.
    let Some(embedder) = minilm() else { return };
    let app = spawn_full(mnemo::RuntimeConfig::default(), embedder).await;
    let turns = [
        ("user", "Mint for budget tracking, I tried it."),
        ("assistant", "Mint for budget tracking, it is fine."),
        ("user", "Mint for budget tracking, I liked it."),
        ("assistant", "Mint for budget tracking, it works well."),
    ];
    post_turns(&app, "saver", &turns).await;
    app.compile_all("saver").await; // the turns' vectors
    let speakers = |b: &Value| -> Vec<String> {
        let text = b["assembled_context"].as_str().unwrap();
        text.lines().filter_map(|l| l.strip_prefix("- ")?.split_once(':')).map(|(who, _)| who.to_string()).collect()
    };
    // The section lists turns in time order: a budget that holds two of the four shows which rank first.
    let mut tried = 0;
    for budget in 30..=90 {
        let ask = |task: &str| json!({"subject_id": "saver", "task": task, "max_tokens": budget});
        let (_, own) = app.post("/v1/context", &ask("Which budget tracking apps did I mention?")).await;
        if speakers(&own).len() != 2 {
            continue;
        }
        tried += 1;
        assert_eq!(speakers(&own), ["user", "user"], "{}", own["assembled_context"]);
        let (_, neutral) = app.post("/v1/context", &ask("Which budget tracking apps were discussed?")).await;
        assert!(speakers(&neutral).contains(&"assistant".to_string()), "{}", neutral["assembled_context"]);
    }
    assert!(tried > 0, "no budget held exactly two turns");
}

/// A long turn's later passages get vectors of their own in the background (the passage
/// worker): once they have them, the turn's distance to a task is its nearest vector's, so a
/// question about the middle of the turn finds it though its opening is about something else
/// (measured on BEAM: bench/results/2026-12-07-passages.md);
/// as of an instant before the passages had vectors, the distance is the opening's (replay as of
/// a receipt stays exact); the turn's line shows that passage.
#[tokio::test]
async fn a_long_turn_is_found_by_a_passage_in_its_middle() {
    let Some(embedder) = minilm() else { return };
    let app = spawn_full(mnemo::RuntimeConfig::default(), embedder).await;
    let opening = "Here is the pasta recipe I promised: boil salted water, cook the spaghetti for nine minutes, \
        and keep a cup of the starchy water. Fry garlic in olive oil, add chilli flakes, toss the pasta with the oil \
        and loosen it with the water. Finish with parsley and lemon zest, and serve it straight away while hot.";
    let filler = " The oven at home runs hot, so I lower every temperature by ten degrees. I keep the spices in \
        glass jars on the second shelf, labelled by hand, and I restock them every few months from the market.";
    let middle = " Big news from home: my sister Ana is getting married in Lisbon next June, and the whole \
        family is flying there for the celebration by the river.";
    let long = format!("{opening}{filler}{middle}{filler}{filler}");
    assert!(long.chars().count() > mnemo::compile::text::PASSAGES_FROM);
    // The agent's turn: no fact of the user's comes from it, only the turn itself can be found.
    let turns = [
        ("user", "I bought new running shoes yesterday."),
        ("user", "The printer on the second floor is broken again."),
        ("assistant", long.as_str()),
    ];
    post_turns(&app, "cook", &turns).await;
    app.compile_all("cook").await;

    // The worker embeds the passages within seconds (it polls every two).
    let pending = || sqlx::query_scalar::<_, i64>("SELECT count(*) FROM episode_passages WHERE embedding IS NULL");
    for waited in 0.. {
        if pending().fetch_one(&app.pool).await.unwrap() == 0 {
            break;
        }
        assert!(waited < 600, "the passages never got their vectors");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let passages: Vec<(i16, i32, i32, String, chrono::DateTime<chrono::Utc>, String)> = sqlx::query_as(
        "SELECT passage, start_char, end_char, embedding::text, created_at, embedding_model FROM episode_passages \
         ORDER BY passage",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert!(!passages.is_empty() && passages.len() <= mnemo::compile::text::MAX_PASSAGES, "{}", passages.len());
    assert!(passages.windows(2).all(|w| w[0].2 <= w[1].1));
    let chars: Vec<char> = format!("assistant: {long}").chars().collect();
    let (number, start, end, vector, written, model) = passages
        .iter()
        .find(|p| chars[p.1 as usize..p.2 as usize].iter().collect::<String>().contains("Lisbon"))
        .expect("a passage holds the middle")
        .clone();
    assert!(number >= 1 && start > 0 && end > start);

    // The turn's distance to that passage's own vector, as the context call reads it: 0 now,
    // the opening's as of the instant compile wrote the passage (it had no vector yet).
    let distance = |as_of: chrono::DateTime<chrono::Utc>| {
        sqlx::query_as::<_, (Vec<uuid::Uuid>, Vec<f64>)>(
            "SELECT ids, floats FROM mnemo_context_small('default', 'cook', $1, 'news', $2, $3, NULL, NULL, NULL) \
             WHERE part = 13 AND source = 'episode'",
        )
        .bind(as_of)
        .bind(vector.clone())
        .bind(model.clone())
    };
    let long_id: uuid::Uuid = sqlx::query_scalar("SELECT id FROM episodes WHERE payload::text LIKE '%Lisbon%'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let of_long = |(ids, ds): (Vec<uuid::Uuid>, Vec<f64>)| ds[ids.iter().position(|i| *i == long_id).unwrap()];
    let now = of_long(distance(chrono::Utc::now()).fetch_one(&app.pool).await.unwrap());
    let then = of_long(distance(written).fetch_one(&app.pool).await.unwrap());
    assert!(now < 1e-6, "{now}");
    assert!(then > 0.2, "the opening is about pasta: {then}");

    // A question about the middle that shares no word with the turn is shown that passage, not
    // the opening about pasta.
    let task = json!({"subject_id": "cook", "task": "Which city will host my sibling's wedding?", "max_tokens": 400});
    let (_, bundle) = app.post("/v1/context", &task).await;
    let text = bundle["assembled_context"].as_str().unwrap();
    let line = text.lines().find(|l| l.starts_with("- assistant:")).expect("the turn is in the bundle");
    assert!(line.contains("Lisbon") && !line.contains("pasta"), "{text}");
}

/// Posts chat turns (role, text) of a subject, one episode each, in one batch.
async fn post_turns(app: &crate::common::TestApp, subject: &str, turns: &[(&str, &str)]) {
    let eps: Vec<Value> = turns
        .iter()
        .map(|(role, text)| {
            json!({"subject_id": subject, "source": "chat", "type": "message",
                   "payload": {"messages": [{"role": role, "content": text}]}})
        })
        .collect();
    let (s, b) = app.post("/v1/episodes/batch", &json!({ "episodes": eps })).await;
    assert_eq!(s, 201, "{b}");
}
