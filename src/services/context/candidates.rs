//! Stage 1: the candidates of every lane, with the turns around them and the facts suppression
//! needs, read in one tenant-scoped transaction (the caller's: a context call reads the tenant's
//! settings version in it first).

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use super::options::RetrievalOptions;
use crate::db;
use crate::db::context::{Backing, EpisodeCandidate, MemoryCandidate, Probe};

/// Everything retrieval found for one call.
#[derive(Debug, Default)]
pub struct Candidates {
    pub memories: Vec<MemoryCandidate>,
    /// The lanes' episodes, then the turns next to them and the sources of single-turn
    /// summaries (possibly repeating an id; suppression removes repeats).
    pub episodes: Vec<EpisodeCandidate>,
    /// Backing of every candidate episode and of every candidate summary's sources.
    pub backing: Vec<Backing>,
}

/// The starts (UTC midnight) of the days `task` names, as of `as_of`.
pub fn day_starts(task: &str, as_of: DateTime<Utc>) -> Vec<DateTime<Utc>> {
    crate::services::query_terms::task_dates(task, as_of)
        .into_iter()
        .filter_map(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .collect()
}

/// Reads the candidates for `probe` in `conn`, a transaction of `probe.tenant`.
///
/// The turns next to every lane episode come too: smoothing reads their cosines, and the turn
/// answering a matching question is one of them (at most two per candidate, so the cost stays
/// bounded). Compact bundles show a single-turn summary as its turn, so those turns come as well.
pub async fn retrieve(conn: &mut PgConnection, probe: &Probe<'_>, opts: &RetrievalOptions) -> sqlx::Result<Candidates> {
    if probe.vector.is_some() {
        db::context::prepare_vector_search(&mut *conn).await?;
    }
    let memories = db::context::memory_candidates(&mut *conn, probe).await?;
    let mut episodes = db::context::episode_candidates(&mut *conn, probe).await?;
    let seqs = if opts.smoothing || opts.neighbours { neighbour_seqs(&episodes) } else { Vec::new() };
    let sources = if opts.compact { summary_sources(&memories, &episodes) } else { Vec::new() };
    episodes.extend(db::context::episodes_at(&mut *conn, probe, &seqs, &sources).await?);
    let backing = db::context::episode_backing(conn, probe, &backing_asked(&memories, &episodes)).await?;
    Ok(Candidates { memories, episodes, backing })
}

/// Seqs of the turns before and after each episode that are not candidates already.
pub fn neighbour_seqs(episodes: &[EpisodeCandidate]) -> Vec<i64> {
    let have: HashSet<i64> = episodes.iter().map(|e| e.seq).collect();
    let mut seqs: Vec<i64> =
        episodes.iter().flat_map(|e| [e.seq - 1, e.seq + 1]).filter(|s| *s > 0 && !have.contains(s)).collect();
    seqs.sort_unstable();
    seqs.dedup();
    seqs
}

/// The source turns of single-turn summaries that are not candidates already.
pub fn summary_sources(memories: &[MemoryCandidate], episodes: &[EpisodeCandidate]) -> Vec<Uuid> {
    let have: HashSet<Uuid> = episodes.iter().map(|e| e.episode.id).collect();
    let mut ids: Vec<Uuid> = memories
        .iter()
        .filter(|m| m.memory.kind == "episode_summary" && m.memory.source_episode_ids.len() == 1)
        .map(|m| m.memory.source_episode_ids[0])
        .filter(|id| !have.contains(id))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// The episodes whose backing suppression asks for: every candidate episode and the sources
/// of every candidate summary, sorted, without repeats.
pub fn backing_asked(memories: &[MemoryCandidate], episodes: &[EpisodeCandidate]) -> Vec<Uuid> {
    let mut asked: Vec<Uuid> = episodes.iter().map(|e| e.episode.id).collect();
    asked.extend(
        memories
            .iter()
            .filter(|m| m.memory.kind == "episode_summary")
            .flat_map(|m| m.memory.source_episode_ids.iter().copied()),
    );
    asked.sort_unstable();
    asked.dedup();
    asked
}
