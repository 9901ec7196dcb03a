//! Receipts: what exactly an agent was shown, signed, chained per tenant, replayable.
//!
//! A receipt body is built after the bundle is rendered: the request, every selected entry
//! with rank and score, the output hash, and what mnemo needs to rebuild the same bytes
//! (`as_of`, `max_tokens`, `session_id`, embedder model, ranking version). Emission appends
//! to the tenant's hash chain under a lock on the chain head, so concurrent emitters never
//! fork it: each body carries `chain: {seq, prev_hash}` and `receipt_hash` is the sha256 of
//! the stored canonical body.

use std::sync::Mutex;

use chrono::Utc;
use serde::Deserialize;
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::db;
use crate::model::time::isoformat;
use crate::receipts::canonical::{canonical_v1, sha256_hex};
use crate::receipts::signing::{sign, SigningKeys};
use crate::services::context::{Bundle, ContextRequest};

/// Identifies the ranking and rendering code; a replay under another version may differ.
/// 3: terms common in the subject (see `db::terms`) leave the full-text query.
/// 8: evidence (documents, emails, tool output) sits in the fenced quoted section.
/// 12: a task about many moments of the history shows one whole turn and short excerpts from
/// the third turn on.
/// 13: a large subject's vector lanes keep their nearest by exact distance among every row the
/// call fetched (an approximate index's misses found by another lane now count).
/// 14: a task about many moments shows its deeper turns in 40-char excerpts (60 before).
pub const RANKING_VERSION: &str = "mnemo-rank-16";

static IDS: Mutex<ulid::Generator> = Mutex::new(ulid::Generator::new());

/// A new receipt id: a 26-char ULID, increasing within this process.
pub fn new_receipt_id() -> String {
    let mut g = match IDS.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    g.generate().unwrap_or_else(|_| ulid::Ulid::new()).to_string()
}

/// `MNEMO_RECEIPTS_DISABLED` (read on every call so operators can switch it live).
pub fn receipts_disabled() -> bool {
    matches!(
        std::env::var("MNEMO_RECEIPTS_DISABLED").as_deref().map(str::to_ascii_lowercase).as_deref(),
        Ok("true" | "1" | "yes")
    )
}

/// Tenant `config.receipts`: when context calls write receipts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReceiptsMode {
    /// Every context call writes one.
    Always,
    /// A call writes one when it asks (`emit_receipt: true`); the default.
    #[default]
    OnRequest,
    /// No call writes one.
    Never,
}

impl ReceiptsMode {
    /// Reads `receipts` from a tenant config object; absent or unrecognised is `on_request`.
    pub fn from_config(config: &Value) -> Self {
        config.get("receipts").and_then(|v| Self::deserialize(v).ok()).unwrap_or_default()
    }
}

/// The emission decision: disabled switch, then tenant `receipts` (always/never), else the request's opt-in.
pub fn should_emit(config: &Value, emit_receipt: Option<bool>) -> bool {
    if receipts_disabled() {
        return false;
    }
    match ReceiptsMode::from_config(config) {
        ReceiptsMode::Always => true,
        ReceiptsMode::Never => false,
        ReceiptsMode::OnRequest => emit_receipt == Some(true),
    }
}

/// Caller and correlation fields copied into a receipt.
#[derive(Debug, Clone, Default)]
pub struct ReceiptMeta {
    pub query_id: Option<String>,
    pub task_id: Option<String>,
    pub parent_receipt_id: Option<String>,
    pub caller_id: Option<String>,
    pub caller_type: Option<String>,
}

fn provenance_hash(ids: &[uuid::Uuid]) -> String {
    let mut s: Vec<String> = ids.iter().map(|u| u.to_string()).collect();
    s.sort();
    sha256_hex(s.join(",").as_bytes())
}

/// Builds a receipt body for a rendered bundle (without id, chain and signature).
pub fn build_body(
    tenant: &str,
    req: &ContextRequest,
    bundle: &Bundle,
    meta: &ReceiptMeta,
    mode: &str,
    embedder_model: &str,
) -> Value {
    let memories = bundle.facts.iter().chain(&bundle.procedures);
    let mut entries = Vec::new();
    for (i, sel) in bundle.selected.iter().enumerate() {
        let rank = i + 1;
        if sel.is_memory {
            if let Some(m) = memories.clone().find(|m| m.id == sel.id) {
                entries.push(json!({
                    "type": "memory", "memory_id": m.id.to_string(), "kind": m.kind,
                    "valid_from": isoformat(&m.valid_from), "valid_to": m.valid_to.as_ref().map(isoformat),
                    "supersession_status": m.status,
                    "source_episode_ids": m.source_episode_ids.iter().map(|u| u.to_string()).collect::<Vec<_>>(),
                    "provenance_hash": provenance_hash(&m.source_episode_ids),
                    "fact_key": m.metadata.get("claim").and_then(|c| c.get("key")).cloned().unwrap_or(Value::Null),
                    "conflict_status": "none", "rank": rank, "score": sel.score,
                }));
            }
        } else if let Some(e) = bundle.episodes.iter().find(|e| e.id == sel.id) {
            entries.push(json!({
                "type": "episode", "episode_id": e.id.to_string(), "source": e.source, "event_type": e.kind,
                "occurred_at": isoformat(&e.occurred_at), "rank": rank, "score": sel.score,
            }));
        }
    }
    let mut body = body_frame(&Frame {
        tenant,
        subject_id: &req.subject_id,
        task: &req.task,
        mode,
        as_of: &bundle.as_of,
        meta,
        entries,
        policy_block: &bundle.policy,
        policy: &req.policy,
        output_text: &bundle.assembled_context,
        token_estimate: bundle.token_estimate,
        max_tokens: req.max_tokens,
        session_id: req.session_id.as_deref(),
        embedder_model,
    });
    // Only bundles that showed a session snapshot's summary name it (replay finds the same
    // snapshot as of the receipt's instant: snapshots are append-only).
    if let Some(id) = bundle.snapshot_id {
        body["snapshot_id"] = json!(id.to_string());
    }
    // A tenant that named its own sources records them, so a replay fences the same lines.
    if !req.policy.trust.overrides().is_empty() {
        body["policy_snapshot"]["source_trust"] = req.policy.trust.to_json();
    }
    body
}

/// What every receipt body carries around its entries.
pub struct Frame<'a> {
    pub tenant: &'a str,
    pub subject_id: &'a str,
    pub task: &'a str,
    pub mode: &'a str,
    pub as_of: &'a chrono::DateTime<Utc>,
    pub meta: &'a ReceiptMeta,
    pub entries: Vec<Value>,
    /// The `policy` block (bundle hash, filters, mode).
    pub policy_block: &'a Value,
    pub policy: &'a crate::services::policy::PolicyContext,
    /// The exact text the caller was shown; its sha256 is the context hash.
    pub output_text: &'a str,
    pub token_estimate: usize,
    pub max_tokens: usize,
    pub session_id: Option<&'a str>,
    pub embedder_model: &'a str,
}

/// Builds a receipt body from its frame (without id, chain and signature).
pub fn body_frame(f: &Frame<'_>) -> Value {
    let context = f.output_text.as_bytes();
    json!({
        "parent_receipt_id": f.meta.parent_receipt_id, "mode": f.mode, "query_id": f.meta.query_id,
        "task_id": f.meta.task_id, "tenant_id": f.tenant, "subject_id": f.subject_id, "task": f.task,
        "as_of": isoformat(f.as_of), "caller_id": f.meta.caller_id, "caller_type": f.meta.caller_type,
        "selected_entries": f.entries,
        "policy": f.policy_block,
        "policy_snapshot": {
            "bundle_hash": f.policy.active.as_ref().map(|p| p.hash.clone()),
            "bundle_yaml": f.policy.active.as_ref().map(|p| p.content.clone()),
            "captured_at": isoformat(f.as_of),
        },
        "output": {"context_hash": sha256_hex(context), "context_size_bytes": context.len(),
                   "canonicalization_version": 1, "token_estimate": f.token_estimate},
        "region": null, "receipt_signature": null,
        "max_tokens": f.max_tokens, "session_id": f.session_id,
        "embedder_model": f.embedder_model, "ranking_version": RANKING_VERSION,
    })
}

/// Appends a receipt to the tenant's chain (signed when the tenant's key is loaded); returns its id.
pub async fn emit(
    pool: &PgPool,
    keys: &SigningKeys,
    config: &Value,
    tenant: &str,
    mut body: Value,
) -> anyhow::Result<String> {
    let receipt_id = new_receipt_id();
    let subject_id = body["subject_id"].as_str().unwrap_or_default().to_string();
    let mode = body["mode"].as_str().unwrap_or("retrieval").to_string();
    let context_hash = body["output"]["context_hash"].as_str().unwrap_or_default().to_string();
    let parent = body["parent_receipt_id"].as_str().map(str::to_string);
    body["receipt_id"] = json!(receipt_id);
    body["created_at"] = json!(isoformat(&crate::model::time::now_micros()));
    let mut tx = db::scope::begin(pool, tenant).await?;
    let (last_seq, last_hash) = db::receipts::lock_head(&mut tx, tenant).await?;
    let seq = last_seq + 1;
    body["chain"] = json!({"seq": seq, "prev_hash": last_hash});
    if let Some(key_id) = config.get("receipt_signing_key_id").and_then(Value::as_str) {
        if !sign(&mut body, keys, key_id) {
            tracing::warn!(key_id, "tenant signing key is not loaded; receipt emitted unsigned");
        }
    }
    let text = canonical_v1(&body);
    let hash = sha256_hex(text.as_bytes());
    let row = db::receipts::NewReceipt {
        receipt_id: &receipt_id,
        subject_id: &subject_id,
        seq,
        prev_hash: &last_hash,
        receipt_hash: &hash,
        mode: &mode,
        parent_receipt_id: parent.as_deref(),
        context_hash: &context_hash,
        body: &text,
    };
    db::receipts::append(&mut tx, tenant, &row).await?;
    tx.commit().await?;
    Ok(receipt_id)
}

/// The tombstone that replaces a body: links and hashes only, no content.
pub fn tombstone_body(row: &db::receipts::ReceiptRow, reason: &str, subject_sha256: Option<&str>) -> String {
    let mut t = json!({
        "receipt_id": row.receipt_id, "status": "tombstoned", "reason": reason,
        "chain": {"seq": row.seq, "prev_hash": row.prev_hash}, "receipt_hash": row.receipt_hash,
        "created_at": isoformat(&row.created_at), "tombstoned_at": isoformat(&Utc::now()),
    });
    if let Some(h) = subject_sha256 {
        t["subject_sha256"] = json!(h);
    }
    canonical_v1(&t)
}

/// Where a tenant's chain first breaks, if anywhere.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct ChainReport {
    pub tenant_id: String,
    pub ok: bool,
    pub checked: usize,
    /// The first broken link and why, or null.
    #[schema(value_type = Option<Object>)]
    pub first_break: Option<Value>,
}

/// Walks the tenant's chain: each link must point at the previous hash, and each active body
/// must hash to its recorded hash (tombstones keep the recorded hash as the link).
pub async fn verify_chain(pool: &PgPool, tenant: &str) -> anyhow::Result<ChainReport> {
    let mut conn = db::scope::begin(pool, tenant).await?;
    let rows = db::receipts::chain(&mut conn, tenant).await?;
    let mut prev = db::receipts::GENESIS.to_string();
    for (i, r) in rows.iter().enumerate() {
        let expected_seq = i as i64 + 1;
        let problem = if r.seq != expected_seq {
            Some("sequence gap")
        } else if r.prev_hash != prev {
            Some("prev_hash does not match the previous receipt")
        } else if r.status == "active" && sha256_hex(r.body.as_bytes()) != r.receipt_hash {
            Some("body does not hash to receipt_hash")
        } else if r.status == "active" && !body_links_match(r) {
            Some("chain fields in the body disagree with the row")
        } else {
            None
        };
        if let Some(reason) = problem {
            return Ok(ChainReport {
                tenant_id: tenant.to_string(),
                ok: false,
                checked: i,
                first_break: Some(json!({"seq": r.seq, "receipt_id": r.receipt_id, "reason": reason})),
            });
        }
        prev = r.receipt_hash.clone();
    }
    Ok(ChainReport { tenant_id: tenant.to_string(), ok: true, checked: rows.len(), first_break: None })
}

fn body_links_match(r: &db::receipts::ReceiptRow) -> bool {
    match crate::receipts::canonical::parse_stored(&r.body) {
        Ok(b) => {
            b["chain"]["seq"] == json!(r.seq)
                && b["chain"]["prev_hash"] == json!(r.prev_hash)
                && b["receipt_id"] == json!(r.receipt_id)
        }
        Err(_) => false,
    }
}

/// Tombstones receipts older than each tenant's `receipt_retention_days`.
pub async fn apply_retention(pool: &PgPool) -> anyhow::Result<u64> {
    let policies = db::receipts::retention_policies(&mut *pool.acquire().await?).await?;
    let mut total = 0;
    for (tenant, days) in policies {
        let cutoff = Utc::now() - chrono::Duration::days(days);
        let mut tx = db::scope::begin(pool, &tenant).await?;
        let rows = db::receipts::active_before(&mut tx, &tenant, cutoff).await?;
        let ids: Vec<String> = rows.iter().map(|r| r.receipt_id.clone()).collect();
        let bodies: Vec<String> = rows.iter().map(|r| tombstone_body(r, "retention", None)).collect();
        total += db::receipts::tombstone(&mut tx, &tenant, &ids, &bodies, None).await?;
        tx.commit().await?;
    }
    Ok(total)
}
