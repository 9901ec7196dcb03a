//! The functions behind a context call (`mnemo_context` and its lane helpers) on real Postgres,
//! called as the server calls them: the plans they take.
#![allow(clippy::unwrap_used)]

use crate::common::{episode, spawn};
use serde_json::{json, Value};

/// In a database of many small subjects, the cached generic plans of a context call estimate a
/// subject's rows as that small average. A large subject's full-text probes must still go
/// through the full-text index, not test every row of the subject per term.
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
