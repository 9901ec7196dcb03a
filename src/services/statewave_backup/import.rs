//! Importing one backup document: checks first (nothing is written on any refusal), vectors
//! next (outside the transaction), then every row in one transaction.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Map, Value};
use sqlx::types::Json;
use sqlx::PgPool;
use uuid::Uuid;

use super::document::{self, DocError, DocMemory, Document};
use crate::compile::claims::{claim_from_parts, parse_claim, Cardinality, Claim, Registry};
use crate::compile::heuristic::extract_facts_with;
use crate::compile::pipeline::source_label;
use crate::compile::text::{embedded_text, episode_text};
use crate::db;
use crate::db::backup::{EpisodeRows, MemoryRows};
use crate::embed::embed_texts;
use crate::embed::Embedder;
use crate::model::id::new_id;
use crate::model::memory::MemoryKind;
use crate::model::voice::{Trust, Voice};
use crate::policy::suggest::suggest_labels;
use crate::progress::Progress;
use crate::services::compile::registry_for;

/// Texts embedded per call (progress moves once per batch).
const EMBED_BATCH: usize = 256;

/// What to import and where.
#[derive(Debug, Clone, Copy)]
pub struct ImportRequest<'a> {
    pub document: &'a Value,
    pub target_subject_id: Option<&'a str>,
    /// Replaces the document's tenant when given.
    pub target_tenant_id: Option<&'a str>,
    pub preserve_ids: bool,
    /// The tenant used when neither the request nor the document names one.
    pub caller_tenant: &'a str,
    /// Whether the caller may import into a tenant other than `caller_tenant` (an operator).
    pub any_tenant: bool,
}

/// What an import wrote.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Imported {
    pub subject_id: String,
    pub tenant_id: String,
    pub episodes_imported: usize,
    pub memories_imported: usize,
    pub ids_preserved: bool,
}

/// Why an import wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The document was refused (400).
    #[error(transparent)]
    Document(#[from] DocError),
    /// Preserved ids already used anywhere in the database (any tenant), or repeated inside the
    /// document (400).
    #[error("ID conflict: {episodes} episode(s) and {memories} memory(ies) already exist. Use preserve_ids=false to import with new ids")]
    IdConflict { episodes: i64, memories: i64 },
    /// The subject has episodes compile has not reached: the cursor cannot skip the imported
    /// ones without skipping those too (409).
    #[error("subject '{subject}' has {pending} episode(s) not yet compiled; compile it before importing into it")]
    PendingCompile { subject: String, pending: i64 },
    /// The document or the request names a tenant the caller may not write into (403).
    #[error("the document would be imported into tenant '{0}': only an operator may import into another tenant")]
    OtherTenant(String),
    /// The embedder failed (502).
    #[error("embedding failed: {0:#}")]
    Embed(anyhow::Error),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// Imports a document into one subject in one transaction.
pub async fn import(
    pool: &PgPool,
    embedder: &Arc<dyn Embedder>,
    req: ImportRequest<'_>,
    progress: &dyn Progress,
) -> Result<Imported, ImportError> {
    let mut doc = document::read(req.document, req.target_subject_id, req.target_tenant_id, req.preserve_ids)?;
    let tenant = doc.tenant_id.clone().unwrap_or_else(|| req.caller_tenant.to_string());
    if tenant != req.caller_tenant && !req.any_tenant {
        return Err(ImportError::OtherTenant(tenant));
    }
    let subject = doc.subject_id.clone();
    let ids = Ids::assign(&doc, req.preserve_ids)?;
    if req.preserve_ids {
        // Checked before the (slow) embedding, and again under the write transaction.
        let mut tx = db::scope::begin(pool, &tenant).await?;
        check_free(&mut tx, &ids).await?;
        tx.commit().await?;
    }

    let mut texts: Vec<String> = doc.memories.iter().map(|m| m.content.clone()).collect();
    let episode_texts: Vec<(usize, String)> = doc
        .episodes
        .iter()
        .enumerate()
        .map(|(i, e)| (i, episode_text(&Value::Object(e.payload.clone()))))
        .filter(|(_, t)| !t.trim().is_empty())
        .collect();
    // Each episode's vector is of its opening, as compile makes it; its passages get theirs
    // from the passage worker.
    texts.extend(episode_texts.iter().map(|(_, t)| embedded_text(t).to_string()));
    progress.start("embedding", texts.len() as u64);
    let mut vectors = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(EMBED_BATCH) {
        vectors.extend(embed_texts(embedder, chunk.to_vec()).await.map_err(ImportError::Embed)?);
        progress.advance(chunk.len() as u64);
    }
    progress.finish();
    let (memory_vectors, episode_vectors) = vectors.split_at(doc.memories.len());

    let mut tx = db::scope::begin(pool, &tenant).await?;
    db::tenants::ensure(&mut tx, &tenant).await?;
    db::compile::lock_subject(&mut tx, &tenant, &subject).await?;
    if req.preserve_ids {
        db::backup::lock_preserved_ids(&mut tx).await?;
        check_free(&mut tx, &ids).await?;
    }
    drop_foreign_sources(&mut tx, &tenant, &mut doc, &ids).await?;
    let n = doc.episodes.len() as i64;
    let cursor = db::compile::cursor(&mut tx, &tenant, &subject).await?;
    let last_seq = if n > 0 { db::backup::reserve_seqs(&mut tx, &tenant, &subject, n).await? } else { cursor };
    let first_seq = last_seq - n + 1;
    if n > 0 && cursor < first_seq - 1 {
        return Err(ImportError::PendingCompile { subject, pending: first_seq - 1 - cursor });
    }
    let config = db::tenants::config(&mut tx, &tenant).await?;
    let registry = registry_for(&config);
    let suggest = config.get("auto_labeling").and_then(Value::as_bool).unwrap_or(true);

    progress.start("writing", (doc.episodes.len() + doc.memories.len()) as u64);
    let seq_of: HashMap<Uuid, i64> =
        ids.episodes.iter().enumerate().map(|(i, id)| (*id, first_seq + i as i64)).collect();
    db::backup::insert_episodes(&mut tx, &tenant, &subject, &episode_rows(&doc, &ids, first_seq)).await?;
    progress.advance(doc.episodes.len() as u64);
    let trust = Trust::from_config(&config);
    let rows = memory_rows(&doc, &ids, &seq_of, memory_vectors, &registry, &trust, suggest);
    let model = embedder.model_id().to_string();
    db::backup::insert_memories(&mut tx, &tenant, &subject, &rows, &model).await?;
    let ep_ids: Vec<Uuid> = episode_texts.iter().map(|(i, _)| ids.episodes[*i]).collect();
    let ep_vecs: Vec<pgvector::Vector> = episode_vectors.iter().map(|v| pgvector::Vector::from(v.clone())).collect();
    db::compile::insert_episode_embeddings(&mut tx, &tenant, &subject, &ep_ids, &ep_vecs, &model).await?;
    let ranges: Vec<db::passages::PassageRange> =
        episode_texts.iter().flat_map(|(i, t)| crate::services::passages::ranges(ids.episodes[*i], t)).collect();
    db::passages::insert(&mut tx, &tenant, &subject, &ranges).await?;
    db::terms::count_batch(&mut tx, &tenant, &subject, &ids.memories, first_seq - 1, last_seq).await?;
    // Statewave compiled every episode with a `last_compiled_at`; compile resumes at the first
    // one it had not (its memories are not in the document).
    let compiled_to =
        doc.episodes.iter().position(|e| e.last_compiled_at.is_none()).map_or(last_seq, |i| first_seq - 1 + i as i64);
    db::compile::advance_cursor(&mut tx, &tenant, &subject, compiled_to).await?;
    tx.commit().await?;
    progress.advance(doc.memories.len() as u64);
    progress.finish();
    Ok(Imported {
        subject_id: subject,
        tenant_id: tenant,
        episodes_imported: doc.episodes.len(),
        memories_imported: doc.memories.len(),
        ids_preserved: req.preserve_ids,
    })
}

/// The ids rows are written under, in document order.
struct Ids {
    episodes: Vec<Uuid>,
    memories: Vec<Uuid>,
    /// Document episode id -> written id (used to rewrite `source_episode_ids`).
    remap: HashMap<Uuid, Uuid>,
}

impl Ids {
    fn assign(doc: &Document, preserve: bool) -> Result<Ids, ImportError> {
        let pick = |id: Option<Uuid>| if preserve { id.unwrap_or_else(new_id) } else { new_id() };
        let episodes: Vec<Uuid> = doc.episodes.iter().map(|e| pick(e.id)).collect();
        let memories: Vec<Uuid> = doc.memories.iter().map(|m| pick(m.id)).collect();
        let repeats = |ids: &[Uuid]| ids.len() as i64 - ids.iter().collect::<BTreeSet<_>>().len() as i64;
        let (e, m) = (repeats(&episodes), repeats(&memories));
        if e > 0 || m > 0 {
            return Err(ImportError::IdConflict { episodes: e, memories: m });
        }
        let remap = if preserve {
            HashMap::new()
        } else {
            doc.episodes.iter().zip(&episodes).filter_map(|(e, new)| e.id.map(|old| (old, *new))).collect()
        };
        Ok(Ids { episodes, memories, remap })
    }
}

/// Drops the `source_episode_ids` that name an episode of another subject or tenant. The format
/// allows dangling references (an id no episode has: kept, as Statewave keeps them), and ones to
/// the document's own episodes or to episodes the subject already has are kept; a memory must
/// never cite someone else's episode.
async fn drop_foreign_sources(
    conn: &mut sqlx::PgConnection,
    tenant: &str,
    doc: &mut Document,
    ids: &Ids,
) -> Result<(), ImportError> {
    let written: HashSet<Uuid> = ids.episodes.iter().copied().collect();
    let outside = |s: &Uuid| !ids.remap.contains_key(s) && !written.contains(s);
    let cited: Vec<Uuid> = doc
        .memories
        .iter()
        .flat_map(|m| m.source_episode_ids.iter().copied().filter(outside))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if cited.is_empty() {
        return Ok(());
    }
    let own: HashSet<Uuid> =
        db::backup::subject_episode_ids(conn, tenant, &doc.subject_id, &cited).await?.into_iter().collect();
    let foreign: HashSet<Uuid> =
        db::backup::episode_ids_in_use(conn, &cited).await?.into_iter().filter(|id| !own.contains(id)).collect();
    if foreign.is_empty() {
        return Ok(());
    }
    let mut dropped = 0usize;
    for m in &mut doc.memories {
        let before = m.source_episode_ids.len();
        m.source_episode_ids.retain(|s| !foreign.contains(s));
        dropped += before - m.source_episode_ids.len();
    }
    tracing::info!(dropped, "import: dropped source references to other subjects' or tenants' episodes");
    Ok(())
}

/// Preserved ids must be free in the whole database, as in Statewave (where they are global
/// keys), not only in the target tenant.
async fn check_free(conn: &mut sqlx::PgConnection, ids: &Ids) -> Result<(), ImportError> {
    let (episodes, memories) = db::backup::ids_in_use(conn, &ids.episodes, &ids.memories).await?;
    if episodes > 0 || memories > 0 {
        return Err(ImportError::IdConflict { episodes, memories });
    }
    Ok(())
}

fn episode_rows(doc: &Document, ids: &Ids, first_seq: i64) -> EpisodeRows {
    let mut rows = EpisodeRows::default();
    for (i, (e, id)) in doc.episodes.iter().zip(&ids.episodes).enumerate() {
        rows.ids.push(*id);
        rows.seqs.push(first_seq + i as i64);
        rows.sources.push(e.source.clone());
        rows.kinds.push(e.kind.clone());
        rows.payloads.push(Json(Value::Object(e.payload.clone())));
        rows.metadata.push(Json(Value::Object(e.metadata.clone())));
        rows.provenance.push(Json(Value::Object(e.provenance.clone())));
        rows.times.push(e.created_at);
    }
    rows
}

/// The claim a memory carries in mnemo's registry: its own `metadata.claim` envelope when that
/// parses, else (for a profile fact) what the heuristic compiler reads in its content.
pub fn derive_claim(m: &DocMemory, registry: &Registry) -> Option<Claim> {
    if let Some(claim) = m.metadata.get("claim").and_then(|env| parse_claim(env, registry)) {
        return Some(claim);
    }
    if m.kind != MemoryKind::ProfileFact {
        return None;
    }
    extract_facts_with(&m.content, registry.frames())
        .into_iter()
        .filter_map(|f| f.claim)
        .find_map(|c| claim_from_parts(&c.key, &c.value, registry, "import"))
}

fn memory_rows(
    doc: &Document,
    ids: &Ids,
    seq_of: &HashMap<Uuid, i64>,
    vectors: &[Vec<f32>],
    registry: &Registry,
    trust: &Trust,
    suggest: bool,
) -> MemoryRows {
    let mut rows = MemoryRows::default();
    let mut per_seq: BTreeMap<i64, usize> = BTreeMap::new();
    // The document's episodes by id: a memory made only from evidence is evidence here too
    // (never a claim, never the user's; [`crate::model::voice`]), whoever compiled it.
    let source_of: HashMap<Uuid, &str> =
        doc.episodes.iter().filter_map(|e| e.id.map(|id| (id, e.source.as_str()))).collect();
    for ((m, id), v) in doc.memories.iter().zip(&ids.memories).zip(vectors) {
        let sources: Vec<Uuid> = m.source_episode_ids.iter().map(|s| *ids.remap.get(s).unwrap_or(s)).collect();
        // Order among memories as compile gives it: the source episode's seq, then position.
        let seq = sources.iter().find_map(|s| seq_of.get(s)).copied().unwrap_or(0);
        let index = per_seq.entry(seq).or_insert(0);
        rows.order_tiebreak.push(format!("{seq:020}:{index:04}"));
        *index += 1;
        let evidence_from = evidence_source(&m.source_episode_ids, &source_of, trust);
        let claim = if evidence_from.is_some() { None } else { derive_claim(m, registry) };
        let mut metadata: Map<String, Value> = m.metadata.clone();
        if let Some(source) = evidence_from {
            metadata.insert("voice".into(), Value::String(Voice::Evidence.as_str().into()));
            metadata.insert("evidence_source".into(), Value::String(source_label(source)));
        }
        match &claim {
            Some(c) => metadata.insert("claim".into(), c.to_envelope()),
            None => metadata.remove("claim"),
        };
        rows.ids.push(*id);
        rows.kinds.push(m.kind);
        rows.contents.push(m.content.clone());
        rows.summaries.push(m.summary.clone());
        rows.confidences.push(m.confidence);
        rows.valid_from.push(m.valid_from);
        rows.valid_to.push(m.valid_to);
        let active = m.status == "active";
        rows.asserted_valid_to.push(if active { m.valid_to } else { None });
        rows.superseded_at.push((!active).then_some(m.updated_at));
        rows.sources.push(sources.iter().map(Uuid::to_string).collect::<Vec<_>>().join(","));
        rows.metadata.push(Json(Value::Object(metadata)));
        rows.statuses.push(m.status.to_string());
        rows.claim_key.push(claim.as_ref().map(|c| c.key.clone()));
        rows.claim_bucket.push(claim.as_ref().map(Claim::bucket));
        rows.claim_single.push(claim.as_ref().is_some_and(|c| c.cardinality == Cardinality::Single));
        rows.embedding.push(Some(pgvector::Vector::from(v.clone())));
        let labels = if suggest { suggest_labels(&m.content, claim.as_ref().map(|c| c.key.as_str())) } else { vec![] };
        rows.suggested.push(labels.join(&db::compile::LABEL_SEPARATOR.to_string()));
        rows.created_at.push(m.created_at);
        rows.updated_at.push(m.updated_at);
    }
    rows
}

/// The source of a memory made only from evidence episodes of the document (None when any of
/// its episodes is the user's or the agent's, or it names none the document holds).
fn evidence_source<'a>(episodes: &[Uuid], source_of: &HashMap<Uuid, &'a str>, trust: &Trust) -> Option<&'a str> {
    let sources: Vec<&str> = episodes.iter().filter_map(|id| source_of.get(id).copied()).collect();
    let all_evidence = !sources.is_empty() && sources.iter().all(|s| trust.voice(s) == Voice::Evidence);
    all_evidence.then(|| sources[0])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn memory(kind: MemoryKind, content: &str, metadata: Value) -> DocMemory {
        DocMemory {
            key: String::new(),
            id: None,
            kind,
            content: content.into(),
            summary: content.into(),
            confidence: 0.6,
            valid_from: Utc::now(),
            valid_to: None,
            source_episode_ids: vec![],
            metadata: metadata.as_object().cloned().unwrap_or_default(),
            status: "active",
            created_at: Utc::now(),
            updated_at: Utc::now(),
        }
    }

    #[test]
    fn claims_come_from_the_envelope_or_the_content() {
        let r = Registry::builtin();
        let fact = memory(MemoryKind::ProfileFact, "I work at Globex as a data engineer", serde_json::json!({}));
        let claim = derive_claim(&fact, &r).unwrap();
        assert_eq!((claim.key.as_str(), claim.value.as_str()), ("employment.current_employer", "globex"));
        let name = memory(MemoryKind::ProfileFact, "My name is Dana Reyes", serde_json::json!({}));
        assert_eq!(derive_claim(&name, &r).unwrap().key, "identity.name");
        let env = serde_json::json!({"claim": {"schema_version": 1, "key": "home", "value": "Oslo"}});
        let procedure = memory(MemoryKind::Procedure, "anything", env);
        assert_eq!(derive_claim(&procedure, &r).unwrap().key, "location.current_home");
        let summary = memory(MemoryKind::EpisodeSummary, "user: I work at Globex.", serde_json::json!({}));
        assert!(derive_claim(&summary, &r).is_none());
        let rain = memory(MemoryKind::ProfileFact, "It rained all day", serde_json::json!({}));
        assert!(derive_claim(&rain, &r).is_none());
    }
}
