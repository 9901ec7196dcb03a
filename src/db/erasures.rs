//! Erasure certificates: written inside the erasing transaction, read back by id.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

/// Stores a certificate (canonical JSON text).
pub async fn insert(
    conn: &mut PgConnection,
    tenant: &str,
    erasure_id: &str,
    subject_sha256: &str,
    erased_at: DateTime<Utc>,
    certificate: &str,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO erasures (tenant_id, erasure_id, subject_sha256, erased_at, certificate) \
         VALUES ($1, $2, $3, $4, $5)",
        tenant,
        erasure_id,
        subject_sha256,
        erased_at,
        certificate
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The stored certificate text, if the tenant has one with this id.
pub async fn get(conn: &mut PgConnection, tenant: &str, erasure_id: &str) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar!("SELECT certificate FROM erasures WHERE tenant_id = $1 AND erasure_id = $2", tenant, erasure_id)
        .fetch_optional(conn)
        .await
}

/// An erasure of any tenant, as the certificates name it (no subject id).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Recent {
    pub tenant_id: String,
    pub erasure_id: String,
    pub subject_sha256: String,
}

/// The erasures of every tenant recorded in the last `window_secs` seconds of the database's
/// clock, oldest first (`mnemo_erasures_recent`).
pub async fn recent(pool: &sqlx::PgPool, window_secs: f64) -> sqlx::Result<Vec<Recent>> {
    sqlx::query_as!(
        Recent,
        r#"SELECT tenant_id AS "tenant_id!", erasure_id AS "erasure_id!", subject_sha256 AS "subject_sha256!"
           FROM mnemo_erasures_recent($1)"#,
        window_secs
    )
    .fetch_all(pool)
    .await
}
