//! Replaying a receipt: rebuild the bundle from the receipt's own parameters and compare hashes.
//!
//! By default the bundle is rebuilt **as of the receipt's `as_of`** from the bitemporal rows, with
//! the same budget and session, so an untouched history reproduces the same bytes
//! (`reproduced: true`). `current` replays against today's memories instead (Statewave's meaning).

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::db;
use crate::embed::Embedder;
use crate::model::time::parse_datetime;
use crate::policy::eval::PolicyMode;
use crate::receipts::canonical::parse_stored;
use crate::receipts::signing::SigningKeys;
use crate::services::context::{assemble, ContextRequest, PolicyContext, SubjectCache, TaskVectorCache};
use crate::services::receipts::{build_body, emit, ReceiptMeta, RANKING_VERSION};

/// Why a receipt cannot be replayed.
#[derive(Debug)]
pub enum ReplayError {
    NotFound,
    Unreplayable { reason: &'static str, message: String },
    Internal(anyhow::Error),
}

impl From<anyhow::Error> for ReplayError {
    fn from(e: anyhow::Error) -> Self {
        ReplayError::Internal(e)
    }
}

impl From<sqlx::Error> for ReplayError {
    fn from(e: sqlx::Error) -> Self {
        ReplayError::Internal(e.into())
    }
}

fn unreplayable(reason: &'static str, message: impl Into<String>) -> ReplayError {
    ReplayError::Unreplayable { reason, message: message.into() }
}

fn entry_key(e: &Value) -> String {
    e.get("memory_id").or_else(|| e.get("episode_id")).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// What replaying needs from the server.
pub struct ReplayDeps<'a> {
    pub pool: &'a PgPool,
    pub embedder: &'a Arc<dyn Embedder>,
    pub cache: &'a TaskVectorCache,
    pub subjects: &'a SubjectCache,
    pub keys: &'a SigningKeys,
}

/// A receipt's bundle rebuilt from its own parameters.
struct Rebuilt {
    row: db::receipts::ReceiptRow,
    body: Value,
    config: Value,
    req: ContextRequest,
    bundle: crate::services::context::Bundle,
}

/// The text a replay of the receipt assembles, without writing a replay receipt (the console
/// shows it beside another rebuild, as a byte diff).
pub async fn rebuild_text(
    deps: &ReplayDeps<'_>,
    tenant: &str,
    receipt_id: &str,
    current: bool,
) -> Result<String, ReplayError> {
    Ok(rebuild(deps, tenant, receipt_id, current).await?.bundle.assembled_context)
}

/// Replays a receipt of the tenant; `current` replays against today's memories.
pub async fn replay(
    deps: &ReplayDeps<'_>,
    tenant: &str,
    receipt_id: &str,
    current: bool,
) -> Result<Value, ReplayError> {
    let Rebuilt { row, body, config, req, bundle } = rebuild(deps, tenant, receipt_id, current).await?;
    let meta = ReceiptMeta {
        query_id: body["query_id"].as_str().map(str::to_string),
        task_id: body["task_id"].as_str().map(str::to_string),
        parent_receipt_id: Some(row.receipt_id.clone()),
        caller_id: body["caller_id"].as_str().map(str::to_string),
        caller_type: body["caller_type"].as_str().map(str::to_string),
    };
    let replay_body = build_body(tenant, &req, &bundle, &meta, "as_of_replay", deps.embedder.model_id());
    let new_hash = replay_body["output"]["context_hash"].clone();
    let new_entries = replay_body["selected_entries"].as_array().cloned().unwrap_or_default();
    let replay_id = match emit(deps.pool, deps.keys, &config, tenant, replay_body).await {
        Ok(id) => Some(id),
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "writing the replay receipt failed");
            None
        }
    };
    let old_entries = body["selected_entries"].as_array().cloned().unwrap_or_default();
    let old_keys: BTreeSet<String> = old_entries.iter().map(entry_key).collect();
    let new_keys: BTreeSet<String> = new_entries.iter().map(entry_key).collect();
    let (added, removed): (Vec<Value>, Vec<Value>) = if replay_id.is_some() {
        (
            new_entries.iter().filter(|e| !old_keys.contains(&entry_key(e))).cloned().collect(),
            old_entries.iter().filter(|e| !new_keys.contains(&entry_key(e))).cloned().collect(),
        )
    } else {
        (Vec::new(), old_entries.clone())
    };
    let original_hash = body["output"]["context_hash"].clone();
    let replay_hash = if replay_id.is_some() { new_hash } else { Value::Null };
    let changed = replay_hash != original_hash;
    let mut out = json!({
        "original_receipt_id": row.receipt_id,
        "replay_receipt_id": replay_id,
        "mode": if current { "current" } else { "as_of" },
        "reproduced": !changed,
        "diff": {
            "context_hash": {"original": original_hash, "replay": replay_hash, "changed": changed},
            "selected_entries": {"added": added, "removed": removed, "common": old_keys.intersection(&new_keys).count()},
            "filters_applied": {"added": [], "removed": []},
        },
    });
    if changed && !current {
        out["reason"] = json!(why_not_reproduced(&body, deps.embedder.model_id()));
    }
    Ok(out)
}

async fn rebuild(deps: &ReplayDeps<'_>, tenant: &str, receipt_id: &str, current: bool) -> Result<Rebuilt, ReplayError> {
    let mut conn = db::scope::begin(deps.pool, tenant).await?;
    let row = db::receipts::get(&mut conn, tenant, receipt_id).await?.ok_or(ReplayError::NotFound)?;
    let config = db::tenants::config(&mut conn, tenant).await?;
    if row.status == "tombstoned" {
        return Err(unreplayable("tombstoned", "the receipt's content was removed (retention or erasure)"));
    }
    let body = parse_stored(&row.body)
        .map_err(|e| unreplayable("invalid_snapshot", format!("stored body unreadable: {e}")))?;
    if body["mode"] == "as_of_replay" {
        return Err(unreplayable("nested_replay", "the receipt is itself a replay"));
    }
    // A brief reads resolutions, which are updated in place: the past cannot be rebuilt exactly,
    // and a context assembly of the brief's task (Statewave's fallback) would prove nothing.
    if body["mode"] == "handoff" {
        return Err(unreplayable(
            "invalid_snapshot",
            "handoff receipts cannot be replayed: session resolutions are not versioned",
        ));
    }
    if body.get("policy_snapshot").is_none_or(Value::is_null) {
        return Err(unreplayable("missing_policy_snapshot", "the receipt has no policy snapshot"));
    }
    let (Some(subject_id), Some(task)) = (body["subject_id"].as_str(), body["task"].as_str()) else {
        return Err(unreplayable("invalid_snapshot", "the receipt lacks subject_id or task"));
    };
    let as_of = body["as_of"].as_str().and_then(parse_datetime);
    if !current && as_of.is_none() {
        return Err(unreplayable("invalid_snapshot", "the receipt lacks a valid as_of"));
    }
    // The bundle the receipt was assembled under (bundles are immutable and content-addressed).
    let policy_hash = body["policy"]["policy_bundle_hash"].as_str();
    let active = match policy_hash {
        Some(h) => match crate::services::policy::load(&mut conn, tenant, h).await? {
            Some(p) => Some(std::sync::Arc::new(p)),
            None => return Err(unreplayable("invalid_snapshot", "the receipt's policy bundle is no longer stored")),
        },
        None => None,
    };
    drop(conn);
    let policy = PolicyContext {
        active,
        mode: body["policy"]["mode"].as_str().and_then(PolicyMode::parse).unwrap_or_default(),
        caller_type: body["caller_type"].as_str().map(str::to_string),
        caller_id: body["caller_id"].as_str().map(str::to_string),
        // The sources the tenant named when the receipt was made (none recorded: built-ins).
        trust: crate::model::voice::Trust::from_config(
            &json!({"source_trust": body["policy_snapshot"]["source_trust"]}),
        ),
    };
    let req = ContextRequest {
        subject_id: subject_id.to_string(),
        task: task.to_string(),
        max_tokens: body["max_tokens"].as_u64().unwrap_or(crate::model::limits::DEFAULT_BUDGET_TOKENS as u64) as usize,
        session_id: body["session_id"].as_str().map(str::to_string),
        as_of: if current { None } else { as_of },
        options: Default::default(),
        policy,
    };
    let bundle = assemble(deps.pool, deps.embedder, deps.cache, deps.subjects, tenant, &req).await?;
    Ok(Rebuilt { row, body, config, req, bundle })
}

fn why_not_reproduced(body: &Value, model: &str) -> &'static str {
    if body["ranking_version"].as_str() != Some(RANKING_VERSION) {
        "ranking_version_changed: the receipt was assembled by another ranking version"
    } else if body["embedder_model"].as_str() != Some(model) {
        "embedder_changed: vectors now come from another model"
    } else {
        "data_changed: rows visible at as_of were erased or re-embedded since"
    }
}
