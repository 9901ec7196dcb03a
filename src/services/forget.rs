//! Requests to forget, applied inside a compile batch ([`crate::compile::forget`] says what a
//! request is and what it reaches): the memories it names are retired, superseded by the
//! request's own summary from the request's time on; nothing is rewritten or deleted.

use serde_json::json;
use uuid::Uuid;

use crate::compile::forget;
use crate::compile::pipeline::{time_anchor, EpisodeInput, MemoryDraft};
use crate::compile::supersede::Rule;
use crate::compile::text::user_statements;
use crate::db;
use crate::db::supersession::RecordRow;
use crate::model::memory::MemoryKind;
use crate::services::compile::CompileError;

/// Retires what the user's requests to forget name ([`crate::compile::forget`]): every current
/// memory made before the request that mentions the thing or holds a value given for it is
/// superseded by the request's own summary, from the request's time on.
pub async fn apply_requests(
    conn: &mut sqlx::PgConnection,
    tenant: &str,
    subject_id: &str,
    inputs: &[EpisodeInput],
    drafts: &[MemoryDraft],
    ids: &[Uuid],
    job_id: Option<&str>,
) -> Result<(), CompileError> {
    let asked: Vec<(&EpisodeInput, Vec<String>)> = inputs
        .iter()
        .filter_map(|e| {
            let things: Vec<String> =
                user_statements(&e.payload, e.voice).iter().flat_map(|s| forget::requests(s)).collect();
            (!things.is_empty()).then_some((e, things))
        })
        .collect();
    if asked.is_empty() {
        return Ok(());
    }
    let active = db::supersession::active_texts(conn, tenant, subject_id).await?;
    let mut losers = Vec::new();
    let mut valid_to = Vec::new();
    let mut records = Vec::new();
    for (ep, things) in asked {
        let at = time_anchor(ep);
        let by = drafts
            .iter()
            .zip(ids)
            .find(|(d, _)| d.source_episode_id == ep.id && d.kind == MemoryKind::EpisodeSummary)
            .map(|(_, id)| *id);
        for thing in things {
            let mut target = forget::Target::new(&thing);
            for (_, content, _, _) in &active {
                target.learn_values(content);
            }
            for statement in inputs.iter().filter(|e| e.seq < ep.seq).flat_map(|e| user_statements(&e.payload, e.voice))
            {
                target.learn_values(&statement);
            }
            for (id, content, order_at, sources) in &active {
                let earlier = *order_at <= at && !sources.contains(&ep.id);
                if earlier && !losers.contains(id) && target.reaches(content) {
                    losers.push(*id);
                    valid_to.push(at.max(*order_at));
                    records.push(RecordRow {
                        superseded: *id,
                        superseding: by,
                        rule: Rule::Forgotten.as_str().into(),
                        claim_key: None,
                        score: None,
                        threshold: None,
                        details: json!({"request_episode_id": ep.id}),
                    });
                }
            }
        }
    }
    db::supersession::supersede(conn, tenant, subject_id, &losers, &valid_to).await?;
    db::supersession::insert_records(conn, tenant, subject_id, job_id, &records).await?;
    Ok(())
}
