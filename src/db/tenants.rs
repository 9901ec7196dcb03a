//! The `tenants` table.

use serde_json::Value;
use sqlx::PgConnection;

/// Records a tenant the first time it writes anything.
pub async fn ensure(conn: &mut PgConnection, tenant: &str) -> sqlx::Result<()> {
    sqlx::query("INSERT INTO tenants (tenant_id) VALUES ($1) ON CONFLICT DO NOTHING")
        .bind(tenant)
        .execute(conn)
        .await?;
    Ok(())
}

/// The tenant's configuration document (`{}` when none).
pub async fn config(conn: &mut PgConnection, tenant: &str) -> sqlx::Result<Value> {
    let v: Option<Value> = sqlx::query_scalar("SELECT config FROM tenant_configs WHERE tenant_id = $1")
        .bind(tenant)
        .fetch_optional(conn)
        .await?;
    Ok(v.unwrap_or_else(|| Value::Object(Default::default())))
}
