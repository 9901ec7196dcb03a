//! Supersession during a compile, after the batch's memories are inserted: the claim and
//! lexical rules, then the same-topic judge ([`crate::services::compile_topic`]), their
//! records, and the doubts the judge leaves on the newer memories (`metadata.revises`).

use std::collections::{HashMap, HashSet};

use chrono::Utc;
use uuid::Uuid;

use crate::compile::claims::{parse_claim, Registry};
use crate::compile::scope::related;
use crate::compile::supersede::{resolve, MemoryView, Rule};
use crate::compile::topic::with_words;
use crate::db;
use crate::db::supersession::RecordRow;
use crate::services::compile::CompileError;
use crate::services::compile_topic;

/// Whose memories a compile supersedes, for which job, the embedder's model when its vectors
/// carry meaning, and the judge's words.
pub struct Scope<'a> {
    pub tenant: &'a str,
    pub subject_id: &'a str,
    pub job_id: Option<&'a str>,
    pub semantic: Option<&'a str>,
    /// The same-topic judge's word lists for the tenant ([`compile_topic::words_for`]).
    pub words: std::sync::Arc<crate::compile::topic::Words>,
}

/// Decides and writes the supersessions of a batch whose memories `new_ids` were just inserted:
/// the claim and lexical rules over the related active memories, then the same-topic judge over
/// what they left standing; records every decision and the judge's doubts.
pub async fn apply(
    conn: &mut sqlx::PgConnection,
    registry: &Registry,
    scope: &Scope<'_>,
    new_ids: &[Uuid],
    messages: &[compile_topic::NewMessage],
) -> Result<(), CompileError> {
    let Scope { tenant, subject_id, job_id, semantic, ref words } = *scope;
    let active = db::supersession::active_rows(conn, tenant, subject_id).await?;
    let views: Vec<MemoryView> = active
        .iter()
        .cloned()
        .map(|r| MemoryView {
            id: r.id,
            kind: r.kind,
            content: r.content,
            valid_from: Some(r.valid_from),
            valid_to: r.valid_to,
            order: (r.order_at, r.order_tiebreak),
            claim: r.claim.as_ref().and_then(|c| parse_claim(c, registry)),
            replaces: r.replaces,
            evidence: r.evidence,
        })
        .collect();
    let new: HashSet<Uuid> = new_ids.iter().copied().collect();
    let scope = related(views, &new);
    let decisions = resolve(&scope, Utc::now());
    let mut losers = Vec::new();
    let mut valid_to = Vec::new();
    let mut records = Vec::new();
    for d in &decisions {
        if d.rule != Rule::WideningSkipped {
            if let Some(t) = d.new_valid_to {
                losers.push(d.superseded);
                valid_to.push(t);
            }
        }
        records.push(RecordRow {
            superseded: d.superseded,
            superseding: Some(d.superseding),
            rule: d.rule.as_str().to_string(),
            claim_key: d.claim_key.clone(),
            score: d.score,
            threshold: d.threshold,
            details: d.details.clone(),
        });
    }
    // Then the same-topic judge, over what the claim and lexical rules left standing.
    let taken = compile_topic::taken(&decisions, &active);
    // Earlier memories' vectors and sources, read only when a message may change one.
    let mut sources: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
    let mut vectors: HashMap<Uuid, Vec<f32>> = HashMap::new();
    if with_words(words, || compile_topic::may_change_any(messages)) {
        let ids = with_words(words, || compile_topic::doubt_candidates(&active, registry));
        let model = semantic.unwrap_or_default();
        for (id, eps, v) in db::supersession::sources_and_vectors(conn, tenant, subject_id, &ids, model).await? {
            sources.insert(id, eps);
            if let (Some(v), Some(_)) = (v, semantic) {
                vectors.insert(id, v.to_vec());
            }
        }
    }
    let topic = with_words(words, || compile_topic::decide(messages, &active, registry, &taken, &vectors));
    // A restatement's doubts need their memories' sources too (no vectors were read for it).
    let unread: Vec<Uuid> = topic.doubts.iter().map(|(_, o)| *o).filter(|o| !sources.contains_key(o)).collect();
    if !unread.is_empty() {
        for (id, eps, _) in db::supersession::sources_and_vectors(conn, tenant, subject_id, &unread, "").await? {
            sources.insert(id, eps);
        }
    }
    for (id, to) in topic.losers {
        losers.push(id);
        valid_to.push(to);
    }
    records.extend(topic.records);
    db::supersession::supersede(conn, tenant, subject_id, &losers, &valid_to).await?;
    db::supersession::insert_records(conn, tenant, subject_id, job_id, &records).await?;
    let (ids, revises) =
        compile_topic::spread_to_message(&active, &new, compile_topic::revises(&topic.doubts, &sources));
    db::supersession::mark_revises(conn, tenant, subject_id, &ids, &revises).await?;
    Ok(())
}
