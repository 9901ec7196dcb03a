//! Per-tenant API keys, stored as sha256 digests only.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

/// A key as listed (never the secret, never the digest).
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct KeyRow {
    pub key_id: String,
    pub tenant_id: String,
    pub is_admin: bool,
    /// May act on every tenant; always an admin key too.
    pub is_operator: bool,
    pub label: Option<String>,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// A live key found by its digest.
#[derive(Debug, Clone)]
pub struct FoundKey {
    pub key_id: String,
    pub tenant_id: String,
    pub is_admin: bool,
    pub is_operator: bool,
}

/// The live key with this digest. Cross-tenant by nature (the digest is all the caller has), so
/// it goes through the `mnemo_find_key` function.
pub async fn find(conn: &mut PgConnection, digest: &[u8]) -> sqlx::Result<Option<FoundKey>> {
    sqlx::query_as!(
        FoundKey,
        r#"SELECT key_id AS "key_id!", tenant_id AS "tenant_id!", is_admin AS "is_admin!",
                  is_operator AS "is_operator!" FROM mnemo_find_key($1)"#,
        digest
    )
    .fetch_optional(conn)
    .await
}

/// Whether this database has ever stored a key, live or revoked.
pub async fn ever_stored(conn: &mut PgConnection) -> sqlx::Result<bool> {
    sqlx::query_scalar!(r#"SELECT mnemo_keys_exist() AS "exists!""#).fetch_one(conn).await
}

/// Stores a new key's digest.
pub async fn insert(
    conn: &mut PgConnection,
    tenant: &str,
    key_id: &str,
    digest: &[u8],
    is_admin: bool,
    is_operator: bool,
    label: Option<&str>,
) -> sqlx::Result<KeyRow> {
    sqlx::query_as!(
        KeyRow,
        "INSERT INTO api_keys (tenant_id, key_id, key_sha256, is_admin, is_operator, label) \
         VALUES ($1, $2, $3, $4, $5, $6) \
         RETURNING key_id, tenant_id, is_admin, is_operator, label, created_at, revoked_at",
        tenant,
        key_id,
        digest,
        is_admin,
        is_operator,
        label
    )
    .fetch_one(conn)
    .await
}

/// Revokes a key of the tenant; false when no live key has this id.
pub async fn revoke(conn: &mut PgConnection, tenant: &str, key_id: &str) -> sqlx::Result<bool> {
    let r = sqlx::query!(
        "UPDATE api_keys SET revoked_at = now() WHERE tenant_id = $1 AND key_id = $2 AND revoked_at IS NULL",
        tenant,
        key_id
    )
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// The tenant's keys, oldest first.
pub async fn list(conn: &mut PgConnection, tenant: &str) -> sqlx::Result<Vec<KeyRow>> {
    sqlx::query_as!(
        KeyRow,
        "SELECT key_id, tenant_id, is_admin, is_operator, label, created_at, revoked_at FROM api_keys \
         WHERE tenant_id = $1 ORDER BY created_at, key_id",
        tenant
    )
    .fetch_all(conn)
    .await
}
