//! The functions behind a context call (`mnemo_context` and its lane helpers) on real Postgres,
//! called as the server calls them: their rows against a reference, and the plans they take.
#![allow(clippy::unwrap_used)]

use crate::common::{episode, spawn};
use serde_json::{json, Value};

/// `mnemo_bm25_rank` (migration 0027) returns exactly the rows of the ranking it replaced
/// (migration 0015's, run here as a temporary function) for lanes shorter and longer than their
/// hits, with scores tied across the lane's last place, and with more items than `p_n`.
#[tokio::test]
async fn bm25_ranking_matches_the_original_formula_row_for_row() {
    use rand::{Rng, SeedableRng};
    let app = spawn().await;
    let migration = include_str!("../../migrations/0015_bm25_plans.sql");
    let start = migration.find("CREATE FUNCTION mnemo_bm25_rank").unwrap();
    let end = start + migration[start..].find("\n$$;").unwrap() + 4;
    let reference =
        migration[start..end].replacen("CREATE FUNCTION mnemo_bm25_rank", "CREATE FUNCTION pg_temp.bm25_reference", 1);
    let mut conn = app.pool.acquire().await.unwrap();
    sqlx::query(&reference).execute(&mut *conn).await.unwrap();

    let mut rng = rand::rngs::StdRng::seed_from_u64(27);
    let terms = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"];
    let mut cases = 0;
    for round in 0..60 {
        let docs = [1, 3, 20, 39, 40, 41, 150, 400][round % 8];
        // Every third round all items share one length and one term: every score ties.
        let tied = round % 3 == 0;
        let dls: Vec<f64> = (0..docs).map(|_| if tied { 7.0 } else { f64::from(rng.gen_range(1..40)) }).collect();
        let doc_ids: Vec<uuid::Uuid> = (0..docs).map(|_| uuid::Uuid::from_u128(rng.gen())).collect();
        let (mut ids, mut ls, mut dl) = (Vec::new(), Vec::new(), Vec::new());
        for (t, term) in terms.iter().enumerate() {
            for (d, len) in dls.iter().enumerate() {
                if (tied && t == 0) || (!tied && rng.gen_bool(0.4)) {
                    ids.push(doc_ids[d]);
                    ls.push(term.to_string());
                    dl.push(*len);
                }
            }
        }
        for (n, limit) in [(10_000.0, 40), (5.0, 40), (600.0, 100), (600.0, 25), (600.0, 1)] {
            // The function's own order (score descending, then id), not re-sorted here.
            let mut rows = Vec::new();
            for f in ["pg_temp.bm25_reference", "mnemo_bm25_rank"] {
                let sql = format!("SELECT id, score FROM {f}($1, $2, $3, $4, $5)");
                let r: Vec<(uuid::Uuid, f64)> = sqlx::query_as(&sql)
                    .bind(&ids)
                    .bind(&ls)
                    .bind(&dl)
                    .bind(n)
                    .bind(limit)
                    .fetch_all(&mut *conn)
                    .await
                    .unwrap();
                rows.push(r);
            }
            let (want, got) = (&rows[0], &rows[1]);
            assert_eq!(got, want, "round {round}, n {n}, limit {limit}");
            assert!(got.len() <= limit as usize);
            cases += 1;
        }
    }
    assert_eq!(cases, 300);
}

/// In a database of many small subjects, the cached generic plans of a context call estimate a
/// subject's rows as that small average. A large subject's full-text probes must still go
/// through the full-text index (migration 0028), not test every row of the subject per term.
#[tokio::test]
async fn a_large_subject_among_many_small_ones_is_probed_through_the_full_text_index() {
    let app = spawn().await;
    for chunk in (0..1100).collect::<Vec<_>>().chunks(100) {
        let eps: Vec<Value> = chunk
            .iter()
            .map(|i| {
                // A word in a third of the turns: under the 1,000 items that make a word common.
                let extra = if i % 3 == 0 { " The kafka consumer lagged." } else { "" };
                episode("large", &format!("Ticket {i}: the deploy pipeline failed on staging again.{extra}"))
            })
            .collect();
        let (s, b) = app.post("/v1/episodes/batch", &json!({ "episodes": eps })).await;
        assert_eq!(s, 201, "{b}");
    }
    // 4,000 subjects of one episode each.
    let mut conn = app.pool.acquire().await.unwrap();
    for sql in [
        "INSERT INTO episodes (tenant_id, subject_id, id, source, type, payload, seq, occurred_at) \
         SELECT 'default', 'small-' || g, gen_random_uuid(), 'chat', 'message', \
                '{\"messages\": [{\"role\": \"user\", \"content\": \"hello there\"}]}'::jsonb, 1, now() \
         FROM generate_series(1, 4000) g",
        "ANALYZE episodes",
    ] {
        sqlx::query(sql).execute(&mut *conn).await.unwrap();
    }
    drop(conn);

    // The call as the server makes it, then what this transaction's scans read.
    let call = |task: &str| {
        format!(
            "SELECT count(*) FROM mnemo_context('default', 'large', now(), '{task}', NULL, NULL, NULL, '{{}}', \
             20000, true, true, false, '{{40,40,50,20,30,30,160}}')"
        )
    };
    let read = |f: &str, rel: &str| format!("SELECT {f}('{rel}'::regclass)");
    // A word of hundreds of turns: the probes read the full-text index, not the subject in order.
    let mut tx = app.app_pool.begin().await.unwrap();
    let rows: i64 = sqlx::query_scalar(&call("kafka | consumer")).fetch_one(&mut *tx).await.unwrap();
    assert!(rows > 40, "{rows}");
    let mut by_index = Vec::new();
    for index in ["episodes_subject_order", "episodes_subject_tsv"] {
        let sql = read("pg_stat_get_xact_tuples_returned", index);
        by_index.push(sqlx::query_scalar::<_, i64>(&sql).fetch_one(&mut *tx).await.unwrap());
    }
    tx.rollback().await.unwrap();
    assert!(by_index[1] > 0, "the full-text index was not used");
    assert!(by_index[0] < 200, "the probe read the subject's turns in order: {} entries", by_index[0]);
}

/// `mnemo_context` (migration 0030) returns exactly the rows of migration 0029's function, run
/// here as a temporary reference: with and without a task vector, exact and approximate vector
/// lanes on both sides of the subject's size, three lane sizes, a session, a date and an instant
/// between the two halves of the turns (and of their memories).
#[tokio::test]
async fn context_rows_match_the_previous_function_for_every_option() {
    let app = spawn().await;
    let facts = [
        "My favorite color is blue.",
        "I work at Acme as a platform engineer.",
        "I moved to Berlin last spring.",
        "Our deploy pipeline runs on Kubernetes.",
        "My manager is Dana.",
    ];
    let mid = seed_turns(&app, "rows", &facts, 6, |i| if i < 30 { "s1" } else { "s2" }).await;
    let mut conn = app.pool.acquire().await.unwrap();

    let migration = include_str!("../../migrations/0029_context_lookups_by_id.sql");
    let start = migration.find("CREATE OR REPLACE FUNCTION mnemo_context(").unwrap();
    let end = start + migration[start..].find("\n$$;").unwrap() + 4;
    let reference = migration[start..end].replacen(
        "CREATE OR REPLACE FUNCTION mnemo_context(",
        "CREATE FUNCTION pg_temp.context_reference(",
        1,
    );
    sqlx::query(&reference).execute(&mut *conn).await.unwrap();
    sqlx::query("SELECT set_config('mnemo.tenant', 'default', false)").execute(&mut *conn).await.unwrap();
    let (vector, model) = stored_vector(&app, "rows").await;

    let tasks = ["kafka | consumer", "deploy | pipeline", "favorite | color", "berlin | move", "budget", "zebra"];
    let today = chrono::Utc::now().date_naive().and_hms_opt(0, 0, 0).unwrap().and_utc();
    // (vector, approx_from, lane, session, days, before the later turns)
    type Call<'a> = (bool, i64, i32, Option<&'a str>, bool, bool);
    let options: [Call<'_>; 10] = [
        (false, 20_000, 40, None, false, false),
        (false, 20_000, 25, Some("s1"), true, false),
        (false, 20_000, 100, None, false, true),
        (true, 20_000, 40, None, false, false),
        (true, 0, 40, None, false, false),
        (true, 10, 25, Some("s2"), false, false),
        (true, 60, 40, None, true, false),
        (true, 61, 100, None, false, false),
        (true, 20_000, 40, Some("s1"), false, true),
        (true, 10, 40, None, false, true),
    ];
    let (mut calls, mut scored, mut more_with_vector) = (0, 0, false);
    for task in tasks {
        let mut rows_without_vector = 0;
        for (with_vector, approx, lane, session, dates, before) in options {
            let mut digests = Vec::new();
            let mut rows = 0;
            for f in ["pg_temp.context_reference", "mnemo_context"] {
                let sql = format!(
                    "SELECT md5(string_agg(x::text, '|' ORDER BY x::text)), count(*), \
                     count(*) FILTER (WHERE x.lex > 0) \
                     FROM {f}('default', 'rows', $1, $2, $3, $4, $5, $6, $7, true, true, true, $8) x"
                );
                let lanes = [lane, lane, 50, 20, 30, 30, 4 * lane];
                let (digest, n, lexical): (Option<String>, i64, i64) = sqlx::query_as(&sql)
                    .bind(if before { mid } else { chrono::Utc::now() })
                    .bind(task)
                    .bind(with_vector.then_some(vector.as_str()))
                    .bind(with_vector.then_some(model.as_str()))
                    .bind(session)
                    .bind(if dates { vec![today] } else { Vec::new() })
                    .bind(approx)
                    .bind(&lanes[..])
                    .fetch_one(&mut *conn)
                    .await
                    .unwrap();
                digests.push(digest);
                rows = n;
                scored += usize::from(lexical > 0);
            }
            assert_eq!(digests[0], digests[1], "task {task:?}, options {:?}", (with_vector, approx, lane, session));
            if !with_vector && lane == 40 && !before {
                rows_without_vector = rows;
            }
            if with_vector && approx == 20_000 && lane == 40 && session.is_none() && !before {
                more_with_vector |= rows > rows_without_vector;
            }
            calls += 1;
        }
    }
    assert_eq!(calls, 60);
    // The comparison covered rows with a BM25 score and rows the vector lanes added.
    assert!(scored > 0, "no call returned a row with a lexical score");
    assert!(more_with_vector, "the task vector never added a row");
}

/// Seeds `subject` with 60 turns in two halves of 30, each compiled once posted: a fact every
/// `every`-th turn, the rest chat about a few recurring topics, each turn in the session
/// `session` names. Returns an instant between the halves.
async fn seed_turns(
    app: &crate::common::TestApp,
    subject: &str,
    facts: &[&str],
    every: usize,
    session: fn(usize) -> &'static str,
) -> chrono::DateTime<chrono::Utc> {
    let topics = ["deploy", "kafka consumer", "database backup", "budget review", "team offsite", "billing bug"];
    let mut mid = chrono::Utc::now();
    for from in [0, 30] {
        let eps: Vec<Value> = (from..from + 30)
            .map(|i| {
                let text = if i % every == 0 {
                    facts[(i / every) % facts.len()].to_string()
                } else {
                    format!("Turn {i}: the {} came up again, and the {} too.", topics[i % 6], topics[(i * 5) % 6])
                };
                let mut e = episode(subject, &text);
                e["session_id"] = json!(session(i));
                e
            })
            .collect();
        let (s, b) = app.post("/v1/episodes/batch", &json!({ "episodes": eps })).await;
        assert_eq!(s, 201, "{b}");
        loop {
            let (s, b) = app.post("/v1/memories/compile", &json!({"subject_id": subject})).await;
            assert_eq!(s, 200, "{b}");
            if b["has_more"] != json!(true) {
                break;
            }
        }
        if from == 0 {
            mid = sqlx::query_scalar("SELECT now()").fetch_one(&app.pool).await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
    mid
}

/// The first stored turn embedding of `subject`, as text, with its model.
async fn stored_vector(app: &crate::common::TestApp, subject: &str) -> (String, String) {
    sqlx::query_as(
        "SELECT embedding::text, embedding_model FROM episode_embeddings WHERE subject_id = $1 \
         ORDER BY episode_id LIMIT 1",
    )
    .bind(subject)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

/// A vector from its text form (`[0.1,0.2,…]`).
fn parse_vector(text: &str) -> pgvector::Vector {
    text.trim_matches(|c| c == '[' || c == ']').split(',').map(|x| x.parse::<f32>().unwrap()).collect::<Vec<_>>().into()
}

/// The canonical form of what retrieval found: every list in id order, printed exactly (scores
/// included, to the last bit).
fn canonical(mut found: mnemo::db::context::Found) -> String {
    found.memories.sort_by_key(|c| c.memory.id);
    found.episodes.sort_by_key(|c| c.episode.id);
    found.backing.sort_by_key(|b| b.episode_id);
    format!("{found:?}")
}

/// For a subject small enough, the statement returns the subject's rows and the server applies
/// `mnemo_context`'s lanes itself (migration 0031, `services::context::lanes`). Both ways must
/// find the same memories and episodes with the same scores, the same backing facts and the same
/// snapshot: with and without a task vector, three lane sizes, a session with a snapshot (its
/// covered turns, pinned turn and the summaries it stands for), dates, the turns around and the
/// sources, an instant before the later turns, and facts that changed (superseded memories).
#[tokio::test]
async fn lanes_applied_in_process_match_mnemo_context_for_every_option() {
    use mnemo::db::context::Probe;
    let app = spawn().await;
    let facts = [
        "My favorite color is blue.",
        "I work at Acme as a platform engineer.",
        "I moved to Berlin last spring.",
        "My favorite color is green now.",
        "I work at Globex these days.",
        "Our deploy pipeline runs on Kubernetes.",
        "My manager is Dana.",
    ];
    let mid = seed_turns(&app, "small", &facts, 5, |i| if i % 3 == 0 { "s2" } else { "s1" }).await;
    let mut conn = app.pool.acquire().await.unwrap();
    // A snapshot of session s1 (40 turns, more than its lane takes) up to seq 30, pinning its
    // early turn of seq 5, which no lane but the snapshot's brings.
    sqlx::query(
        "INSERT INTO session_snapshots (tenant_id, subject_id, session_id, id, position, summary, pinned, covers_through) \
         SELECT 'default', 'small', 's1', gen_random_uuid(), 1, 'The first half of s1.', ARRAY[e.id], 30 \
         FROM episodes e WHERE e.subject_id = 'small' AND e.seq = 5",
    )
    .execute(&mut *conn)
    .await
    .unwrap();
    let superseded: i64 =
        sqlx::query_scalar("SELECT count(*) FROM memories WHERE subject_id = 'small' AND superseded_at IS NOT NULL")
            .fetch_one(&mut *conn)
            .await
            .unwrap();
    assert!(superseded > 0, "no fact was superseded: the comparison would not cover it");
    let (vector, model) = stored_vector(&app, "small").await;
    let vector = parse_vector(&vector);
    drop(conn);

    let tasks = ["kafka | consumer", "deploy | pipelin", "favorit | color", "berlin | move", "work | globex", "zebra"];
    let today = chrono::Utc::now().date_naive().and_hms_opt(0, 0, 0).unwrap().and_utc();
    // (vector, lane, session, days, before the later turns)
    type Call<'a> = (bool, i64, Option<&'a str>, bool, bool);
    let options: [Call<'_>; 10] = [
        (false, 40, None, false, false),
        (false, 40, Some("s1"), false, false),
        (false, 25, Some("s1"), true, false),
        (false, 100, Some("s2"), false, true),
        (true, 40, None, false, false),
        (true, 25, Some("s1"), false, false),
        (true, 40, None, true, false),
        (true, 100, Some("s1"), true, false),
        (true, 40, Some("s2"), false, true),
        (true, 25, None, false, true),
    ];
    let (mut calls, mut lexical, mut semantic, mut snapshots) = (0, 0, 0, 0);
    for task in tasks {
        for (with_vector, lane, session, dates, before) in options {
            for (around, sources) in [(true, true), (false, false), (true, false)] {
                let as_of = if before { mid } else { chrono::Utc::now() };
                let probe = Probe {
                    tenant: "default",
                    subject_id: "small",
                    as_of,
                    tsquery: Some(task.to_string()),
                    vector: with_vector.then(|| (vector.clone(), model.clone())),
                    session_id: session,
                    days: if dates { vec![today] } else { Vec::new() },
                    approx_from: mnemo::db::context::APPROX_VECTORS_FROM,
                    ranked_lane: lane,
                    small_subject: [0, 0],
                };
                let (reference, got) = both_ways(&app, probe, around, sources).await;
                lexical +=
                    usize::from(got.memories.iter().any(|c| c.lex > 0.0) && got.episodes.iter().any(|c| c.lex > 0.0));
                semantic += usize::from(got.episodes.iter().any(|c| c.sem.is_some()));
                snapshots += usize::from(got.snapshot.is_some());
                let (want, got) = (canonical(reference), canonical(got));
                assert!(
                    want == got,
                    "task {task:?}, options {:?}, around {around}, sources {sources}:\nmnemo_context {want}\nin process {got}",
                    (with_vector, lane, session, dates, before)
                );
                calls += 1;
            }
        }
    }
    assert_eq!(calls, 180);
    assert!(lexical > 0 && semantic > 0 && snapshots > 0, "uncovered: {lexical} {semantic} {snapshots}");
}

/// What retrieval finds for `probe` through `mnemo_context` and through the in-process lanes
/// (the subject must be under the small-subject bound), each checked to have taken its path.
async fn both_ways(
    app: &crate::common::TestApp,
    mut probe: mnemo::db::context::Probe<'static>,
    around: bool,
    sources: bool,
) -> (mnemo::db::context::Found, mnemo::db::context::Found) {
    use mnemo::db::context::Fetched;
    let pool = &app.app_pool;
    let mut out = Vec::new();
    for bound in [[0, 0], mnemo::db::context::SMALL_SUBJECT] {
        probe.small_subject = bound;
        let (fetched, _) = mnemo::db::context::candidates(pool, &probe, around, sources).await.unwrap();
        // The in-process lanes are called here directly: `found` would fall back to
        // `mnemo_context` if they picked a memory that came without its content.
        out.push(match fetched {
            Fetched::Lanes(found) => {
                assert_eq!(bound, [0, 0], "a small subject came back as lanes");
                found
            }
            Fetched::Subject(rows) => {
                assert_ne!(bound, [0, 0], "a subject over the bound came back whole");
                let lanes = mnemo::services::context::candidates::lanes_for(&probe, around, sources);
                let picked = mnemo::services::context::lanes::select(rows, &lanes);
                assert!(picked.is_ok(), "a picked memory came without its content: {picked:?}");
                picked.unwrap()
            }
        });
    }
    let got = out.pop().unwrap();
    (out.pop().unwrap(), got)
}

/// The lanes that cut by order (recent facts, recent turns) agree with `mnemo_context` when they
/// must cut: 80 many-valued facts and procedures valid from one instant (so tied but for their
/// ids), more than the fact lane's 50.
#[tokio::test]
async fn lanes_in_process_cut_long_fact_lanes_as_mnemo_context_does() {
    use mnemo::db::context::Probe;
    let app = spawn().await;
    // 30 turns, compiled, then 80 many-valued facts and procedures written as an import would
    // write them: none a single-valued claim (whose lane takes them all), all valid from one
    // instant (tied but for their ids), so only the fact lane brings them, and it must cut.
    let eps: Vec<Value> =
        (0..30).map(|i| episode("facts", &format!("Turn {i}: we talked about old radios and clocks."))).collect();
    let (s, b) = app.post("/v1/episodes/batch", &json!({ "episodes": eps })).await;
    assert_eq!(s, 201, "{b}");
    loop {
        let (s, b) = app.post("/v1/memories/compile", &json!({"subject_id": "facts"})).await;
        assert_eq!(s, 200, "{b}");
        if b["has_more"] != json!(true) {
            break;
        }
    }
    sqlx::query(
        "INSERT INTO memories (tenant_id, subject_id, id, kind, content, valid_from, order_at, order_tiebreak) \
         SELECT 'default', 'facts', gen_random_uuid(), CASE WHEN g % 4 = 0 THEN 'procedure' ELSE 'profile_fact' END, \
                'Hobby ' || g || ': restoring old radios and clocks', '2026-11-30T12:00:00Z', \
                '2026-11-30T12:00:00Z', g::text \
         FROM generate_series(1, 80) g",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let (vector, model) = stored_vector(&app, "facts").await;
    let vector = parse_vector(&vector);
    for task in ["hobbi | radio", "clock | turn", "zebra"] {
        for (with_vector, lane) in [(false, 25), (true, 40), (false, 100)] {
            let probe = Probe {
                tenant: "default",
                subject_id: "facts",
                as_of: chrono::Utc::now(),
                tsquery: Some(task.to_string()),
                vector: with_vector.then(|| (vector.clone(), model.clone())),
                session_id: None,
                days: Vec::new(),
                approx_from: mnemo::db::context::APPROX_VECTORS_FROM,
                ranked_lane: lane,
                small_subject: [0, 0],
            };
            let (reference, got) = both_ways(&app, probe, true, true).await;
            let (want, got) = (canonical(reference), canonical(got));
            assert!(
                want == got,
                "task {task:?}, vector {with_vector}, lane {lane}:\nmnemo_context {want}\nin process {got}"
            );
        }
    }
}

/// `lanes::round9` rounds as `round(x::numeric, 9)::float8` does in Postgres, over doubles of
/// every magnitude a BM25 score takes and more.
#[tokio::test]
async fn bm25_score_rounding_matches_postgres() {
    use rand::{Rng, SeedableRng};
    let app = spawn().await;
    let mut rng = rand::rngs::StdRng::seed_from_u64(31);
    let mut xs: Vec<f64> = (0..4000).map(|i| rng.gen::<f64>() * 10f64.powi(i % 12 - 6)).collect();
    xs.extend([0.0, 1.0, 0.1 + 0.2, 2.5e-10, 5e-10, 4.999999999e-10, 1.0000000005, 12.3456789045, 0.3 + 0.6]);
    xs.extend((0..200).map(|i| f64::from(i) * 0.1 + 0.0000000005));
    let pg: Vec<f64> = sqlx::query_scalar(
        "SELECT round(x::numeric, 9)::float8 FROM unnest($1::float8[]) WITH ORDINALITY u(x, n) ORDER BY n",
    )
    .bind(&xs)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    for (x, want) in xs.iter().zip(pg) {
        assert_eq!(mnemo::services::context::lanes::round9(*x).to_bits(), want.to_bits(), "{x:e}");
    }
}
