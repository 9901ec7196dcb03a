//! The lanes (`services::context::lanes`) applied to a large subject's pool (`mnemo_context`)
//! against the same lanes applied to all the subject's rows (`mnemo_context_small`), on real
//! Postgres, called as the server calls them: the pool must hold every row the lanes take.
#![allow(clippy::unwrap_used)]

use crate::common::{episode, spawn};
use crate::context_sql::{seed_turns, stored_vector};
use mnemo::compile::digest::is_digest;
use serde_json::{json, Value};

/// A vector from its text form (`[0.1,0.2,…]`).
fn parse_vector(text: &str) -> pgvector::Vector {
    text.trim_matches(|c| c == '[' || c == ']').split(',').map(|x| x.parse::<f32>().unwrap()).collect::<Vec<_>>().into()
}

/// The canonical form of what retrieval found: every list in id order, printed exactly (scores
/// included, to the last bit).
fn canonical(mut found: mnemo::db::context::Found) -> String {
    // What the statement says of the subject's lexical index is not a candidate.
    (found.lexical_state, found.lexical_used) = (None, None);
    found.memories.sort_by_key(|c| c.memory.id);
    found.episodes.sort_by_key(|c| c.episode.id);
    found.backing.sort_by_key(|b| b.episode_id);
    format!("{found:?}")
}

/// A large subject's statement returns a pool: each lane's leading rows and what the lanes'
/// closure may take. The lanes applied to it must find what they find on all the subject's rows:
/// the same memories and episodes with the same scores, the same backing facts and the same
/// snapshot: with and without a task vector, three lane sizes, a session with a snapshot (its
/// covered turns, pinned turn and the summaries it stands for), dates, the turns around and the
/// sources, an instant before the later turns, and facts that changed (superseded memories).
#[tokio::test]
async fn the_pool_holds_what_the_lanes_take_from_all_rows_for_every_option() {
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
    let (mut calls, mut lexical, mut semantic, mut snapshots, mut digests) = (0, 0, 0, 0, 0);
    for task in tasks {
        for (with_vector, lane, session, dates, before) in options {
            for (around, sources) in [(true, true), (false, false), (true, false)] {
                let as_of = if before { mid } else { chrono::Utc::now() };
                let probe = Probe {
                    vector: with_vector.then(|| (vector.clone(), model.clone())),
                    session_id: session,
                    days: if dates { vec![today] } else { Vec::new() },
                    ranked_lane: lane,
                    small_subject: [0, 0],
                    // the sessions' digests (a task about many moments) with the shortest lanes
                    digests: lane == 25,
                    ..Probe::new("default", "small", as_of, Some(task.to_string()))
                };
                let (reference, got) = both_ways(&app, probe, around, sources).await;
                lexical +=
                    usize::from(got.memories.iter().any(|c| c.lex > 0.0) && got.episodes.iter().any(|c| c.lex > 0.0));
                semantic += usize::from(got.episodes.iter().any(|c| c.sem.is_some()));
                snapshots += usize::from(got.snapshot.is_some());
                digests += usize::from(got.memories.iter().any(|c| is_digest(&c.memory.metadata)));
                let (want, got) = (canonical(reference), canonical(got));
                assert!(
                    want == got,
                    "task {task:?}, options {:?}, around {around}, sources {sources}:\npool {want}\nall rows {got}",
                    (with_vector, lane, session, dates, before)
                );
                calls += 1;
            }
        }
    }
    assert_eq!(calls, 180);
    assert!(
        lexical > 0 && semantic > 0 && snapshots > 0 && digests > 0,
        "uncovered: {lexical} {semantic} {snapshots} {digests}"
    );
}

/// What the lanes find for `probe` on the pool `mnemo_context` fetches and on all the rows
/// (the subject must be under the small-subject bound), each checked to have taken its path.
/// The lanes on all rows run twice: on the rows the statement sent, then on the same rows kept
/// (the statement sent the fingerprint only), and must agree.
async fn both_ways(
    app: &crate::common::TestApp,
    mut probe: mnemo::db::context::Probe<'static>,
    around: bool,
    sources: bool,
) -> (mnemo::db::context::Found, mnemo::db::context::Found) {
    use mnemo::db::context::{candidates, Fetched, Sent};
    use mnemo::services::context::lanes::select;
    let pool = &app.app_pool;
    probe.small_subject = [0, 0];
    // Through mnemo_context: its hits ranked by the server, then the call with those lanes.
    let limit = usize::try_from(probe.ranked_lane.clamp(1, mnemo::db::context::MAX_RANKED_LANE)).unwrap();
    let mut lexical = None;
    let reference = loop {
        match candidates(pool, &probe, around, sources, None, lexical.as_ref()).await.unwrap().0 {
            Fetched::Pool(rows) => {
                let from_pool = mnemo::services::context::candidates::from_pool;
                break from_pool(rows, &probe, around, sources, lexical.as_ref(), None).unwrap();
            }
            Fetched::Hits(hits) if lexical.is_none() => {
                lexical = Some(mnemo::services::context::lexical::bm25::from_hits(&hits, limit));
            }
            Fetched::Hits(_) => panic!("the lanes of the call's own hits were refused"),
            Fetched::Subject(_) => panic!("a subject over the bound came back whole"),
        }
    };
    probe.small_subject = mnemo::db::context::SMALL_SUBJECT;
    let lanes = mnemo::services::context::candidates::lanes_for(&probe, around, sources);
    let Fetched::Subject(mut sent) = candidates(pool, &probe, around, sources, None, None).await.unwrap().0 else {
        panic!("a small subject came back as a pool")
    };
    assert_eq!((sent.memories_sent, sent.episodes_sent), (Sent::All, Sent::All), "no fingerprint was sent");
    let Some(rows) = sent.rows(None).unwrap() else { panic!("all rows were sent") };
    let got = select(&rows, &sent, &lanes, None);
    let Fetched::Subject(kept) =
        candidates(pool, &probe, around, sources, Some((&sent.fingerprint, 0)), None).await.unwrap().0
    else {
        panic!("a small subject came back as a pool")
    };
    assert_eq!((kept.memories_sent, kept.episodes_sent), (Sent::Kept, Sent::Kept), "the rows came again");
    assert!(kept.memories.is_empty() && kept.episodes.is_empty());
    assert_eq!(kept.fingerprint, sent.fingerprint);
    let again = select(&rows, &kept, &lanes, None);
    assert_eq!(format!("{got:?}"), format!("{again:?}"), "the kept rows gave other candidates");
    (reference, got)
}

/// The lanes that cut by order (recent facts, recent turns) cut the pool as they cut all the
/// rows when they must cut: 80 many-valued facts and procedures valid from one instant (so tied but for their
/// ids), more than the fact lane's 50.
#[tokio::test]
async fn lanes_cut_long_fact_lanes_of_the_pool_as_of_all_rows() {
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
                vector: with_vector.then(|| (vector.clone(), model.clone())),
                ranked_lane: lane,
                small_subject: [0, 0],
                ..Probe::new("default", "facts", chrono::Utc::now(), Some(task.to_string()))
            };
            let (reference, got) = both_ways(&app, probe, true, true).await;
            let (want, got) = (canonical(reference), canonical(got));
            assert!(want == got, "task {task:?}, vector {with_vector}, lane {lane}:\npool {want}\nall rows {got}");
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
        assert_eq!(mnemo::services::context::lexical::bm25::round9(*x).to_bits(), want.to_bits(), "{x:e}");
    }
}
