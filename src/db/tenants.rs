//! The `tenants` table.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgConnection;

use crate::model::tenant_config::ConfigDoc;
use crate::model::time::isoformat;

/// Records a tenant the first time it writes anything.
pub async fn ensure(conn: &mut PgConnection, tenant: &str) -> sqlx::Result<()> {
    sqlx::query!("INSERT INTO tenants (tenant_id) VALUES ($1) ON CONFLICT DO NOTHING", tenant).execute(conn).await?;
    Ok(())
}

/// The tenant's configuration document (`{}` when none).
pub async fn config(conn: &mut PgConnection, tenant: &str) -> sqlx::Result<Value> {
    let v: Option<Value> = sqlx::query_scalar!("SELECT config FROM tenant_configs WHERE tenant_id = $1", tenant)
        .fetch_optional(conn)
        .await?;
    Ok(v.unwrap_or_else(|| Value::Object(Default::default())))
}

/// The tenant's configuration row as a document (version 0 when none exists).
pub async fn config_doc(conn: &mut PgConnection, tenant: &str) -> sqlx::Result<ConfigDoc> {
    let row =
        sqlx::query!("SELECT config, version, created_at, updated_at FROM tenant_configs WHERE tenant_id = $1", tenant)
            .fetch_optional(conn)
            .await?;
    Ok(match row {
        Some(r) => ConfigDoc {
            tenant_id: tenant.to_string(),
            config: r.config,
            version: i64::from(r.version),
            created_at: Some(isoformat(&r.created_at)),
            updated_at: Some(isoformat(&r.updated_at)),
        },
        None => ConfigDoc {
            tenant_id: tenant.to_string(),
            config: Value::Object(Default::default()),
            version: 0,
            created_at: None,
            updated_at: None,
        },
    })
}

/// Serialises config updates of one tenant (also when no row exists yet).
pub async fn lock_config(conn: &mut PgConnection, tenant: &str) -> sqlx::Result<()> {
    sqlx::query!("SELECT pg_advisory_xact_lock(hashtextextended('tenant_config' || chr(31) || $1, 9))", tenant)
        .execute(conn)
        .await?;
    Ok(())
}

/// Writes the whole document at `version`.
pub async fn write_config(
    conn: &mut PgConnection,
    tenant: &str,
    config: &Value,
    version: i64,
) -> sqlx::Result<ConfigDoc> {
    sqlx::query!(
        "INSERT INTO tenant_configs (tenant_id, config, version) VALUES ($1, $2, $3) \
         ON CONFLICT (tenant_id) DO UPDATE SET config = EXCLUDED.config, version = EXCLUDED.version, updated_at = now()",
        tenant,
        config,
        i32::try_from(version).unwrap_or(i32::MAX)
    )
    .execute(&mut *conn)
    .await?;
    config_doc(conn, tenant).await
}

/// Every tenant mnemo knows (cross-tenant: the operator's listing, through a definer function).
pub async fn list_all(conn: &mut PgConnection) -> sqlx::Result<Vec<(String, DateTime<Utc>)>> {
    let rows =
        sqlx::query!(r#"SELECT tenant_id AS "tenant_id!", created_at AS "created_at!" FROM mnemo_list_tenants()"#)
            .fetch_all(conn)
            .await?;
    Ok(rows.into_iter().map(|r| (r.tenant_id, r.created_at)).collect())
}
