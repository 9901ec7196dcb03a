//! The readiness probe's query.

/// Runs a trivial statement: the database is reachable and answering.
pub async fn ping(pool: &sqlx::PgPool) -> sqlx::Result<()> {
    sqlx::query_scalar!("SELECT 1 AS one").fetch_one(pool).await.map(|_| ())
}
