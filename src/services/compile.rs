//! Compiling a subject's pending episodes into memories, one bounded batch per transaction.
//!
//! A batch: take the subject's advisory lock, read up to `batch_size` episodes after the
//! cursor, extract drafts (pure), embed them off the async threads, insert, decide
//! supersessions among the related active memories, record every decision, move the cursor,
//! commit. Any failure rolls the whole batch back, so episodes are never consumed by a
//! failed compile.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pgvector::Vector;
use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

use crate::compile::claims::{parse_claim, Cardinality, Registry};
use crate::compile::link::{link_by_similarity, link_drafts, Current, SIMILARITY_THRESHOLD};
use crate::compile::llm::prompt::CurrentFact;
use crate::compile::llm::Compiler;
use crate::compile::pipeline::{compile_episode, EpisodeInput, MemoryDraft};
use crate::compile::text::{embedded_text, episode_text};
use crate::db;
use crate::db::compile::{MemoryRows, LABEL_SEPARATOR};
use crate::embed::embed_texts;
use crate::embed::Embedder;
use crate::model::id::new_id;
use crate::model::memory::{Memory, MemoryKind};
use crate::model::voice::Trust;
use crate::policy::suggest::suggest_labels;
pub use crate::services::compile_budget::Phases;
use crate::services::compile_budget::{busy_outcome, compile_within, CallLimits};
use crate::services::forget;
use crate::services::webhooks::{WebhookEvent, Webhooks};
use crate::services::{compile_supersede, compile_topic, digests};
use crate::telemetry::{self, MemoryOp};

/// Why a compile failed.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// The compiler or embedder could not do its work (502 `compilation_failed`).
    #[error("compilation failed: {0:#}")]
    Failed(anyhow::Error),
    /// The database failed (500).
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// The result of one batch (or of several: see [`crate::services::compile_budget`]).
#[derive(Debug, Clone, Default)]
pub struct BatchOutcome {
    pub memories: Vec<Memory>,
    pub has_more: bool,
    pub remaining: i64,
    /// Episodes the batch consumed (moved the cursor past).
    pub episodes: usize,
    /// What the LLM compiler spent on the batch (None for the heuristic compiler).
    pub llm: Option<LlmCost>,
    /// Where the batch's time went.
    pub phases: Phases,
}

/// Tokens and calls one batch cost the LLM compiler.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LlmCost {
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub calls: u64,
    pub fallback_episodes: u64,
}

/// What a batch compile works with.
#[derive(Clone, Copy)]
pub struct CompileDeps<'a> {
    pub pool: &'a PgPool,
    pub embedder: &'a Arc<dyn Embedder>,
    pub hooks: &'a Webhooks,
    pub compiler: &'a Compiler,
}

fn rows_from(drafts: &[MemoryDraft], vectors: &[Vec<f32>], ids: &[Uuid], suggest: bool) -> MemoryRows {
    let mut rows = MemoryRows::default();
    for ((d, v), id) in drafts.iter().zip(vectors).zip(ids) {
        rows.ids.push(*id);
        rows.kinds.push(d.kind);
        rows.contents.push(d.content.clone());
        rows.summaries.push(d.summary.clone());
        rows.confidences.push(d.confidence);
        rows.valid_from.push(d.valid_from);
        rows.valid_to.push(d.valid_to);
        rows.source_episode.push(d.source_episode_id);
        rows.metadata.push(sqlx::types::Json(Value::Object(d.metadata.clone())));
        rows.claim_key.push(d.claim.as_ref().map(|c| c.key.clone()));
        rows.claim_bucket.push(d.claim.as_ref().map(|c| c.bucket()));
        rows.claim_single.push(d.claim.as_ref().is_some_and(|c| c.cardinality == Cardinality::Single));
        rows.order_tiebreak.push(d.order_tiebreak.clone());
        rows.embedding.push(Some(Vector::from(v.clone())));
        let labels =
            if suggest { suggest_labels(&d.content, d.claim.as_ref().map(|c| c.key.as_str())) } else { vec![] };
        rows.suggested.push(labels.join(&LABEL_SEPARATOR.to_string()));
    }
    rows
}

/// The tenant's claim registry: built-ins plus its `claim_keys`.
pub fn registry_for(config: &Value) -> Registry {
    let registry = match config.get("claim_keys") {
        Some(keys) => Registry::builtin().with_tenant_keys(keys),
        None => Registry::builtin(),
    };
    registry.with_tenant_frames(config)
}

/// Compiles one batch of the subject's pending episodes with the heuristic compiler; a batch
/// that consumed episodes announces `memories.compiled` in its transaction.
pub async fn compile_batch(
    pool: &PgPool,
    embedder: &Arc<dyn Embedder>,
    hooks: &Webhooks,
    tenant: &str,
    subject_id: &str,
    batch_size: i64,
    job_id: Option<&str>,
) -> Result<BatchOutcome, CompileError> {
    let deps = CompileDeps { pool, embedder, hooks, compiler: &Compiler::Heuristic };
    compile_batch_with(deps, tenant, subject_id, batch_size, job_id).await
}

/// Compiles what fits in one call (`limits`: the server's batch size and compile time budget),
/// committed batch by batch ([`crate::services::compile_budget`]).
pub async fn compile_call(
    deps: CompileDeps<'_>,
    limits: CallLimits,
    tenant: &str,
    subject_id: &str,
    job_id: Option<&str>,
) -> Result<BatchOutcome, CompileError> {
    let _running = crate::services::passages::CompileRunning::start();
    compile_within(deps, tenant, subject_id, limits, job_id).await
}

/// Compiles one batch of the subject's pending episodes with `deps.compiler`.
pub async fn compile_batch_with(
    deps: CompileDeps<'_>,
    tenant: &str,
    subject_id: &str,
    batch_size: i64,
    job_id: Option<&str>,
) -> Result<BatchOutcome, CompileError> {
    compile_batch_waiting(deps, tenant, subject_id, batch_size, job_id, None).await
}

/// Compiles one batch like [`compile_batch_with`], waiting at most `lock_wait` (when set) for
/// another compile of the subject to release it; a batch that could not take the lock in time
/// consumes nothing and answers `has_more` when episodes are pending.
pub async fn compile_batch_waiting(
    deps: CompileDeps<'_>,
    tenant: &str,
    subject_id: &str,
    batch_size: i64,
    job_id: Option<&str>,
    lock_wait: Option<Duration>,
) -> Result<BatchOutcome, CompileError> {
    let span = telemetry::memory_span(MemoryOp::Update, tenant);
    let fut = compile_in(deps, tenant, subject_id, batch_size, job_id, lock_wait);
    telemetry::traced(span, fut, |outcome| outcome.memories.len()).await
}

async fn compile_in(
    deps: CompileDeps<'_>,
    tenant: &str,
    subject_id: &str,
    batch_size: i64,
    job_id: Option<&str>,
    lock_wait: Option<Duration>,
) -> Result<BatchOutcome, CompileError> {
    let CompileDeps { pool, embedder, hooks, compiler } = deps;
    let mut phases = Phases::default();
    let mut clock = Instant::now();
    let mut lap = |slot: &mut Duration| {
        let now = Instant::now();
        *slot += now - clock;
        clock = now;
    };
    let mut tx = db::scope::begin(pool, tenant).await?;
    match lock_wait {
        None => db::compile::lock_subject(&mut tx, tenant, subject_id).await?,
        Some(wait) => {
            if !db::compile::lock_subject_within(&mut tx, tenant, subject_id, wait).await? {
                drop(tx);
                return busy_outcome(pool, tenant, subject_id).await;
            }
        }
    }
    let cursor = db::compile::cursor(&mut tx, tenant, subject_id).await?;
    let pending = db::compile::pending(&mut tx, tenant, subject_id, cursor, batch_size).await?;
    let Some(last_seq) = pending.last().map(|e| e.seq) else {
        tx.commit().await?;
        return Ok(BatchOutcome::default());
    };
    let config = db::tenants::config(&mut tx, tenant).await?;
    let registry = registry_for(&config);
    let trust = Trust::from_config(&config);
    // Label suggestions are on unless the tenant turned them off.
    let suggest = config.get("auto_labeling").and_then(Value::as_bool).unwrap_or(true);
    lap(&mut phases.read);

    let inputs: Vec<EpisodeInput> = pending
        .iter()
        .map(|e| EpisodeInput {
            id: e.id,
            seq: e.seq,
            source: e.source.clone(),
            payload: e.payload.clone(),
            occurred_at: e.occurred_at,
            voice: trust.voice(&e.source),
        })
        .collect();
    let mut llm_cost = None;
    let mut drafts = match compiler {
        Compiler::Heuristic => inputs.iter().flat_map(|input| compile_episode(input, &registry)).collect(),
        Compiler::Llm(llm) => {
            let rows = db::supersession::current_facts(&mut tx, tenant, subject_id, OFFERED_FACTS).await?;
            let facts = offered_facts(rows, &registry);
            let out = llm.compile(&inputs, &facts, &registry).await;
            llm_cost = Some(LlmCost {
                tokens_in: out.tokens_in,
                tokens_out: out.tokens_out,
                calls: out.calls,
                fallback_episodes: out.fallback_episodes,
            });
            out.drafts
        }
    };
    // One vector per episode, of its opening (`embedded_text`); a long episode's summary
    // restates that opening, so it shares the vector rather than costing a second one.
    // A long episode's later parts are passages (a bounded number) that the passage worker
    // gives vectors of their own, so a question about the middle of a long answer finds it.
    let mut episode_texts = Vec::new();
    let mut long = HashMap::new();
    let mut passage_ranges = Vec::new();
    for e in &pending {
        let text = episode_text(&e.payload);
        if !text.trim().is_empty() {
            let embedded = embedded_text(&text);
            if embedded.len() < text.len() {
                long.insert(e.id, embedded.to_string());
                passage_ranges.extend(crate::services::passages::ranges(e.id, &text));
            }
            episode_texts.push((e.id, embedded.to_string()));
        }
    }

    lap(&mut phases.extract);
    // Updates are tied to the facts they replace before anything is written: by key, value and
    // attribute words first, then (semantic embedders) by similarity to the current facts.
    let model = embedder.model_id().to_string();
    let mut unlinked = Vec::new();
    let mut current_rows = Vec::new();
    if drafts.iter().any(|d| d.link.is_some()) {
        current_rows = db::supersession::current_claims(&mut tx, tenant, subject_id, &model)
            .await?
            .into_iter()
            .filter_map(|(env, vector)| parse_claim(&env, &registry).map(|c| (Current::of(&c), vector)))
            .collect();
        let mut current: Vec<Current> = current_rows.iter().map(|(c, _)| c.clone()).collect();
        unlinked = link_drafts(&mut drafts, &mut current, &registry);
    }

    lap(&mut phases.link);
    let mut texts: Vec<String> = drafts
        .iter()
        .map(|d| match (d.kind, long.get(&d.source_episode_id)) {
            (MemoryKind::EpisodeSummary, Some(opening)) => opening.clone(),
            _ => d.content.clone(),
        })
        .collect();
    texts.extend(episode_texts.iter().map(|(_, t)| t.clone()));
    let vectors = embed_texts(embedder, texts).await.map_err(CompileError::Failed)?;
    lap(&mut phases.embed);
    let (memory_vectors, episode_vectors) = vectors.split_at(drafts.len());
    if !unlinked.is_empty() && embedder.is_semantic() {
        let with_vectors: Vec<(Current, Vec<f32>)> =
            current_rows.into_iter().filter_map(|(c, v)| v.map(|v| (c, v.to_vec()))).collect();
        link_by_similarity(&mut drafts, &unlinked, memory_vectors, &with_vectors, &registry, SIMILARITY_THRESHOLD);
    }
    lap(&mut phases.link);

    let ids: Vec<Uuid> = drafts.iter().map(|_| new_id()).collect();
    db::compile::insert_memories(
        &mut tx,
        tenant,
        subject_id,
        &rows_from(&drafts, memory_vectors, &ids, suggest),
        &model,
    )
    .await?;
    let ep_ids: Vec<Uuid> = episode_texts.iter().map(|(id, _)| *id).collect();
    let ep_vecs: Vec<Vector> = episode_vectors.iter().map(|v| Vector::from(v.clone())).collect();
    db::compile::insert_episode_embeddings(&mut tx, tenant, subject_id, &ep_ids, &ep_vecs, &model).await?;
    db::passages::insert(&mut tx, tenant, subject_id, &passage_ranges).await?;
    lap(&mut phases.insert);

    let semantic = embedder.is_semantic().then_some(model.as_str());
    let message_vectors: HashMap<Uuid, Vec<f32>> = match semantic {
        Some(_) => ep_ids.iter().copied().zip(episode_vectors.iter().cloned()).collect(),
        None => HashMap::new(),
    };
    let messages = compile_topic::new_messages(&inputs, &drafts, &ids, &message_vectors);
    let words = compile_topic::words_for(&config);
    let scope = compile_supersede::Scope { tenant, subject_id, job_id, semantic, words };
    compile_supersede::apply(&mut tx, &registry, &scope, &ids, &messages).await?;
    lap(&mut phases.supersede);
    forget::apply_requests(&mut tx, tenant, subject_id, &inputs, &drafts, &ids, job_id).await?;
    db::terms::count_batch(&mut tx, tenant, subject_id, &ids, cursor, last_seq).await?;
    // Session digests come last: they quote the user's words, never take part in the batch's
    // supersession rules, and are not counted into the subject's term statistics (a digest is
    // rewritten as its session grows; only tasks about many moments read it).
    let sessions: BTreeSet<String> = pending.iter().filter_map(|e| e.session_id.clone()).collect();
    let refresh = digests::Refresh { tenant, subject_id, job_id, trust: &trust, embedder };
    let digest_ids = digests::refresh(&mut tx, &refresh, &sessions, last_seq).await?;
    lap(&mut phases.digest);

    db::compile::advance_cursor(&mut tx, tenant, subject_id, last_seq).await?;
    let remaining = db::compile::remaining(&mut tx, tenant, subject_id, last_seq).await?;
    let created: Vec<Uuid> = ids.iter().chain(&digest_ids).copied().collect();
    let memories = db::supersession::memories_by_ids(&mut tx, tenant, subject_id, &created).await?;
    let data = json!({"subject_id": subject_id, "memories_created": memories.len()});
    hooks.enqueue(&mut tx, tenant, WebhookEvent::MemoriesCompiled, data).await?;
    tx.commit().await?;
    lap(&mut phases.finish);
    Ok(BatchOutcome { memories, has_more: remaining > 0, remaining, episodes: pending.len(), llm: llm_cost, phases })
}

/// Most current facts offered to the model with a batch.
const OFFERED_FACTS: i64 = 40;

/// The subject's current claimed facts, newest first, under short ids the model can name.
fn offered_facts(rows: Vec<(Uuid, String, Value)>, registry: &Registry) -> Vec<CurrentFact> {
    rows.into_iter()
        .filter_map(|(id, content, env)| parse_claim(&env, registry).map(|claim| (id, content, claim)))
        .enumerate()
        .map(|(i, (id, content, claim))| CurrentFact {
            id: format!("F{}", i + 1),
            memory_id: id,
            key: claim.key,
            value: claim.value,
            content,
        })
        .collect()
}
