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
use crate::db::working_memory::SnapshotRow;

/// Everything retrieval found for one call.
#[derive(Debug, Default)]
pub struct Candidates {
    pub memories: Vec<MemoryCandidate>,
    /// The lanes' episodes, then the turns next to them and the sources of single-turn
    /// summaries (possibly repeating an id; suppression removes repeats).
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

/// Reads the candidates for `probe` in `conn`, a transaction of `probe.tenant`.
///
/// The turns next to every lane episode come too: smoothing reads their cosines, and the turn
/// answering a matching question is one of them (at most two per candidate, so the cost stays
/// bounded). Compact bundles show a single-turn summary as its turn, so those turns come as well.
pub async fn retrieve(conn: &mut PgConnection, probe: &Probe<'_>, opts: &RetrievalOptions) -> sqlx::Result<Candidates> {
    let snapshot = match probe.session_id {
        Some(sid) => {
            db::working_memory::latest_snapshot(&mut *conn, probe.tenant, probe.subject_id, sid, Some(probe.as_of))
                .await?
        }
        None => None,
    };
    if probe.vector.is_some() {
        db::context::prepare_vector_search(&mut *conn).await?;
    }
    let mut memories = db::context::memory_candidates(&mut *conn, probe).await?;
    if let Some(s) = &snapshot {
        drop_covered_summaries(&mut *conn, probe, s, &mut memories).await?;
    }
    let mut episodes = db::context::episode_candidates(&mut *conn, probe).await?;
    let seqs = if opts.smoothing || opts.neighbours { neighbour_seqs(&episodes) } else { Vec::new() };
    let mut ids = if opts.compact { summary_sources(&memories, &episodes) } else { Vec::new() };
    if let Some(s) = &snapshot {
        ids.extend(s.pinned.iter().filter(|p| !episodes.iter().any(|e| e.episode.id == **p)));
        ids.sort_unstable();
        ids.dedup();
    }
    episodes.extend(db::context::episodes_at(&mut *conn, probe, &seqs, &ids).await?);
    if let (Some(s), Some(sid)) = (&snapshot, probe.session_id) {
        episodes.retain(|e| !covered(s, sid, e));
    }
    let backing = db::context::episode_backing(&mut *conn, probe, &backing_asked(&memories, &episodes)).await?;
    Ok(Candidates { memories, episodes, backing, snapshot })
}

/// Leaves out the episode summaries made only of turns the snapshot covers: its summary
/// stands for those turns (facts and procedures compiled from them still compete).
async fn drop_covered_summaries(
    conn: &mut sqlx::PgConnection,
    probe: &Probe<'_>,
    snapshot: &SnapshotRow,
    memories: &mut Vec<MemoryCandidate>,
) -> sqlx::Result<()> {
    let sources: Vec<Uuid> = memories
        .iter()
        .filter(|m| m.memory.kind == "episode_summary")
        .flat_map(|m| m.memory.source_episode_ids.iter().copied())
        .collect();
    if sources.is_empty() {
        return Ok(());
    }
    let covered: HashSet<Uuid> =
        db::working_memory::covered_ids(conn, probe.tenant, probe.subject_id, snapshot, Some(&sources))
            .await?
            .into_iter()
            .collect();
    memories.retain(|m| {
        let ids = &m.memory.source_episode_ids;
        m.memory.kind != "episode_summary" || ids.is_empty() || !ids.iter().all(|id| covered.contains(id))
    });
    Ok(())
}

/// Whether the snapshot stands for the episode: a turn of its session up to its cursor that
/// is not pinned (the bundle shows the summary instead).
pub fn covered(snapshot: &SnapshotRow, session_id: &str, e: &EpisodeCandidate) -> bool {
    e.episode.session_id.as_deref() == Some(session_id)
        && e.seq <= snapshot.covers_through
        && !snapshot.pinned.contains(&e.episode.id)
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
