//! Stage 1: the candidates of every lane, with the turns around them and the facts suppression
//! needs, read in one statement (see [`crate::db::context::candidates`]).

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::options::RetrievalOptions;
use crate::db;
pub use crate::db::context::Found as Candidates;
use crate::db::context::Probe;

/// The starts (UTC midnight) of the days `task` names, as of `as_of`.
pub fn day_starts(task: &str, as_of: DateTime<Utc>) -> Vec<DateTime<Utc>> {
    crate::services::query_terms::task_dates(task, as_of)
        .into_iter()
        .filter_map(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .collect()
}

/// Reads the candidates for `probe`.
///
/// The turns next to every lane episode come too when smoothing or neighbours are on:
/// smoothing reads their cosines, and the turn answering a matching question is one of them
/// (at most two per candidate, so the cost stays bounded). Compact bundles show a single-turn
/// summary as its turn, so those turns come as well.
pub async fn retrieve(pool: &PgPool, probe: &Probe<'_>, opts: &RetrievalOptions) -> sqlx::Result<Candidates> {
    db::context::candidates(pool, probe, opts.smoothing || opts.neighbours, opts.compact).await
}
