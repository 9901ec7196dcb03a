//! Assembling a context bundle, in stages, each its own module:
//!
//! - [`candidates`] (stage 1): every lane's candidates, the turns around them and the facts
//!   suppression needs, in one statement that names the tenant itself;
//! - [`suppress`] (stages 2-4): what must not be shown (contradicted or unbacked turns, the
//!   policy), and no double spending between a turn and its own summary;
//! - [`rank`] (stage 5): one deterministic score per item (`mnemo-rank-7`, formula in README.md
//!   and `context::score`; constants in [`Tuning::DEFAULT`]) and the total order;
//! - [`output`] (stages 6-7): packing under the exact token budget and the bundle of what was
//!   included.

pub mod candidates;
pub mod erased;
pub mod lanes;
pub mod lexical;
pub mod options;
pub mod output;
pub mod rank;
pub mod signals;
pub mod subjects;
pub mod suppress;

use std::collections::HashSet;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use crate::bundle::terms::tsquery_for;
use crate::db::context::Probe;
use crate::embed::Embedder;
use crate::model::episode::Episode;
use crate::model::memory::Memory;
pub use crate::services::policy::PolicyContext;
pub use crate::services::task_vectors::TaskVectorCache;
pub use options::{RetrievalOptions, Tuning};
pub use output::provenance;
pub use subjects::SubjectCache;

/// A validated context request.
#[derive(Debug, Clone)]
pub struct ContextRequest {
    pub subject_id: String,
    pub task: String,
    pub max_tokens: usize,
    pub session_id: Option<String>,
    pub as_of: Option<DateTime<Utc>>,
    /// Which retrieval techniques run (all by default; the benchmark switches them off one by one).
    pub options: RetrievalOptions,
    /// The tenant's policy bundle, mode and the caller it is evaluated for.
    pub policy: PolicyContext,
}

/// One session among the included episodes.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SessionInfo {
    pub session_id: String,
    pub episode_count: usize,
    #[serde(serialize_with = "crate::model::time::serialize")]
    pub first_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::model::time::serialize")]
    pub last_at: DateTime<Utc>,
}

/// An included item with its rank and score (for receipts).
#[derive(Debug, Clone)]
pub struct Selected {
    pub id: Uuid,
    pub is_memory: bool,
    pub score: f64,
}

/// The assembled bundle.
#[derive(Debug, Clone)]
pub struct Bundle {
    pub facts: Vec<Memory>,
    pub procedures: Vec<Memory>,
    pub episodes: Vec<Episode>,
    pub assembled_context: String,
    pub token_estimate: usize,
    pub sessions: Vec<SessionInfo>,
    pub as_of: DateTime<Utc>,
    pub selected: Vec<Selected>,
    /// The receipt's `policy` block: bundle hash, filters applied and skipped, mode.
    pub policy: Value,
    /// The current session's snapshot whose summary the bundle shows.
    pub snapshot_id: Option<Uuid>,
    /// Every ranked candidate in rank order, packed or not (the console's "explain" view).
    pub considered: Vec<Considered>,
}

/// A ranked candidate: its score, the line it would take, and whether it fit the budget.
#[derive(Debug, Clone)]
pub struct Considered {
    pub id: Uuid,
    pub is_memory: bool,
    pub score: f64,
    pub line: String,
    pub included: bool,
}

/// Assembles the bundle for a request (replays: the policy comes with the request; a live call
/// goes through [`crate::services::context_call`]).
pub async fn assemble(
    pool: &PgPool,
    embedder: &Arc<dyn Embedder>,
    cache: &TaskVectorCache,
    subjects: &SubjectCache,
    tenant: &str,
    req: &ContextRequest,
) -> anyhow::Result<Bundle> {
    let probe = probe(embedder, cache, tenant, req).await?;
    let (found, _) = candidates::retrieve(pool, &probe, &req.options, subjects).await?;
    Ok(bundle(found, &probe, req, &req.policy))
}

/// What retrieval asks for a request. The task vector is embedded here, before a connection is
/// taken, so no connection waits on the embedder.
pub async fn probe<'a>(
    embedder: &Arc<dyn Embedder>,
    cache: &TaskVectorCache,
    tenant: &'a str,
    req: &'a ContextRequest,
) -> anyhow::Result<Probe<'a>> {
    let as_of = req.as_of.unwrap_or_else(crate::model::time::now_micros);
    let opts = req.options;
    let vector = if opts.semantic && embedder.is_semantic() {
        let text = if opts.unnamed_task_vector {
            crate::bundle::terms::embedding_text(&req.task)
        } else {
            std::borrow::Cow::Borrowed(req.task.as_str())
        };
        Some((cache.get(embedder, &text).await?, embedder.model_id().to_string()))
    } else {
        None
    };
    Ok(Probe {
        tenant,
        subject_id: &req.subject_id,
        as_of,
        tsquery: if opts.lexical { tsquery_for(&req.task) } else { None },
        vector,
        session_id: req.session_id.as_deref(),
        days: if opts.dates { candidates::day_starts(&req.task, as_of) } else { Vec::new() },
        approx_from: opts.approx_vectors_from,
        ranked_lane: crate::db::context::ranked_lane(req.max_tokens, opts.tuning.lane_tokens),
        small_subject: crate::db::context::SMALL_SUBJECT,
        digests: crate::bundle::terms::spans_history(&req.task),
    })
}

/// Stages 2-7 over what retrieval found for `probe`: suppression under `policy`, ranking,
/// packing.
pub fn bundle(
    mut found: candidates::Candidates,
    probe: &Probe<'_>,
    req: &ContextRequest,
    policy: &PolicyContext,
) -> Bundle {
    let opts = req.options;
    let as_of = probe.as_of;
    let snapshot = found.snapshot.take();
    let trust = &policy.trust;
    let (shown, policy) = suppress::suppress(found, policy, opts.compact);
    let days: HashSet<chrono::NaiveDate> = probe.days.iter().map(|d| d.date_naive()).collect();
    let task = rank::Task { text: &req.task, as_of, session_id: req.session_id.as_deref(), days: &days };
    let ranked = rank::score_all(shown, &task, &opts);
    let t = &opts.tuning;
    let (whole, tail_from, tail_chars) = if crate::bundle::terms::spans_history(&req.task) {
        (t.span_whole, t.span_tail_from, t.span_tail_chars)
    } else {
        (t.whole_turns, t.tail_from, t.tail_chars)
    };
    let pack = output::PackRequest {
        task: &req.task,
        max_tokens: req.max_tokens,
        session_id: req.session_id.as_deref(),
        as_of,
        compact: opts.compact,
        snapshot: snapshot.as_ref(),
        whole_turns: if opts.excerpts { whole } else { usize::MAX },
        whole_chars: output::whole_chars(req.max_tokens, if opts.excerpts { opts.tuning.whole_share } else { 0 }),
        turn_chars: opts.tuning.turn_chars,
        tail_from,
        tail_chars,
        trust,
        digest_share: t.digest_share,
    };
    output::bundle(ranked, &pack, policy)
}
