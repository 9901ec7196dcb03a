//! `POST /v1/handoff`: the brief for whoever takes over a session, with a receipt of what it showed.
//!
//! Facts pass through the tenant's policy like context facts do (in enforce mode denied facts
//! go, redacted ones show the marker, and the episodes they came from are left out).

use std::collections::HashSet;

use chrono::Utc;
use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use crate::db;
use crate::model::memory::MemoryKind;
use crate::model::time::{isoformat, now_micros};
use crate::policy::eval::{apply, evaluate_memories, receipt_policy, PolicyMode, PolicyOutcome, REDACTION_MARKER};
use crate::services::context_call::{identity_missing, CallError, Deps};
use crate::services::policy;
use crate::services::receipts::{body_frame, emit, should_emit, Frame, ReceiptMeta};
use crate::services::sessions::load;
use crate::sessions::handoff::{build, Brief, FactLine, Inputs, ResolutionItem};
use crate::sessions::health::{self, Factor, Health, HealthState};
use crate::sessions::sla::{self, Thresholds};

/// Facts read for a brief (it shows at most 8; the rest leave room for policy drops).
const FACT_POOL: i64 = 50;

/// A validated handoff request.
#[derive(Debug, Clone)]
pub struct HandoffRequest {
    pub subject_id: String,
    pub session_id: String,
    pub reason: String,
    pub max_tokens: usize,
    pub emit_receipt: Option<bool>,
    pub meta: ReceiptMeta,
}

/// The brief with the figures it was built from and its receipt.
#[derive(Debug, Clone)]
pub struct Handoff {
    pub brief: Brief,
    pub health: Health,
    pub generated_at: chrono::DateTime<Utc>,
    pub receipt_id: Option<String>,
}

/// The SDK's `Handoff`: the brief, the subject's health, and the receipt it was recorded under.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = Handoff)]
pub struct HandoffView {
    pub subject_id: String,
    pub session_id: String,
    pub reason: String,
    #[schema(format = DateTime)]
    pub generated_at: String,
    pub customer_summary: String,
    pub active_issue: String,
    pub attempted_steps: Vec<String>,
    pub key_facts: Vec<String>,
    pub resolution_history: Vec<ResolutionItem>,
    pub recent_context: Vec<String>,
    pub health_score: i64,
    #[schema(value_type = HealthState, inline)]
    pub health_state: &'static str,
    pub health_factors: Vec<Factor>,
    /// The brief as markdown.
    pub handoff_notes: String,
    pub token_estimate: usize,
    pub provenance: HandoffProvenance,
    pub receipt_id: Option<String>,
    pub receipt_emitted: bool,
}

/// Ids of the facts and episodes a brief shows.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HandoffProvenance {
    pub fact_ids: Vec<String>,
    pub episode_ids: Vec<String>,
}

impl Handoff {
    /// The wire shape.
    pub fn view(self, req: &HandoffRequest) -> HandoffView {
        let b = self.brief;
        let provenance = HandoffProvenance {
            fact_ids: b.fact_ids.iter().map(|u| u.to_string()).collect(),
            episode_ids: b.session_turns.iter().chain(&b.carried_turns).map(|t| t.id.to_string()).collect(),
        };
        HandoffView {
            subject_id: req.subject_id.clone(),
            session_id: req.session_id.clone(),
            reason: req.reason.clone(),
            generated_at: isoformat(&self.generated_at),
            customer_summary: b.customer_summary,
            active_issue: b.active_issue,
            attempted_steps: b.attempted_steps,
            key_facts: b.key_facts,
            resolution_history: b.resolution_history,
            recent_context: b.recent_context,
            health_score: self.health.score,
            health_state: self.health.state,
            health_factors: b.health_factors,
            handoff_notes: b.handoff_notes,
            token_estimate: b.token_estimate,
            provenance,
            receipt_emitted: self.receipt_id.is_some(),
            receipt_id: self.receipt_id,
        }
    }
}

/// Builds the brief under the tenant's caller-identity gate and policy; emits a receipt when
/// the decision says so (a receipt that cannot be written never fails the call).
pub async fn handoff(st: &Deps<'_>, tenant: &str, req: &HandoffRequest) -> Result<Handoff, CallError> {
    let mut tx = db::scope::begin(st.pool, tenant).await?;
    let config: Value = db::tenants::config(&mut tx, tenant).await?;
    if identity_missing(&config, &req.meta) {
        return Err(CallError::CallerIdentityRequired);
    }
    let policy_ctx =
        policy::for_request(&mut tx, tenant, &config, req.meta.caller_type.clone(), req.meta.caller_id.clone()).await?;
    let facts = db::memories::current_facts(&mut tx, tenant, &req.subject_id, FACT_POOL).await?;
    let mut sessions = load(&mut tx, tenant, &req.subject_id).await?;
    // A compacted session: its summary stands for the turns it covers.
    let snapshot = db::working_memory::latest_snapshot(&mut tx, tenant, &req.subject_id, &req.session_id, None).await?;
    if let Some(snap) = &snapshot {
        let covered: HashSet<uuid::Uuid> =
            db::working_memory::covered_ids(&mut tx, tenant, &req.subject_id, snap, None).await?.into_iter().collect();
        for s in sessions.iter_mut().filter(|s| s.id == req.session_id) {
            s.turns.retain(|t| !covered.contains(&t.id));
        }
    }
    tx.commit().await?;

    let outcome = match &policy_ctx.active {
        Some(active) => evaluate_memories(
            &active.bundle,
            facts.iter().map(|f| (f.id, &f.sensitivity_labels)),
            policy_ctx.caller_type.as_deref(),
            policy_ctx.caller_id.as_deref(),
        ),
        None => PolicyOutcome::default(),
    };
    let policy_block = receipt_policy(policy_ctx.active.as_ref().map(|p| p.hash.as_str()), &outcome, policy_ctx.mode);
    let mut hidden: HashSet<uuid::Uuid> = HashSet::new();
    if policy_ctx.mode == PolicyMode::Enforce {
        for (f, d) in facts.iter().zip(&outcome.decisions) {
            if d.is_some() {
                hidden.extend(f.source_episode_ids.iter().copied());
            }
        }
        for s in &mut sessions {
            s.turns.retain(|t| !hidden.contains(&t.id));
        }
    }
    let facts = apply(policy_ctx.mode, facts, &outcome.decisions, |f| f.content = REDACTION_MARKER.to_string());
    let lines: Vec<FactLine> = facts.iter().map(|f| FactLine { id: f.id, content: f.content.clone() }).collect();

    let generated_at = now_micros();
    let health = health::score(&req.subject_id, &sessions, generated_at);
    let sla = sla::summary(&req.subject_id, &sessions, Thresholds::default(), generated_at);
    let brief = build(&Inputs {
        subject_id: &req.subject_id,
        session_id: &req.session_id,
        reason: &req.reason,
        facts: &lines,
        sessions: &sessions,
        health: &health,
        sla: &sla,
        budget: req.max_tokens,
        generated_at,
        session_summary: snapshot.as_ref().map(|s| s.summary.as_str()),
    });

    let mut receipt_id = None;
    if should_emit(&config, req.emit_receipt) {
        let task = format!("handoff:{}:{}", req.reason, req.session_id);
        let mut body = body_frame(&Frame {
            tenant,
            subject_id: &req.subject_id,
            task: &task,
            mode: "handoff",
            as_of: &generated_at,
            meta: &req.meta,
            entries: receipt_entries(&brief),
            policy_block: &policy_block,
            policy: &policy_ctx,
            output_text: &brief.handoff_notes,
            token_estimate: brief.token_estimate,
            max_tokens: req.max_tokens,
            session_id: Some(&req.session_id),
            embedder_model: st.embedder.model_id(),
        });
        if let Some(s) = &snapshot {
            body["snapshot_id"] = json!(s.id.to_string());
        }
        match emit(st.pool, st.signing_keys, &config, tenant, body).await {
            Ok(id) => receipt_id = Some(id),
            Err(e) => tracing::error!(error = %format!("{e:#}"), "handoff receipt write failed"),
        }
    }
    Ok(Handoff { brief, health, generated_at, receipt_id })
}

/// Facts shown, then current-session and carried-forward episodes; ranks in that order, no scores.
fn receipt_entries(b: &Brief) -> Vec<Value> {
    let memories = b
        .fact_ids
        .iter()
        .map(|id| json!({"type": "memory", "memory_id": id.to_string(), "kind": MemoryKind::ProfileFact}));
    let episodes =
        b.session_turns.iter().chain(&b.carried_turns).map(
            |t| json!({"type": "episode", "episode_id": t.id.to_string(), "occurred_at": isoformat(&t.occurred_at)}),
        );
    memories
        .chain(episodes)
        .enumerate()
        .map(|(i, mut e)| {
            e["rank"] = json!(i + 1);
            e
        })
        .collect()
}
