//! Stage 1: the candidates of every lane, with the turns around them and the facts suppression
//! needs, read in one statement that also names the tenant and returns its settings version.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::options::RetrievalOptions;
use crate::db;
use crate::db::context::Probe;

/// Everything retrieval found for one call (the statement's rows, decoded).
pub use crate::db::context::Found as Candidates;

/// The starts (UTC midnight) of the days `task` names, as of `as_of`.
pub fn day_starts(task: &str, as_of: DateTime<Utc>) -> Vec<DateTime<Utc>> {
    crate::services::query_terms::task_dates(task, as_of)
        .into_iter()
        .filter_map(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .collect()
}

/// Reads the candidates for `probe` in one round trip ([`db::context::candidates`]) and returns
/// them with the tenant's settings version read in the same statement.
pub async fn retrieve(pool: &PgPool, probe: &Probe<'_>, opts: &RetrievalOptions) -> sqlx::Result<(Candidates, i64)> {
    db::context::candidates(pool, probe, opts.smoothing || opts.neighbours, opts.compact).await
}
