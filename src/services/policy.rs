//! Policy bundles as the server uses them: storing, activating, and the per-request policy
//! that context assembly evaluates (cached per tenant, checked against the tenant's settings
//! version on every call, so every replica agrees at once: see `services::tenant_settings`).

use std::sync::Arc;

use serde_json::{json, Value};
use sqlx::{PgConnection, PgPool};

use crate::db;
use crate::model::time::isoformat;
use crate::model::voice::Trust;
use crate::policy::bundle::{Bundle, BundleError};
use crate::policy::eval::PolicyMode;

/// A bundle in force for a request.
#[derive(Debug, Clone)]
pub struct ActivePolicy {
    pub hash: String,
    /// The text as uploaded (kept in receipts' policy snapshot).
    pub content: String,
    pub bundle: Bundle,
}

/// The policy inputs of one context assembly.
#[derive(Debug, Clone, Default)]
pub struct PolicyContext {
    pub active: Option<Arc<ActivePolicy>>,
    pub mode: PolicyMode,
    pub caller_type: Option<String>,
    pub caller_id: Option<String>,
    /// Which sources are evidence, fenced in the bundle (the tenant's `source_trust`).
    pub trust: Trust,
}

/// Parses and stores a bundle for the tenant; returns its hash and parsed form.
pub async fn store(pool: &PgPool, tenant: &str, text: &str) -> anyhow::Result<Result<(String, Bundle), BundleError>> {
    let bundle = match Bundle::parse(text) {
        Ok(b) => b,
        Err(e) => return Ok(Err(e)),
    };
    let hash = bundle.hash();
    let mut tx = db::scope::begin(pool, tenant).await?;
    db::tenants::ensure(&mut tx, tenant).await?;
    db::policy::insert(&mut tx, tenant, &hash, text).await?;
    tx.commit().await?;
    Ok(Ok((hash, bundle)))
}

/// Loads a stored bundle of the tenant by hash (None if absent or no longer parseable).
pub async fn load(conn: &mut PgConnection, tenant: &str, hash: &str) -> sqlx::Result<Option<ActivePolicy>> {
    let Some(row) = db::policy::get(conn, tenant, hash).await? else {
        return Ok(None);
    };
    Ok(parse_row(row))
}

fn parse_row(row: db::policy::BundleRow) -> Option<ActivePolicy> {
    match Bundle::parse(&row.content) {
        Ok(bundle) => Some(ActivePolicy { hash: row.bundle_hash, content: row.content, bundle }),
        Err(e) => {
            tracing::error!(bundle_hash = %row.bundle_hash, error = %e, "stored policy bundle no longer parses");
            None
        }
    }
}

/// The tenant's active bundle, if any.
pub async fn active(conn: &mut PgConnection, tenant: &str) -> sqlx::Result<Option<ActivePolicy>> {
    Ok(db::policy::active(conn, tenant).await?.and_then(|(row, _)| parse_row(row)))
}

/// The policy context of a request: the tenant's active bundle and mode, and the caller.
pub async fn for_request(
    conn: &mut PgConnection,
    tenant: &str,
    config: &Value,
    caller_type: Option<String>,
    caller_id: Option<String>,
) -> sqlx::Result<PolicyContext> {
    Ok(PolicyContext {
        active: active(conn, tenant).await?.map(Arc::new),
        mode: PolicyMode::from_config(config),
        caller_type,
        caller_id,
        trust: Trust::from_config(config),
    })
}

/// A bundle's wire summary.
pub fn describe(tenant: &str, row: &db::policy::BundleRow, active_hash: Option<&str>) -> Value {
    json!({"tenant_id": tenant, "bundle_hash": row.bundle_hash, "created_at": isoformat(&row.created_at),
           "active": active_hash == Some(row.bundle_hash.as_str())})
}

/// The tenant's bundles, each marked active or not.
pub async fn list(pool: &PgPool, tenant: &str) -> sqlx::Result<Vec<Value>> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    let rows = db::policy::list(&mut tx, tenant).await?;
    let active = db::policy::active(&mut tx, tenant).await?.map(|(r, _)| r.bundle_hash);
    Ok(rows.iter().map(|r| describe(tenant, r, active.as_deref())).collect())
}

/// One bundle with its uploaded text; None when the tenant has no such bundle.
pub async fn get(pool: &PgPool, tenant: &str, hash: &str) -> sqlx::Result<Option<Value>> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    let Some(row) = db::policy::get(&mut tx, tenant, hash).await? else {
        return Ok(None);
    };
    let active = db::policy::active(&mut tx, tenant).await?.map(|(r, _)| r.bundle_hash);
    let mut out = describe(tenant, &row, active.as_deref());
    out["content"] = json!(row.content);
    Ok(Some(out))
}

/// Makes a stored bundle the tenant's active one; None when the tenant has no such bundle.
pub async fn activate(pool: &PgPool, tenant: &str, hash: &str) -> sqlx::Result<Option<Value>> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    if db::policy::get(&mut tx, tenant, hash).await?.is_none() {
        return Ok(None);
    }
    let at = db::policy::activate(&mut tx, tenant, hash).await?;
    tx.commit().await?;
    Ok(Some(json!({"tenant_id": tenant, "bundle_hash": hash, "activated_at": isoformat(&at)})))
}

/// The tenant's active bundle with its text, or None.
pub async fn active_doc(pool: &PgPool, tenant: &str) -> sqlx::Result<Option<Value>> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    let Some((row, at)) = db::policy::active(&mut tx, tenant).await? else {
        return Ok(None);
    };
    let mut out = describe(tenant, &row, Some(&row.bundle_hash));
    out["activated_at"] = json!(isoformat(&at));
    out["content"] = json!(row.content);
    Ok(Some(out))
}
