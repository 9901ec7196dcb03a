//! Stage 1: the candidates of every lane, with the turns around them and the facts suppression
//! needs, read in one statement that also names the tenant and returns its settings version.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::options::RetrievalOptions;
use crate::db;
use crate::db::context::{Backing, EpisodeCandidate, MemoryCandidate, Probe};
use crate::db::working_memory::SnapshotRow;

/// Everything retrieval found for one call.
#[derive(Debug, Default)]
pub struct Candidates {
    pub memories: Vec<MemoryCandidate>,
    /// The lanes' episodes, the turns next to them and the sources of single-turn summaries
    /// (suppression would remove a repeated id; the statement returns none).
    pub episodes: Vec<EpisodeCandidate>,
    /// Backing of every candidate episode and of every candidate summary's sources.
    pub backing: Vec<Backing>,
    /// The current session's latest snapshot as of the call: its pinned turns are among
    /// `episodes`, and the turns it covers are not.
    pub snapshot: Option<SnapshotRow>,
}

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
    let found = db::context::candidates(pool, probe, opts.smoothing || opts.neighbours, opts.compact).await?;
    let c = Candidates {
        memories: found.memories,
        episodes: found.episodes,
        backing: found.backing,
        snapshot: found.snapshot,
    };
    Ok((c, found.version))
}
