//! One `/v1/context` call: the tenant's caller-identity gate, assembly, and the receipt.
//!
//! The call reads in one statement: it names the tenant, returns the tenant's settings version
//! and every candidate. The config and active policy come from the in-process cache when that
//! version matches, else they are loaded (one more transaction) and cached. See
//! [`crate::services::tenant_settings`].

use std::sync::Arc;

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::embed::Embedder;
use crate::policy::eval::PolicyMode;
use crate::receipts::signing::SigningKeys;
use crate::services::context::{self, candidates, Bundle, ContextRequest, PolicyContext};
use crate::services::context::{SubjectCache, TaskVectorCache};
use crate::services::read_replica::ReadReplica;
use crate::services::receipts::{build_body, emit, should_emit, ReceiptMeta};
use crate::services::tenant_settings::SettingsCache;
use crate::telemetry::{self, MemoryOp};

/// What a context call uses of the server: the primary and the replica, the embedder, the
/// caches and the receipt-signing keys.
#[derive(Clone, Copy)]
pub struct Deps<'a> {
    pub pool: &'a PgPool,
    pub reads: Option<&'a ReadReplica>,
    pub embedder: &'a Arc<dyn Embedder>,
    pub task_vectors: &'a TaskVectorCache,
    pub subjects: &'a SubjectCache,
    pub tenant_settings: &'a SettingsCache,
    pub signing_keys: &'a SigningKeys,
}

impl<'a> Deps<'a> {
    /// Where a read that needs no receipt goes: the replica when it has caught up, else the
    /// primary.
    pub async fn read_pool(&self) -> sqlx::Result<&'a PgPool> {
        match self.reads {
            Some(r) => r.choose(self.pool).await,
            None => Ok(self.pool),
        }
    }
}

/// Why a context call was refused.
#[derive(Debug)]
pub enum CallError {
    /// The tenant requires caller_id and caller_type and the request lacks one.
    CallerIdentityRequired,
    /// Anything else (logged by the caller's error path).
    Internal(anyhow::Error),
}

impl<E: Into<anyhow::Error>> From<E> for CallError {
    fn from(e: E) -> Self {
        CallError::Internal(e.into())
    }
}

/// Whether the tenant requires caller_id and caller_type and the call lacks one of them.
pub fn identity_missing(config: &Value, meta: &ReceiptMeta) -> bool {
    let identified = meta.caller_id.as_deref().is_some_and(|s| !s.is_empty())
        && meta.caller_type.as_deref().is_some_and(|s| !s.is_empty());
    config.get("require_caller_identity") == Some(&json!(true)) && !identified
}

/// Applies the gate, assembles the bundle and emits a receipt when the decision says so.
/// A receipt that cannot be written never fails the call: the receipt id is then None.
pub async fn context_call(
    st: &Deps<'_>,
    tenant: &str,
    req: &ContextRequest,
    emit_receipt: Option<bool>,
    meta: &ReceiptMeta,
) -> Result<(Bundle, Option<String>), CallError> {
    let span = telemetry::memory_span(MemoryOp::Search, tenant);
    let fut = call_in(st, tenant, req, emit_receipt, meta);
    telemetry::traced(span, fut, |(b, _)| b.facts.len() + b.procedures.len() + b.episodes.len()).await
}

async fn call_in(
    st: &Deps<'_>,
    tenant: &str,
    req: &ContextRequest,
    emit_receipt: Option<bool>,
    meta: &ReceiptMeta,
) -> Result<(Bundle, Option<String>), CallError> {
    // Embedding the task holds no connection; if it failed, the gate still answers first.
    // A call that emits no receipt may read on the replica. One that emits a receipt reads on
    // the primary, which the receipt's replay will be checked against: asked for one, it goes
    // there at once; told by the tenant's config (`receipts: always`), it reads again there.
    let mut pool = if emit_receipt == Some(true) { st.pool } else { st.read_pool().await? };
    let probe = match context::probe(st.embedder, st.task_vectors, tenant, req).await {
        Ok(p) => p,
        Err(e) => {
            let settings = st.tenant_settings.current(pool, tenant).await?;
            if identity_missing(&settings.config, meta) {
                return Err(CallError::CallerIdentityRequired);
            }
            return Err(e.into());
        }
    };
    let (settings, found) = loop {
        let (found, version) = candidates::retrieve(pool, &probe, &req.options, st.subjects).await?;
        let settings = match st.tenant_settings.get(tenant, version) {
            Some(s) => s,
            None => st.tenant_settings.current(pool, tenant).await?,
        };
        if identity_missing(&settings.config, meta) {
            return Err(CallError::CallerIdentityRequired);
        }
        if !std::ptr::eq(pool, st.pool) && should_emit(&settings.config, emit_receipt) {
            pool = st.pool;
            continue;
        }
        break (settings, found);
    };
    let config = &settings.config;
    let policy = PolicyContext {
        active: settings.policy.clone(),
        mode: PolicyMode::from_config(config),
        caller_type: meta.caller_type.clone(),
        caller_id: meta.caller_id.clone(),
        trust: crate::model::voice::Trust::from_config(config),
    };
    let bundle = context::bundle(found, &probe, req, &policy);
    let mut receipt_id = None;
    if should_emit(config, emit_receipt) {
        let req = ContextRequest { policy, ..req.clone() };
        let body = build_body(tenant, &req, &bundle, meta, "retrieval", st.embedder.model_id());
        match emit(st.pool, st.signing_keys, config, tenant, body).await {
            Ok(id) => receipt_id = Some(id),
            Err(e) => tracing::error!(error = %format!("{e:#}"), "receipt write failed"),
        }
    }
    Ok((bundle, receipt_id))
}
