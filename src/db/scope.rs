//! Tenant-scoped transactions: the only way the server reaches tenant data.
//!
//! The pool runs as `mnemo_app`, which row-level security confines to the tenant named by the
//! transaction-local setting `mnemo.tenant`. Every unit of work therefore opens its transaction
//! here, naming the tenant once; a query inside that forgets its own tenant filter still sees
//! only that tenant, and code that never named a tenant sees no rows at all.
//!
//! A single-statement write may instead run on a bare connection (its own implicit
//! transaction) and apply the tenant itself with [`TENANT_CTE`]: that saves the BEGIN, SET and
//! COMMIT round trips on the ingest path while RLS still checks every row it writes.

use sqlx::pool::PoolConnection;
use sqlx::{Connection, PgConnection, PgPool, Postgres, Transaction};

/// A transaction confined to one tenant.
pub type TenantTx = Transaction<'static, Postgres>;

/// Begins a transaction that sees (and may write) only `tenant`'s rows.
pub async fn begin(pool: &PgPool, tenant: &str) -> sqlx::Result<TenantTx> {
    let mut tx = pool.begin().await?;
    sqlx::query_scalar!("SELECT set_config('mnemo.tenant', $1, true)", tenant).fetch_one(&mut *tx).await?;
    Ok(tx)
}

/// Like [`begin`], on a connection the caller holds.
pub async fn begin_on<'c>(conn: &'c mut PgConnection, tenant: &str) -> sqlx::Result<Transaction<'c, Postgres>> {
    let mut tx = conn.begin().await?;
    sqlx::query_scalar!("SELECT set_config('mnemo.tenant', $1, true)", tenant).fetch_one(&mut *tx).await?;
    Ok(tx)
}

/// A CTE named `mnemo_tenant` that sets the tenant (bind `$1`) for the rest of the statement's
/// transaction (`is_local`, so it ends with the implicit transaction of an autocommit statement).
///
/// Only for writes whose every row is produced from it (`INSERT ... SELECT ... FROM
/// mnemo_tenant`, directly or through a CTE that is): RLS checks written rows one by one as
/// they are produced, so after `set_config` ran. A scan's policy may be evaluated before the CTE
/// runs, so reads belong in [`begin`] (without the tenant they would fail closed: no rows).
pub const TENANT_CTE: &str = "mnemo_tenant AS MATERIALIZED (SELECT set_config('mnemo.tenant', $1, true) AS tenant)";

/// A pooled connection outside any transaction, for one statement that carries [`TENANT_CTE`].
pub async fn single(pool: &PgPool) -> sqlx::Result<PoolConnection<Postgres>> {
    pool.acquire().await
}

/// Begins a transaction like [`begin`] and returns the tenant's settings version
/// (`tenant_versions`, 0 when it has none), read after the tenant is set, by the same statement.
pub async fn begin_versioned(pool: &PgPool, tenant: &str) -> sqlx::Result<(TenantTx, i64)> {
    let mut tx = pool.begin().await?;
    let version: i64 =
        sqlx::query_scalar!(r#"SELECT mnemo_enter_tenant($1) AS "version!""#, tenant).fetch_one(&mut *tx).await?;
    Ok((tx, version))
}
