//! API keys: minting (the secret is shown once), digests, and resolving a presented key.
//!
//! A key reads `mnemo_<key id>_<43 chars of base64url randomness>`; only its sha256 is stored.
//! The key id is public (it names the key for listing and revocation); the secret part is 256
//! random bits, so looking a key up by its digest leaks nothing useful through timing.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rand::RngCore;
use sha2::{Digest, Sha256};
use sqlx::PgPool;

use crate::db;
use crate::db::keys::KeyRow;

/// A freshly minted key: the row and the secret (never stored, shown once).
#[derive(Debug)]
pub struct Minted {
    pub row: KeyRow,
    pub secret: String,
}

/// sha256 of a presented key.
pub fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

fn new_secret(key_id: &str) -> String {
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    format!("mnemo_{key_id}_{}", URL_SAFE_NO_PAD.encode(bytes))
}

/// What a stored key may do. Every key acts for its own tenant; only an operator key reaches
/// across tenants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The tenant's `/v1` API (and MCP) only.
    Tenant,
    /// Also the tenant's `/admin` endpoints and the console, for its own tenant only.
    Admin,
    /// An admin of every tenant: the tenant header may name any tenant, and the endpoints that
    /// reach across tenants (tenant list, webhook outbox, import/export elsewhere) answer it.
    Operator,
}

impl Scope {
    /// (is_admin, is_operator) as stored.
    pub fn flags(self) -> (bool, bool) {
        match self {
            Scope::Tenant => (false, false),
            Scope::Admin => (true, false),
            Scope::Operator => (true, true),
        }
    }

    /// The scope of stored flags (an operator key is always an admin key).
    pub fn of(admin: bool, operator: bool) -> Scope {
        match (admin, operator) {
            (_, true) => Scope::Operator,
            (true, false) => Scope::Admin,
            (false, false) => Scope::Tenant,
        }
    }
}

/// Creates a key for the tenant with the given scope.
pub async fn create(pool: &PgPool, tenant: &str, scope: Scope, label: Option<&str>) -> anyhow::Result<Minted> {
    let key_id = ulid::Ulid::new().to_string().to_lowercase();
    let secret = new_secret(&key_id);
    let (admin, operator) = scope.flags();
    let mut tx = db::scope::begin(pool, tenant).await?;
    db::tenants::ensure(&mut tx, tenant).await?;
    let row = db::keys::insert(&mut tx, tenant, &key_id, &digest(&secret), admin, operator, label).await?;
    tx.commit().await?;
    Ok(Minted { row, secret })
}

/// Revokes a key; false when the tenant has no live key with that id.
pub async fn revoke(pool: &PgPool, tenant: &str, key_id: &str) -> anyhow::Result<bool> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    let done = db::keys::revoke(&mut tx, tenant, key_id).await?;
    tx.commit().await?;
    Ok(done)
}

/// The tenant's keys (no secrets).
pub async fn list(pool: &PgPool, tenant: &str) -> anyhow::Result<Vec<KeyRow>> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    Ok(db::keys::list(&mut tx, tenant).await?)
}

/// A stored key that a request presented.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredKey {
    pub key_id: String,
    pub tenant: String,
    pub scope: Scope,
}

/// Looks a presented key up by its digest.
pub async fn lookup(pool: &PgPool, presented: &str) -> sqlx::Result<Option<StoredKey>> {
    let mut conn = pool.acquire().await?;
    let found = db::keys::find(&mut conn, &digest(presented)).await?;
    Ok(found.map(|k| StoredKey { key_id: k.key_id, tenant: k.tenant_id, scope: Scope::of(k.is_admin, k.is_operator) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_distinct_and_name_their_key() {
        let a = new_secret("01abc");
        let b = new_secret("01abc");
        assert_ne!(a, b);
        assert!(a.starts_with("mnemo_01abc_"));
        assert_eq!(a.len(), "mnemo_01abc_".len() + 43);
        assert_ne!(digest(&a), digest(&b));
    }

    #[test]
    fn scopes_round_trip_through_their_stored_flags() {
        for s in [Scope::Tenant, Scope::Admin, Scope::Operator] {
            let (admin, operator) = s.flags();
            assert_eq!(Scope::of(admin, operator), s);
        }
    }
}
