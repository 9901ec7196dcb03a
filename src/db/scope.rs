//! Tenant-scoped transactions: the only way the server reaches tenant data.
//!
//! The pool runs as `mnemo_app`, which row-level security confines to the tenant named by the
//! transaction-local setting `mnemo.tenant`. Every unit of work therefore opens its transaction
//! here, naming the tenant once; a query inside that forgets its own tenant filter still sees
//! only that tenant, and code that never named a tenant sees no rows at all.

use sqlx::{PgPool, Postgres, Transaction};

/// A transaction confined to one tenant.
pub type TenantTx = Transaction<'static, Postgres>;

/// Begins a transaction that sees (and may write) only `tenant`'s rows.
pub async fn begin(pool: &PgPool, tenant: &str) -> sqlx::Result<TenantTx> {
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT set_config('mnemo.tenant', $1, true)").bind(tenant).execute(&mut *tx).await?;
    Ok(tx)
}
