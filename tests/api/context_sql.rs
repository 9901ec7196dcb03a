//! The functions behind a context call (`mnemo_context` and its lane helpers) on real Postgres,
//! called as the server calls them: BM25 against its first formula, and the plans they take.
#![allow(clippy::unwrap_used)]

use crate::common::{episode, spawn};
use serde_json::{json, Value};

/// The server's BM25 (`lexical::bm25`, the only one) ranks exactly as the first ranking function
/// did in SQL (migration 0015's `mnemo_bm25_rank`, run here as a temporary function) for lanes
/// shorter and longer than their hits, with scores tied across the lane's last place, and with
/// more items than the subject's size.
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
            let want: Vec<(uuid::Uuid, f64)> =
                sqlx::query_as("SELECT id, score FROM pg_temp.bm25_reference($1, $2, $3, $4, $5)")
                    .bind(&ids)
                    .bind(&ls)
                    .bind(&dl)
                    .bind(n)
                    .bind(limit)
                    .fetch_all(&mut *conn)
                    .await
                    .unwrap();
            let hits = mnemo::db::context::LexicalHits {
                memory_terms: terms.iter().map(|t| t.to_string()).collect(),
                size: n,
                memories: ids
                    .iter()
                    .zip(&ls)
                    .zip(&dl)
                    .map(|((id, l), dl)| mnemo::db::context::Hit {
                        id: *id,
                        term: terms.iter().position(|t| t == l).unwrap(),
                        dl: *dl,
                    })
                    .collect(),
                ..Default::default()
            };
            let lanes = mnemo::services::context::lexical::bm25::from_hits(&hits, limit as usize);
            let got: &Vec<(uuid::Uuid, f64)> = &lanes.memories.0.into_iter().zip(lanes.memories.1).collect();
            let want = &want;
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

    // The call as the server first makes it (no lanes yet: it returns the lexical hits), then what
    // this transaction's scans read.
    let call = |task: &str| {
        format!(
            "SELECT COALESCE(sum(cardinality(ids)), 0) FROM mnemo_context('default', 'large', now(), '{task}', \
             NULL, NULL, NULL, '{{}}', 20000, true, true, false, '{{40,40,50,20,30,30,160}}')"
        )
    };
    let read = |f: &str, rel: &str| format!("SELECT {f}('{rel}'::regclass)");
    // A word of hundreds of turns: the probes read the full-text index, not the subject in order.
    let mut tx = app.app_pool.begin().await.unwrap();
    let rows: i64 = sqlx::query_scalar(&call("kafka | consumer")).fetch_one(&mut *tx).await.unwrap();
    assert!(rows > 40, "{rows}");
    let mut by_index = Vec::new();
    for index in ["episodes_subject_order", "episodes_subject_key_tsv"] {
        let sql = read("pg_stat_get_xact_tuples_returned", index);
        by_index.push(sqlx::query_scalar::<_, i64>(&sql).fetch_one(&mut *tx).await.unwrap());
    }
    tx.rollback().await.unwrap();
    assert!(by_index[1] > 0, "the full-text index was not used");
    assert!(by_index[0] < 200, "the probe read the subject's turns in order: {} entries", by_index[0]);
}

/// Seeds `subject` with 60 turns in two halves of 30, each compiled once posted: a fact every
/// `every`-th turn, the rest chat about a few recurring topics, each turn in the session
/// `session` names. Returns an instant between the halves.
pub async fn seed_turns(
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
pub async fn stored_vector(app: &crate::common::TestApp, subject: &str) -> (String, String) {
    sqlx::query_as(
        "SELECT embedding::text, embedding_model FROM episode_embeddings WHERE subject_id = $1 \
         ORDER BY episode_id LIMIT 1",
    )
    .bind(subject)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}
