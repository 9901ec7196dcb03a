//! Episode ingest through HTTP: creation, idempotency, batches, and bad input that writes nothing.
#![allow(clippy::unwrap_used)]

use crate::common::{episode, hold_counter, send_all, spawn, until_queued};
use mnemo::lexemes::LexemesAt;
use serde_json::{json, Value};

#[tokio::test]
async fn create_returns_201_and_the_stored_row() {
    let app = spawn().await;
    let mut body = episode("user:1", "hello");
    body["session_id"] = json!("s1");
    body["metadata"] = json!({"channel": "web"});
    body["occurred_at"] = json!("2026-03-02T10:00:00Z");
    let (status, ep) = app.post("/v1/episodes", &body).await;
    assert_eq!(status, 201, "{ep}");
    assert_eq!(ep["subject_id"], "user:1");
    assert_eq!(ep["type"], "message");
    assert_eq!(ep["session_id"], "s1");
    assert_eq!(ep["metadata"]["channel"], "web");
    assert_eq!(ep["occurred_at"], "2026-03-02T10:00:00.000000Z");
    assert!(ep["created_at"].as_str().unwrap().ends_with('Z'));
    assert!(ep.get("tenant_id").is_none() && ep.get("idempotency_key").is_none());
    uuid::Uuid::parse_str(ep["id"].as_str().unwrap()).unwrap();
    assert_eq!(app.count("episodes").await, 1);
}

#[tokio::test]
async fn idempotency_key_returns_the_existing_row_with_200() {
    let app = spawn().await;
    let mut first = episode("user:1", "I live in Quito.");
    first["idempotency_key"] = json!("k-1");
    let (s1, a) = app.post("/v1/episodes", &first).await;
    let mut retry = episode("user:1", "I live in Quito (retry).");
    retry["idempotency_key"] = json!("k-1");
    let (s2, b) = app.post("/v1/episodes", &retry).await;
    assert_eq!((s1, s2), (201, 200));
    assert_eq!(a["id"], b["id"]);
    assert_eq!(b["payload"], a["payload"], "the stored payload is returned unchanged");
    // The same key for another subject is a different episode.
    let mut other = episode("user:2", "x");
    other["idempotency_key"] = json!("k-1");
    assert_eq!(app.post("/v1/episodes", &other).await.0, 201);
    assert_eq!(app.count("episodes").await, 2);
}

#[tokio::test]
async fn legacy_metadata_key_is_honoured() {
    let app = spawn().await;
    let mut body = episode("user:1", "hi");
    body["metadata"] = json!({"idempotency_key": "legacy"});
    assert_eq!(app.post("/v1/episodes", &body).await.0, 201);
    assert_eq!(app.post("/v1/episodes", &body).await.0, 200);
    assert_eq!(app.count("episodes").await, 1);
}

#[tokio::test]
async fn concurrent_retries_with_one_key_store_one_row() {
    let app = spawn().await;
    let mut body = episode("user:1", "same");
    body["idempotency_key"] = json!("race");
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let (client, url, body) = (app.client.clone(), app.url("/v1/episodes"), body.clone());
        set.spawn(async move { crate::common::split(client.post(url).json(&body).send().await.unwrap()).await });
    }
    let results = set.join_all().await;
    let created = results.iter().filter(|(s, _)| *s == 201).count();
    assert_eq!(created, 1);
    assert!(results.iter().all(|(s, _)| *s == 201 || *s == 200));
    let ids: std::collections::HashSet<String> =
        results.iter().map(|(_, b)| b["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(ids.len(), 1);
    assert_eq!(app.count("episodes").await, 1);
}

#[tokio::test]
async fn batch_is_atomic_and_counts_only_new_rows() {
    let app = spawn().await;
    let mut a = episode("user:1", "one");
    a["idempotency_key"] = json!("dup");
    let b = episode("user:1", "two");
    let (status, body) = app.post("/v1/episodes/batch", &json!({"episodes": [a.clone(), b, a]})).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["episodes_created"], 2);
    let eps = body["episodes"].as_array().unwrap();
    assert_eq!(eps.len(), 3);
    assert_eq!(eps[0]["id"], eps[2]["id"], "a key repeated within the batch returns the same row");
    assert_eq!(app.count("episodes").await, 2);
}

#[tokio::test]
async fn one_bad_item_rejects_the_whole_batch() {
    let app = spawn().await;
    let good = episode("user:1", "fine");
    let mut bad = episode("user:1", "bad");
    bad["payload"] = json!("not an object");
    let (status, body) = app.post("/v1/episodes/batch", &json!({"episodes": [good, bad]})).await;
    assert_eq!(status, 422);
    assert_eq!(body["error"]["code"], "validation_error");
    let msg = body["error"]["message"].as_str().unwrap();
    assert!(msg.contains("episodes[1].payload"), "{msg}");
    assert_eq!(app.count("episodes").await, 0);
}

#[tokio::test]
async fn batch_size_bounds() {
    let app = spawn().await;
    let (s0, _) = app.post("/v1/episodes/batch", &json!({"episodes": []})).await;
    let many: Vec<_> = (0..101).map(|i| episode("user:1", &format!("m{i}"))).collect();
    let (s101, b) = app.post("/v1/episodes/batch", &json!({"episodes": many})).await;
    assert_eq!((s0, s101), (422, 422));
    assert!(b["error"]["message"].as_str().unwrap().contains("episodes"));
    let hundred: Vec<_> = (0..100).map(|i| episode("user:1", &format!("m{i}"))).collect();
    let (s100, b) = app.post("/v1/episodes/batch", &json!({"episodes": hundred})).await;
    assert_eq!(s100, 201);
    assert_eq!(b["episodes_created"], 100);
}

/// (loc, type) of every problem a 422 lists.
fn problems(resp: &Value) -> Vec<(Value, Value)> {
    let details = resp["error"]["details"].as_array().cloned().unwrap_or_default();
    details.iter().map(|d| (d["loc"].clone(), d["type"].clone())).collect()
}

#[tokio::test]
async fn every_problem_of_a_body_is_in_one_422() {
    let app = spawn().await;
    // two wrong types, a limit and a missing field, in any order of the input (unknown fields
    // are let through on this body, as Statewave does)
    let body = json!({"metadata": 3, "zzz": 1, "type": "x".repeat(129), "subject_id": 5, "source": "chat"});
    let (status, resp) = app.post("/v1/episodes", &body).await;
    assert_eq!(status, 422, "{resp}");
    let got = problems(&resp);
    for want in [
        (json!(["body", "subject_id"]), json!("string_type")),
        (json!(["body", "type"]), json!("string_too_long")),
        (json!(["body", "payload"]), json!("missing")),
        (json!(["body", "metadata"]), json!("dict_type")),
    ] {
        assert!(got.contains(&want), "{want:?} missing from {got:?}");
    }
    assert_eq!(got.len(), 4, "{got:?}");
    // inside a batch, each item's problems at its index
    let mut bad = episode("user:1", "bad");
    bad["payload"] = json!("not an object");
    bad["session_id"] = json!(7);
    let (status, resp) = app.post("/v1/episodes/batch", &json!({"episodes": [episode("user:1", "ok"), bad]})).await;
    assert_eq!(status, 422, "{resp}");
    let got = problems(&resp);
    assert!(got.contains(&(json!(["body", "episodes", 1, "payload"]), json!("dict_type"))), "{got:?}");
    assert!(got.contains(&(json!(["body", "episodes", 1, "session_id"]), json!("string_type"))), "{got:?}");
    // the tenant config patch is read the same way
    let patch = json!({"receipts": "sometimes", "rate_limit_rpm": 1.5, "region": "", "colour": "blue",
                       "claim_keys": {"crm.stage": "many"}});
    let (status, resp) = app.patch_as("default", "/admin/tenants/default/config", &patch).await;
    assert_eq!(status, 422, "{resp}");
    assert_eq!(
        problems(&resp),
        vec![
            (json!(["body", "receipts"]), json!("enum")),
            (json!(["body", "region"]), json!("string_too_short")),
            (json!(["body", "claim_keys", "crm.stage"]), json!("enum")),
            (json!(["body", "rate_limit_rpm"]), json!("int_type")),
            (json!(["body", "colour"]), json!("extra_forbidden")),
        ]
    );
    let (_, doc) = app.get("/admin/tenants/default/config").await;
    assert_eq!(doc["version"], 0, "nothing was written: {doc}");
    assert_eq!(app.count("episodes").await, 0);
}

#[tokio::test]
async fn bad_input_is_a_4xx_naming_the_field_and_writes_nothing() {
    let app = spawn().await;
    let long = "x".repeat(257);
    let cases = vec![
        (json!({"source": "chat", "type": "m", "payload": {}}), "subject_id"),
        (json!({"subject_id": 5, "source": "chat", "type": "m", "payload": {}}), "subject_id"),
        (json!({"subject_id": long, "source": "chat", "type": "m", "payload": {}}), "subject_id"),
        (json!({"subject_id": "", "source": "chat", "type": "m", "payload": {}}), "subject_id"),
        (json!({"subject_id": "u", "source": "chat", "type": "x".repeat(129), "payload": {}}), "type"),
        (json!({"subject_id": "u", "source": "chat", "type": "m", "payload": [1]}), "payload"),
        (json!({"subject_id": "u", "source": "chat", "type": "m"}), "payload"),
        (json!({"subject_id": "u", "source": "chat", "type": "m", "payload": {"t": "a\u{0000}b"}}), "payload"),
        (json!({"subject_id": "u\u{0000}", "source": "chat", "type": "m", "payload": {}}), "subject_id"),
        (json!({"subject_id": "u", "source": "chat", "type": "m", "payload": {}, "metadata": 3}), "metadata"),
        (
            json!({"subject_id": "u", "source": "chat", "type": "m", "payload": {}, "occurred_at": "soon"}),
            "occurred_at",
        ),
        (json!({"subject_id": "u", "source": "chat", "type": "m", "payload": {}, "session_id": 7}), "session_id"),
        (
            json!({"subject_id": "u", "source": "chat", "type": "m", "payload": {}, "idempotency_key": "k".repeat(513)}),
            "idempotency_key",
        ),
        (json!([1, 2]), "body"),
    ];
    for (body, field) in cases {
        let (status, resp) = app.post("/v1/episodes", &body).await;
        assert_eq!(status, 422, "{body} -> {resp}");
        let err = &resp["error"];
        assert_eq!(err["code"], "validation_error");
        assert!(err["message"].as_str().unwrap().contains(field), "{field}: {resp}");
        assert!(err["request_id"].is_string());
        assert!(err["details"].is_array());
    }
    // Not JSON at all.
    let r = app
        .client
        .post(app.url("/v1/episodes"))
        .header("Content-Type", "application/json")
        .body("{nope")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 422);
    assert_eq!(app.count("episodes").await, 0);
}

#[tokio::test]
async fn oversized_body_is_413_in_the_envelope() {
    let app = spawn().await;
    let mut body = episode("u", "x");
    body["payload"] = json!({"text": "y".repeat(1_100_000)});
    let (status, resp) = app.post("/v1/episodes", &body).await;
    assert_eq!(status, 413);
    assert_eq!(resp["error"]["code"], "payload_too_large");
    assert_eq!(app.count("episodes").await, 0);
}

#[tokio::test]
async fn unicode_and_nested_payloads_round_trip() {
    let app = spawn().await;
    let mut body = episode("user:ü", "Grüße 👋 — “quotes”");
    body["payload"]["nested"] = json!({"a": [1, 2.5, null, true, {"b": "c"}]});
    let (status, ep) = app.post("/v1/episodes", &body).await;
    assert_eq!(status, 201);
    assert_eq!(ep["payload"], body["payload"]);
}

/// (subject, seq) of the stored episodes with these ids, in the given order.
async fn seqs(app: &crate::common::TestApp, ids: &[&str]) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for id in ids {
        let uuid: uuid::Uuid = id.parse().unwrap();
        let row: (String, i64) = sqlx::query_as("SELECT subject_id, seq FROM episodes WHERE id = $1")
            .bind(uuid)
            .fetch_one(&app.pool)
            .await
            .unwrap();
        out.push(row);
    }
    out
}

#[tokio::test]
async fn batch_seqs_follow_the_input_per_subject_and_stored_keys_return_their_row() {
    let app = spawn().await;
    let mut stored = episode("user:b", "stored earlier");
    stored["idempotency_key"] = json!("kept");
    let (status, first) = app.post("/v1/episodes", &stored).await;
    assert_eq!(status, 201, "{first}");
    let (status, single) = app.post("/v1/episodes", &episode("user:a", "single")).await;
    assert_eq!(status, 201, "{single}");
    let items = vec![
        episode("user:b", "b1"),
        episode("user:a", "a1"),
        stored.clone(),
        episode("user:b", "b2"),
        episode("user:a", "a2"),
    ];
    let (status, body) = app.post("/v1/episodes/batch", &json!({ "episodes": items })).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["episodes_created"], 4);
    let eps = body["episodes"].as_array().unwrap();
    assert_eq!(eps[2], first, "a stored key returns the stored row unchanged");
    let texts: Vec<&str> = eps.iter().map(|e| e["payload"]["messages"][0]["content"].as_str().unwrap()).collect();
    assert_eq!(texts, ["b1", "a1", "stored earlier", "b2", "a2"]);
    let ids: Vec<&str> = eps.iter().map(|e| e["id"].as_str().unwrap()).collect();
    let got = seqs(&app, &ids).await;
    let seq_of = |i: usize| got[i].1;
    // user:a had seq 1 (single), user:b seq 1 (stored); the repeat consumes a seq (a gap).
    assert!(seq_of(1) > 1 && seq_of(4) > seq_of(1), "{got:?}");
    assert!(seq_of(0) > 1 && seq_of(3) > seq_of(0), "{got:?}");
    // A later single ingest still comes after the batch in its subject.
    let (_, after) = app.post("/v1/episodes", &episode("user:a", "after")).await;
    let later = seqs(&app, &[after["id"].as_str().unwrap()]).await;
    assert!(later[0].1 > seq_of(4), "{later:?} {got:?}");
}

#[tokio::test]
async fn the_single_statement_insert_is_still_checked_by_row_level_security() {
    let app = spawn().await;
    // The statement's tenant CTE names one tenant while the row claims another: the policy's
    // WITH CHECK must refuse it, as it would inside a tenant transaction.
    let sql = format!(
        "WITH {} INSERT INTO subject_counters (tenant_id, subject_id, last_seq) \
         SELECT 'other', 'u', 1 FROM mnemo_tenant",
        mnemo::db::scope::TENANT_CTE
    );
    let mut conn = app.app_pool.acquire().await.unwrap();
    let err = sqlx::query(&sql).bind("default").execute(&mut *conn).await.unwrap_err();
    assert!(err.to_string().contains("row-level security"), "{err}");
    // The tenant setting ended with that statement's transaction.
    let left: Option<String> =
        sqlx::query_scalar("SELECT current_setting('mnemo.tenant', true)").fetch_one(&mut *conn).await.unwrap();
    assert!(left.as_deref().unwrap_or("").is_empty(), "{left:?}");
}

#[tokio::test]
async fn concurrent_single_ingests_share_one_statement_and_keep_every_row_in_seq_order() {
    let app = crate::common::spawn_with(mnemo::RuntimeConfig { ingest_writers: 1, ..Default::default() }).await;
    let lock = hold_counter(&app, "user:g").await;
    let first = send_all(&app, vec![episode("user:g", "alone")]);
    until_queued(&app, 0).await;
    let mut bodies: Vec<Value> = (0..5).map(|i| episode("user:g", &format!("g{i}"))).collect();
    bodies.extend((0..4).map(|i| episode("user:h", &format!("h{i}"))));
    let mut dup = episode("user:g", "keyed");
    dup["idempotency_key"] = json!("dup");
    bodies.push(dup.clone());
    bodies.push(dup);
    let queued = send_all(&app, bodies);
    until_queued(&app, 11).await;
    lock.commit().await.unwrap();

    let (status, alone) = first.into_iter().next().unwrap().await.unwrap();
    assert_eq!(status, 201, "{alone}");
    let mut results = Vec::new();
    for handle in queued {
        results.push(handle.await.unwrap());
    }
    let statuses: Vec<u16> = results.iter().map(|(s, _)| *s).collect();
    assert_eq!(statuses[..10], [201; 10], "{results:?}");
    assert_eq!(statuses[10], 200, "the repeated key returns the row stored by the same group");
    assert_eq!(results[10].1, results[9].1);
    // Each caller got its own row back.
    for (i, (_, row)) in results.iter().enumerate().take(9) {
        let want = if i < 5 { format!("g{i}") } else { format!("h{}", i - 5) };
        assert_eq!(row["payload"]["messages"][0]["content"], want.as_str(), "{row}");
    }
    // One statement: one transaction, one created_at, after the lone write's.
    let created: std::collections::BTreeSet<&str> =
        results.iter().map(|(_, r)| r["created_at"].as_str().unwrap()).collect();
    assert_eq!(created.len(), 1, "{created:?}");
    assert!(created.iter().all(|c| *c > alone["created_at"].as_str().unwrap()));
    // Seqs: distinct, after the lone write's in its subject, and in id order (the order the
    // group was formed in, which ties on created_at fall back to).
    let ids: Vec<&str> = results.iter().take(10).map(|(_, r)| r["id"].as_str().unwrap()).collect();
    let got = seqs(&app, &ids).await;
    let lone = seqs(&app, &[alone["id"].as_str().unwrap()]).await[0].1;
    for subject in ["user:g", "user:h"] {
        let mut rows: Vec<(uuid::Uuid, i64)> = ids
            .iter()
            .zip(&got)
            .filter(|(_, (s, _))| s == subject)
            .map(|(id, (_, seq))| (id.parse().unwrap(), *seq))
            .collect();
        rows.sort();
        let in_id_order: Vec<i64> = rows.iter().map(|(_, seq)| *seq).collect();
        let mut sorted = in_id_order.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(in_id_order, sorted, "{subject}: seqs follow ids and are distinct");
        if subject == "user:g" {
            assert!(in_id_order[0] > lone, "{in_id_order:?} after {lone}");
        }
    }
    assert_eq!(app.count("episodes").await, 1 + 1 + 10);
}

#[tokio::test]
async fn an_episode_postgres_refuses_fails_alone_and_its_group_is_written() {
    let app = crate::common::spawn_with(mnemo::RuntimeConfig { ingest_writers: 1, ..Default::default() }).await;
    // A rule only Postgres knows: nothing the HTTP layer checks refuses this episode.
    sqlx::raw_sql(
        "CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
           IF NEW.payload::text LIKE '%poison%' THEN RAISE EXCEPTION 'poisoned episode'; END IF; RETURN NEW; END $$; \
         CREATE TRIGGER refuse_poison BEFORE INSERT ON episodes FOR EACH ROW EXECUTE FUNCTION refuse_poison();",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let lock = hold_counter(&app, "user:p").await;
    let first = send_all(&app, vec![episode("user:p", "alone")]);
    until_queued(&app, 0).await;
    let bodies = vec![episode("user:p", "good 1"), episode("user:p", "poison"), episode("user:q", "good 2")];
    let queued = send_all(&app, bodies);
    until_queued(&app, 3).await;
    lock.commit().await.unwrap();
    assert_eq!(first.into_iter().next().unwrap().await.unwrap().0, 201);
    let mut statuses = Vec::new();
    for handle in queued {
        statuses.push(handle.await.unwrap().0);
    }
    assert_eq!(statuses, [201, 500, 201]);
    assert_eq!(app.count("episodes").await, 1 + 1 + 2);
}

/// A new row's response is built from the request (Postgres sends back only its instants); it
/// must be what Postgres stored, which a repeat of the key reads back.
#[tokio::test]
async fn a_new_episode_is_answered_as_stored() {
    let app = crate::common::spawn().await;
    let payloads = [
        json!({"z": 1, "a": {"y": [3, 2, 1], "b": null}, "messages": [{"role": "user", "content": "héllo 👋"}]}),
        json!({"n": [1e2, 1.50, 0.1, -0.0, 12345678901234567890u64, 1e22, 2.5e-8], "text": "numbers"}),
        json!({"k": "a", "K": "b", "ä": "c", "": "empty key", "long key first": true, "t": "\u{7f}\t\"quoted\"\\"}),
    ];
    let occurred = ["2024-01-02T03:04:05.123456789Z", "2024-01-02T03:04:05Z", "2024-01-02T03:04:05+02:00"];
    for (i, (payload, at)) in payloads.iter().zip(occurred).enumerate() {
        let key = format!("stored-{i}");
        let body = json!({
            "subject_id": "user:stored", "source": "chat", "type": "message", "payload": payload,
            "metadata": {"b": 2, "a": [1.0, "x"]}, "provenance": {"via": "test"}, "session_id": "s1",
            "occurred_at": at, "idempotency_key": key,
        });
        let (s1, new) = app.post("/v1/episodes", &body).await;
        assert_eq!(s1, 201, "{new}");
        let (s2, again) = app.post("/v1/episodes", &body).await;
        assert_eq!(s2, 200, "{again}");
        assert_eq!(new, again, "the new row's answer and the stored row differ");
        assert_eq!(serde_json::to_string(&new).unwrap(), serde_json::to_string(&again).unwrap());
    }
    // The same through a batch.
    let batch: Vec<Value> = payloads
        .iter()
        .enumerate()
        .map(|(i, p)| json!({"subject_id": "user:stored-b", "source": "chat", "type": "message", "payload": p, "idempotency_key": format!("b{i}")}))
        .collect();
    let (s1, new) = app.post("/v1/episodes/batch", &json!({"episodes": batch})).await;
    assert_eq!(s1, 201, "{new}");
    let (s2, again) = app.post("/v1/episodes/batch", &json!({"episodes": batch})).await;
    assert_eq!((s2, &again["episodes_created"]), (201, &json!(0)), "{again}");
    assert_eq!(new["episodes"], again["episodes"], "{new} vs {again}");
}

/// A writer keeps its connection while groups follow each other; when that connection is lost
/// mid-statement, only the group it carried fails, and the next group goes on a fresh one.
#[tokio::test]
async fn a_writer_that_lost_its_connection_fails_that_group_only() {
    let app = crate::common::spawn_with(mnemo::RuntimeConfig { ingest_writers: 1, ..Default::default() }).await;
    let lock = hold_counter(&app, "user:cut").await;
    let first = send_all(&app, vec![episode("user:cut", "lost")]);
    until_queued(&app, 0).await;
    let queued = send_all(&app, vec![episode("user:cut", "after"), episode("user:other", "after")]);
    until_queued(&app, 2).await;
    // The writer's backend is the one waiting for the held counter row.
    let killed: i64 = sqlx::query_scalar(&format!(
        "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM ({}) w) k",
        crate::common::WAITING_HERE
    ))
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(killed, 1);
    let (status, body) = first.into_iter().next().unwrap().await.unwrap();
    assert_eq!(status, 503, "{body}");
    lock.commit().await.unwrap();
    for handle in queued {
        let (status, body) = handle.await.unwrap();
        assert_eq!(status, 201, "the next group took a fresh connection: {body}");
    }
}

/// With two writers, a subject whose counter row is held keeps only its own later writes
/// waiting: another subject's write goes by in the second statement, and the held subject's
/// writes keep their queue order once it is free.
#[tokio::test]
async fn a_held_subject_keeps_its_own_writes_waiting_and_not_the_others() {
    let app = crate::common::spawn_with(mnemo::RuntimeConfig { ingest_writers: 2, ..Default::default() }).await;
    let lock = hold_counter(&app, "user:held").await;
    let first = send_all(&app, vec![episode("user:held", "first")]);
    until_queued(&app, 0).await;
    let held = send_all(&app, vec![episode("user:held", "second"), episode("user:held", "third")]);
    until_queued(&app, 2).await;
    // The second writer is free, and this subject is not held.
    let (status, other) = app.post("/v1/episodes", &episode("user:free", "meanwhile")).await;
    assert_eq!(status, 201, "{other}");
    assert_eq!(app.group_commit.queued(mnemo::model::text::DEFAULT_TENANT), 2, "the held subject's writes still wait");
    lock.commit().await.unwrap();
    let mut ids = vec![first.into_iter().next().unwrap().await.unwrap()];
    for handle in held {
        ids.push(handle.await.unwrap());
    }
    assert!(ids.iter().all(|(s, _)| *s == 201), "{ids:?}");
    let ids: Vec<&str> = ids.iter().map(|(_, r)| r["id"].as_str().unwrap()).collect();
    let got: Vec<i64> = seqs(&app, &ids).await.into_iter().map(|(_, seq)| seq).collect();
    assert!(got.windows(2).all(|w| w[0] < w[1]), "queue order kept: {got:?}");
}

/// Every way an episode is stored gives it the lexemes of its payload (the
/// statements compute them, and the trigger fills them for a row inserted without).
#[tokio::test]
async fn every_insert_path_stores_the_lexemes_of_its_payload() {
    // Computed by the server (the default, where it is sure of them) and by Postgres alone.
    for lexemes_at in [LexemesAt::Server, LexemesAt::Postgres] {
        every_insert_path_stores_the_lexemes_with(lexemes_at).await;
    }
}

async fn every_insert_path_stores_the_lexemes_with(lexemes_at: LexemesAt) {
    let app =
        crate::common::spawn_with(mnemo::RuntimeConfig { ingest_writers: 1, lexemes_at, ..Default::default() }).await;
    let by_server = app.group_commit.lexer().active(&app.app_pool).await;
    assert_eq!(by_server, lexemes_at == LexemesAt::Server, "the probes agree with this database");
    let payloads = [
        json!({"messages": [{"role": "user", "content": "I moved to Lisbon", "name": "Ana"}]}),
        json!({"text": "Deploys run on Fridays", "speaker": "Ops"}),
        json!({"content": "The quarterly report is due", "author": "Kim"}),
        json!({"messages": [{"speaker": "Bo", "content": "Rotating logs daily"}, {"content": "Sounds good"}]}),
        json!({"kind": "no text at all"}),
        // Left to Postgres by the server: outside ASCII, a host name, content parts.
        json!({"messages": [{"role": "user", "content": "I moved to Málaga, see example.com", "name": "Ana"}]}),
        json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "Lisbon again"}]}]}),
    ];
    let with = |subject: &str, p: &Value| {
        let mut e = episode(subject, "x");
        e["payload"] = p.clone();
        e
    };
    // Alone (the single-row statement), with and without a key.
    let (status, body) = app.post("/v1/episodes", &with("user:lx", &payloads[0])).await;
    assert_eq!(status, 201, "{body}");
    let mut keyed = with("user:lx", &payloads[1]);
    keyed["idempotency_key"] = json!("k1");
    let (status, body) = app.post("/v1/episodes", &keyed).await;
    assert_eq!(status, 201, "{body}");
    // Grouped: writes queued behind a held subject go in one statement.
    let lock = hold_counter(&app, "user:lx").await;
    let first = send_all(&app, vec![with("user:lx", &payloads[2])]);
    until_queued(&app, 0).await;
    let mut grouped: Vec<Value> = payloads.iter().map(|p| with("user:lx", p)).collect();
    let mut keyed = with("user:lx2", &payloads[3]);
    keyed["idempotency_key"] = json!("k2");
    grouped.push(keyed);
    let queued = send_all(&app, grouped);
    until_queued(&app, payloads.len() + 1).await;
    lock.commit().await.unwrap();
    for handle in first.into_iter().chain(queued) {
        let (status, body) = handle.await.unwrap();
        assert_eq!(status, 201, "{body}");
    }
    // Batches, with and without keys.
    let plain: Vec<Value> = payloads.iter().map(|p| with("user:lx3", p)).collect();
    let (status, body) = app.post("/v1/episodes/batch", &json!({ "episodes": plain })).await;
    assert_eq!(status, 201, "{body}");
    let mut keyed: Vec<Value> = payloads.iter().map(|p| with("user:lx4", p)).collect();
    keyed[0]["idempotency_key"] = json!("k3");
    let (status, body) = app.post("/v1/episodes/batch", &json!({ "episodes": keyed })).await;
    assert_eq!(status, 201, "{body}");
    // By hand, without the column and with it NULL: the trigger fills it.
    for (i, sql) in [
        "INSERT INTO episodes (tenant_id, subject_id, id, source, type, payload, seq) \
         VALUES ('default', 'user:raw', gen_random_uuid(), 'chat', 'message', $1, 1)",
        "INSERT INTO episodes (tenant_id, subject_id, id, source, type, payload, seq, search_tsv) \
         VALUES ('default', 'user:raw', gen_random_uuid(), 'chat', 'message', $1, 2, NULL)",
    ]
    .into_iter()
    .enumerate()
    {
        sqlx::query(sql).bind(&payloads[i]).execute(&app.pool).await.unwrap();
    }

    // Alone 2, the held subject's first write 1, its next 1, the group, two batches, by hand 2.
    let total = 2 + 1 + 1 + (payloads.len() + 1) + 2 * payloads.len() + 2;
    assert_eq!(app.count("episodes").await, total as i64);
    let (wrong, empty): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE search_tsv IS DISTINCT FROM to_tsvector('english', \
           left(coalesce(jsonb_path_query_array(payload, '$.messages[*].content')::text, '') || ' ' || \
           coalesce(jsonb_path_query_array(payload, '$.messages[*].name')::text, '') || ' ' || \
           coalesce(jsonb_path_query_array(payload, '$.messages[*].speaker')::text, '') || ' ' || \
           coalesce(payload->>'text', '') || ' ' || coalesce(payload->>'content', '') || ' ' || \
           coalesce(payload->>'speaker', '') || ' ' || coalesce(payload->>'author', ''), 250000))), \
           count(*) FILTER (WHERE search_tsv = ''::tsvector) FROM episodes",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(wrong, 0, "every row's lexemes are those of its payload");
    // Only the payload without text has none, and the held subject's first write ("before", a
    // stop word).
    let texts: Vec<(String, Value)> =
        sqlx::query_as("SELECT subject_id, payload FROM episodes WHERE search_tsv = ''::tsvector ORDER BY subject_id")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(empty, 4, "the text-less payload (grouped, two batches) and the stop word: {texts:?}");
    let found: i64 =
        sqlx::query_scalar("SELECT count(*) FROM episodes WHERE search_tsv @@ to_tsquery('english', 'lisbon & ana')")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(found, 5, "the first payload, stored alone, grouped, in two batches and by hand");
}
