//! Keeping each session's digest current as compile consumes its episodes
//! ([`crate::compile::digest`]): inside the batch's transaction, every session the batch touched
//! that has grown enough ([`digest::due`]) gets a new digest, which supersedes the old one (a
//! `session_digest` record), so a replay as of any instant reads the digest it read then.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use pgvector::Vector;
use serde_json::json;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::compile::digest::{self, session_digest, turn_line};
use crate::compile::text::embedded_text;
use crate::db;
use crate::db::digests::NewDigest;
use crate::db::supersession::RecordRow;
use crate::embed::{embed_texts, Embedder};
use crate::model::id::new_id;
use crate::model::voice::Trust;
use crate::services::compile::CompileError;

/// The supersession rule that retires a session's older digest.
pub const RULE: &str = "session_digest";

/// Who and what a refresh is for.
pub struct Refresh<'a> {
    pub tenant: &'a str,
    pub subject_id: &'a str,
    pub job_id: Option<&'a str>,
    pub trust: &'a Trust,
    pub embedder: &'a Arc<dyn Embedder>,
}

/// Writes a new digest for each of `sessions` that is due, counting its episodes up to
/// `through_seq`; returns the new digests' ids.
pub async fn refresh(
    conn: &mut PgConnection,
    r: &Refresh<'_>,
    sessions: &BTreeSet<String>,
    through_seq: i64,
) -> Result<Vec<Uuid>, CompileError> {
    if sessions.is_empty() {
        return Ok(Vec::new());
    }
    let (tenant, subject_id) = (r.tenant, r.subject_id);
    let sessions: Vec<String> = sessions.iter().cloned().collect();
    let sizes = db::digests::sizes(conn, tenant, subject_id, &sessions, through_seq).await?;
    let current: HashMap<String, db::digests::Current> = db::digests::current(conn, tenant, subject_id, &sessions)
        .await?
        .into_iter()
        .map(|c| (c.session_id.clone(), c))
        .collect();
    let covered = |s: &str| current.get(s).map_or(0, |c| usize::try_from(c.episodes).unwrap_or(0));
    let due: Vec<(String, i64)> =
        sizes.into_iter().filter(|(s, n)| digest::due(covered(s), usize::try_from(*n).unwrap_or(0))).collect();
    if due.is_empty() {
        return Ok(Vec::new());
    }
    let names: Vec<String> = due.iter().map(|(s, _)| s.clone()).collect();
    let mut by_session: BTreeMap<String, Vec<digest::Turn>> = BTreeMap::new();
    for t in db::digests::turns(conn, tenant, subject_id, &names, through_seq).await? {
        if let Some(line) = turn_line(&t.summary, t.chat, r.trust.voice(&t.source)) {
            by_session.entry(t.session_id).or_default().push(digest::Turn {
                episode_id: t.id,
                at: t.occurred_at,
                line,
            });
        }
    }
    let made: Vec<(String, i64, digest::Digest)> = due
        .into_iter()
        .filter_map(|(s, n)| {
            let d = session_digest(by_session.get(&s).map_or(&[][..], Vec::as_slice))?;
            Some((s, n, d))
        })
        .collect();
    if made.is_empty() {
        return Ok(Vec::new());
    }
    let texts = made.iter().map(|(_, _, d)| embedded_text(&d.content).to_string()).collect();
    let vectors = embed_texts(r.embedder, texts).await.map_err(CompileError::Failed)?;
    let model = r.embedder.model_id().to_string();
    let (mut ids, mut retired, mut ends, mut records) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for ((session, episodes, d), vector) in made.into_iter().zip(vectors) {
        let id = new_id();
        let row = NewDigest {
            id,
            content: d.content,
            summary: d.summary,
            valid_from: d.last_at,
            sources: d.sources,
            metadata: json!({
                "compiler": "digest",
                "digest": digest::SESSION,
                "session_id": session,
                "episodes": episodes,
                "turns": d.turns,
            }),
            order_tiebreak: format!("{through_seq:020}:d"),
            embedding: Some(Vector::from(vector)),
        };
        db::digests::insert(conn, tenant, subject_id, &row, &model).await?;
        if let Some(old) = current.get(&session) {
            retired.push(old.id);
            ends.push(d.last_at);
            records.push(RecordRow {
                superseded: old.id,
                superseding: Some(id),
                rule: RULE.to_string(),
                claim_key: None,
                score: None,
                threshold: None,
                details: json!({"session_id": session, "episodes": episodes}),
            });
        }
        ids.push(id);
    }
    db::supersession::supersede(conn, tenant, subject_id, &retired, &ends).await?;
    db::supersession::insert_records(conn, tenant, subject_id, r.job_id, &records).await?;
    Ok(ids)
}
