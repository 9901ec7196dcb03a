//! Console sessions held server-side: a row per signed-in session, keyed by
//! the sha256 of its nonce; sign-out deletes it.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

/// Stores a new session, and drops the tenant's expired ones.
pub async fn insert(conn: &mut PgConnection, tenant: &str, id: &[u8], expires: DateTime<Utc>) -> sqlx::Result<()> {
    sqlx::query!("DELETE FROM console_sessions WHERE tenant_id = $1 AND expires_at <= now()", tenant)
        .execute(&mut *conn)
        .await?;
    sqlx::query!(
        "INSERT INTO console_sessions (tenant_id, session_id, expires_at) VALUES ($1, $2, $3)",
        tenant,
        id,
        expires
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Whether the session is held and unexpired.
pub async fn live(conn: &mut PgConnection, tenant: &str, id: &[u8]) -> sqlx::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM console_sessions WHERE tenant_id = $1 AND session_id = $2
           AND expires_at > now()) AS "live!""#,
        tenant,
        id
    )
    .fetch_one(conn)
    .await
}

/// Ends a session (sign-out).
pub async fn delete(conn: &mut PgConnection, tenant: &str, id: &[u8]) -> sqlx::Result<()> {
    sqlx::query!("DELETE FROM console_sessions WHERE tenant_id = $1 AND session_id = $2", tenant, id)
        .execute(conn)
        .await?;
    Ok(())
}
