//! Policy bundles and the tenant's active bundle.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

/// A stored bundle.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct BundleRow {
    pub bundle_hash: String,
    pub content: String,
    pub created_at: DateTime<Utc>,
}

/// Stores a bundle (a bundle with the same hash is kept as it was).
pub async fn insert(conn: &mut PgConnection, tenant: &str, hash: &str, content: &str) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO policy_bundles (tenant_id, bundle_hash, content) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        tenant,
        hash,
        content
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// One bundle of the tenant by hash.
pub async fn get(conn: &mut PgConnection, tenant: &str, hash: &str) -> sqlx::Result<Option<BundleRow>> {
    sqlx::query_as!(
        BundleRow,
        "SELECT bundle_hash, content, created_at FROM policy_bundles WHERE tenant_id = $1 AND bundle_hash = $2",
        tenant,
        hash
    )
    .fetch_optional(conn)
    .await
}

/// The tenant's bundles, oldest first.
pub async fn list(conn: &mut PgConnection, tenant: &str) -> sqlx::Result<Vec<BundleRow>> {
    sqlx::query_as!(
        BundleRow,
        "SELECT bundle_hash, content, created_at FROM policy_bundles WHERE tenant_id = $1 ORDER BY created_at, bundle_hash",
        tenant
    )
    .fetch_all(conn)
    .await
}

/// Makes a stored bundle the tenant's active one.
pub async fn activate(conn: &mut PgConnection, tenant: &str, hash: &str) -> sqlx::Result<DateTime<Utc>> {
    sqlx::query_scalar!(
        "INSERT INTO policy_active (tenant_id, bundle_hash) VALUES ($1, $2) \
         ON CONFLICT (tenant_id) DO UPDATE SET bundle_hash = EXCLUDED.bundle_hash, activated_at = now() \
         RETURNING activated_at",
        tenant,
        hash
    )
    .fetch_one(conn)
    .await
}

/// The tenant's active bundle, if any.
pub async fn active(conn: &mut PgConnection, tenant: &str) -> sqlx::Result<Option<(BundleRow, DateTime<Utc>)>> {
    let row = sqlx::query!(
        "SELECT b.bundle_hash, b.content, b.created_at, a.activated_at FROM policy_active a \
         JOIN policy_bundles b ON b.tenant_id = a.tenant_id AND b.bundle_hash = a.bundle_hash \
         WHERE a.tenant_id = $1",
        tenant
    )
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|r| {
        (BundleRow { bundle_hash: r.bundle_hash, content: r.content, created_at: r.created_at }, r.activated_at)
    }))
}
