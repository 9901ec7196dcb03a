//! HNSW indexes over the stored vectors of one embedding model, used by the context lanes to
//! pick vector candidates in large subjects (see `APPROX_VECTORS_FROM` in [`crate::db::context`]).
//!
//! The `embedding` columns hold vectors of any model, so each index is partial (one model) over
//! an expression with that model's dimension count: `(embedding::vector(384))`. The server
//! builds them for its configured model at start, `CONCURRENTLY` so writes go on; until one is
//! valid the lanes simply scan (Postgres has no index to choose).

use sha2::{Digest, Sha256};
use sqlx::PgPool;

/// The tables with an `embedding` and `embedding_model` column.
pub const TABLES: [&str; 3] = ["memories", "episode_embeddings", "episode_passages"];

/// The index name for a table and model: the table and 12 hex digits of the model's sha256.
pub fn index_name(table: &str, model: &str) -> String {
    let digest = Sha256::digest(model.as_bytes());
    let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("{table}_hnsw_{hex}")
}

/// Builds any missing (or invalid, from an interrupted build) HNSW index for `model`; runs as
/// the owner role. Returns the names of the indexes it built. The DDL stays dynamic SQL: the
/// index name, table, dimension count and model literal are part of its text.
pub async fn ensure(owner: &PgPool, model: &str, dims: usize) -> sqlx::Result<Vec<String>> {
    let mut built = Vec::new();
    let literal = model.replace('\'', "''");
    for table in TABLES {
        let name = index_name(table, model);
        let valid: Option<bool> = sqlx::query_scalar!(
            "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid \
             WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace",
            name
        )
        .fetch_optional(owner)
        .await?;
        match valid {
            Some(true) => continue,
            Some(false) => {
                sqlx::raw_sql(&format!("DROP INDEX CONCURRENTLY IF EXISTS {name}")).execute(owner).await?;
            }
            None => {}
        }
        sqlx::raw_sql(&format!(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} \
             USING hnsw ((embedding::vector({dims})) vector_cosine_ops) WHERE embedding_model = '{literal}'"
        ))
        .execute(owner)
        .await?;
        built.push(name);
    }
    Ok(built)
}
