//! The readiness probe's query.

/// Runs a trivial statement: the database is reachable and answering.
pub async fn ping(pool: &sqlx::PgPool) -> sqlx::Result<()> {
    sqlx::query_scalar::<_, i32>("SELECT 1").fetch_one(pool).await.map(|_| ())
}
