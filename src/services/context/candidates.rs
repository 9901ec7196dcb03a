//! Stage 1: the candidates of every lane, with the turns around them and the facts suppression
//! needs, read in one statement that also names the tenant and returns its settings version.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::lanes::{select, Lanes, Unsent};
use super::options::RetrievalOptions;
use crate::db;
use crate::db::context::{
    Fetched, Probe, DATE_EPISODES, MAX_RANKED_LANE, RECENT_EPISODES, RECENT_FACTS, SESSION_EPISODES,
};

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
    found(pool, probe, opts.smoothing || opts.neighbours, opts.compact).await
}

/// [`retrieve`] with its two switches named: the turns `around` the lanes' episodes, and the
/// `sources` of single-turn summaries. A small subject comes back whole and its lanes are
/// applied here ([`super::lanes`]), to the same effect.
pub async fn found(pool: &PgPool, probe: &Probe<'_>, around: bool, sources: bool) -> sqlx::Result<(Candidates, i64)> {
    let (fetched, version) = db::context::candidates(pool, probe, around, sources).await?;
    let found = match fetched {
        Fetched::Lanes(found) => found,
        Fetched::Subject(rows) => {
            let lanes = lanes_for(probe, around, sources);
            match select(rows, &lanes) {
                Ok(found) => found,
                Err(Unsent(id)) => {
                    // A defect, not a state of the data: answer from mnemo_context instead.
                    tracing::error!(memory = %id, "a memory the lanes picked came without its content; reading the lanes in Postgres");
                    let full = Probe { small_subject: [0, 0], ..probe.clone() };
                    match db::context::candidates(pool, &full, around, sources).await? {
                        (Fetched::Lanes(found), v) => return Ok((found, v)),
                        (Fetched::Subject(_), _) => {
                            return Err(sqlx::Error::Protocol("the context statement ignored its bound".into()))
                        }
                    }
                }
            }
        }
    };
    Ok((found, version))
}

/// The lanes of `probe` as `mnemo_context` sizes them (for [`super::lanes::select`]).
pub fn lanes_for<'a>(probe: &'a Probe<'_>, around: bool, sources: bool) -> Lanes<'a> {
    let ranked = usize::try_from(probe.ranked_lane.clamp(1, MAX_RANKED_LANE)).unwrap_or(1);
    let lane = |n: i64| usize::try_from(n).unwrap_or(0);
    Lanes {
        as_of: probe.as_of,
        session: probe.session_id,
        days: &probe.days,
        around,
        sources,
        sizes: [ranked, ranked, lane(RECENT_FACTS), lane(RECENT_EPISODES), lane(SESSION_EPISODES), lane(DATE_EPISODES)],
    }
}
