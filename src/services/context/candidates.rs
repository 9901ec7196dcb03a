//! Stage 1: the candidates of every lane, with the turns around them and the facts suppression
//! needs, read in one statement that also names the tenant and returns its settings version.

use chrono::{DateTime, Utc};
use std::sync::Arc;

use sqlx::PgPool;

use super::lanes::{select, Lanes};
use super::lexical::{bm25, Index};
use super::options::RetrievalOptions;
use super::subjects::SubjectCache;
use crate::db;
use crate::db::context::{
    Fetched, LexicalLanes, Probe, DATE_EPISODES, MAX_RANKED_LANE, RECENT_EPISODES, RECENT_FACTS, SESSION_DIGESTS,
    SESSION_EPISODES,
};
use crate::model::memory::MemoryKind;

/// Everything retrieval found for one call (the statement's rows, decoded).
pub use crate::db::context::Found as Candidates;

/// The starts (UTC midnight) of the days `task` names, as of `as_of`.
pub fn day_starts(task: &str, as_of: DateTime<Utc>) -> Vec<DateTime<Utc>> {
    crate::bundle::terms::task_dates(task, as_of)
        .into_iter()
        .filter_map(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .collect()
}

/// Reads the candidates for `probe` in one round trip ([`db::context::candidates`]) and returns
/// them with the tenant's settings version read in the same statement.
pub async fn retrieve(
    pool: &PgPool,
    probe: &Probe<'_>,
    opts: &RetrievalOptions,
    subjects: &SubjectCache,
) -> sqlx::Result<(Candidates, i64)> {
    found(pool, probe, opts.smoothing || opts.neighbours, opts.compact, subjects).await
}

/// [`retrieve`] with its two switches named: the turns `around` the lanes' episodes, and the
/// `sources` of single-turn summaries. The lanes ([`super::lanes`]) are applied here: to a small
/// subject's rows as kept in `subjects` when they are still the subject's, else as the
/// statement returned them (then kept), or to a large subject's pool.
pub async fn found(
    pool: &PgPool,
    probe: &Probe<'_>,
    around: bool,
    sources: bool,
    subjects: &SubjectCache,
) -> sqlx::Result<(Candidates, i64)> {
    let mut kept = subjects.get(probe.tenant, probe.subject_id);
    // A large subject's lexical lanes, ranked on the index kept of it (used only if current).
    let index = match kept {
        None => subjects.lexical.for_call(pool, probe.tenant, probe.subject_id).await,
        Some(_) => None,
    };
    let limit = usize::try_from(probe.ranked_lane.clamp(1, MAX_RANKED_LANE)).unwrap_or(1);
    let mut lexical = match (&index, &probe.tsquery) {
        (Some(index), Some(words)) => index.lanes(&crate::bundle::terms::words_of(words), probe.as_of, limit),
        _ => None,
    };
    // The subject's state as a first statement that returned hits saw it (the second, given the
    // lanes of those hits, does not read it again).
    let mut hits_state = None;
    loop {
        let known = kept.as_ref().map(|k| (k.fingerprint.as_str(), k.highest_version));
        let (fetched, version) = db::context::candidates(pool, probe, around, sources, known, lexical.as_ref()).await?;
        let mut call = match fetched {
            // No lanes it could use came with the call: rank its hits, then call again with them
            // (lanes ranked on the call's own hits are always used, so this happens once).
            Fetched::Hits(hits) => {
                if lexical.as_ref().is_some_and(|l| l.state.is_none()) {
                    return Err(sqlx::Error::Protocol(
                        "the context statement refused the lanes of its own hits".into(),
                    ));
                }
                lexical = Some(bm25::from_hits(&hits, limit));
                hits_state = hits.state;
                continue;
            }
            Fetched::Pool(pool_rows) => {
                let lexical_state = pool_rows.lexical_state.clone().or_else(|| hits_state.take());
                if let Some(state) = &lexical_state {
                    let (key, ranks) = ((probe.tenant, probe.subject_id), probe.tsquery.is_some());
                    subjects.lexical.after_call(pool, key, state, ranks, pool_rows.index_used == Some(true));
                }
                let mut found = from_pool(pool_rows, probe, around, sources, lexical.as_ref(), index.as_deref())?;
                found.lexical_state = lexical_state;
                return Ok((found, version));
            }
            Fetched::Subject(call) => {
                if index.is_some() {
                    subjects.lexical.forget(probe.tenant, probe.subject_id);
                }
                call
            }
        };
        // The statement leaves all rows out exactly when the fingerprint sent is the subject's.
        let rows = match &kept {
            Some(k) if k.fingerprint == call.fingerprint => Arc::clone(k),
            _ => match call.rows(kept.as_deref().map(|k| &k.rows))? {
                Some(rows) => subjects.keep(probe.tenant, probe.subject_id, call.fingerprint.clone(), rows),
                // A memory changed under a lower row version than the copy's highest: all again.
                None if kept.is_some() => {
                    kept = None;
                    continue;
                }
                None => {
                    return Err(sqlx::Error::Protocol("the context statement listed memories it did not send".into()))
                }
            },
        };
        return Ok((select(&rows.rows, &call, &lanes_for(probe, around, sources), None), version));
    }
}

/// The lanes applied to a large subject's pool ([`db::context::Pool`]), with the lexical lanes
/// sent with the call (`lexical`) when the statement used them. When they came from the
/// server's `index` of the subject, the memories citing the pool's turns come from it too (the
/// statement leaves them out).
pub fn from_pool(
    mut pool: db::context::Pool,
    probe: &Probe<'_>,
    around: bool,
    sources: bool,
    lexical: Option<&LexicalLanes>,
    index: Option<&Index>,
) -> sqlx::Result<Candidates> {
    let rows = pool.call.rows(None)?.ok_or_else(|| sqlx::Error::Protocol("the pool listed memories".into()))?;
    if pool.index_used == Some(true) {
        let index = index.ok_or_else(|| sqlx::Error::Protocol("the pool used lanes of no index".into()))?;
        // The pool's turns and every source of its summaries.
        let summaries =
            rows.memories.iter().map(|m| &m.candidate.memory).filter(|m| m.kind == MemoryKind::EpisodeSummary);
        let asked = rows.episodes.iter().map(|e| e.candidate.episode.id);
        let asked = asked.chain(summaries.flat_map(|m| m.source_episode_ids.iter().copied()));
        pool.call.citers = Some(index.citers(asked, probe.as_of));
    } else {
        pool.call.citers.get_or_insert_with(Vec::new);
    }
    let none = LexicalLanes::default();
    let ranked = if pool.lexical_used { lexical.unwrap_or(&none) } else { &none };
    let mut found = select(&rows, &pool.call, &lanes_for(probe, around, sources), Some(ranked));
    found.lexical_used = pool.index_used;
    Ok(found)
}

/// The lanes of `probe`, sized as `mnemo_context` fetches them (for [`super::lanes::select`]).
pub fn lanes_for<'a>(probe: &'a Probe<'_>, around: bool, sources: bool) -> Lanes<'a> {
    let ranked = usize::try_from(probe.ranked_lane.clamp(1, MAX_RANKED_LANE)).unwrap_or(1);
    let lane = |n: i64| usize::try_from(n).unwrap_or(0);
    Lanes {
        as_of: probe.as_of,
        session: probe.session_id,
        days: &probe.days,
        around,
        sources,
        sizes: [
            ranked,
            ranked,
            lane(RECENT_FACTS),
            lane(RECENT_EPISODES),
            lane(SESSION_EPISODES),
            lane(DATE_EPISODES),
            if probe.digests { lane(SESSION_DIGESTS) } else { 0 },
        ],
    }
}
