//! The `tenants` table.

use sqlx::PgConnection;

/// Records a tenant the first time it writes anything.
pub async fn ensure(conn: &mut PgConnection, tenant: &str) -> sqlx::Result<()> {
    sqlx::query("INSERT INTO tenants (tenant_id) VALUES ($1) ON CONFLICT DO NOTHING")
        .bind(tenant)
        .execute(conn)
        .await?;
    Ok(())
}
