//! Context retrieval: what the lanes choose from (a small subject's rows, or a large one's pool
//! of each lane's leading candidates and what their closure may take), read in one statement as
//! of an instant (bitemporal visibility).
//!
//! A memory is visible at `as_of` when mnemo had recorded it by then, had not yet superseded
//! it, and its validity as first asserted had not ended. Episodes are visible once recorded.

use chrono::{DateTime, Utc};
use pgvector::Vector;
use sqlx::PgPool;
use uuid::Uuid;

use crate::db::context_row::{meta, missing, need, Header, Row};
use crate::db::working_memory::SnapshotRow;
use crate::model::episode::Episode;
use crate::model::memory::Memory;

/// Lane sizes: each lane contributes at most this many candidates. The two ranked lanes
/// (lexical and semantic) take [`Probe::ranked_lane`] candidates, sized by the call's token
/// budget ([`ranked_lane`]) between [`MIN_RANKED_LANE`] and [`MAX_RANKED_LANE`].
pub const MAX_RANKED_LANE: i64 = 100;
/// The fewest candidates a ranked lane takes, however small the budget.
pub const MIN_RANKED_LANE: i64 = 25;
pub const RECENT_FACTS: i64 = 50;
pub const RECENT_EPISODES: i64 = 20;
pub const SESSION_EPISODES: i64 = 30;
pub const DATE_EPISODES: i64 = 30;
/// Sessions' digests a task about many moments takes (the most recent), [`Probe::digests`].
pub const SESSION_DIGESTS: i64 = 20;
/// HNSW candidates per vector lane in a large subject (per candidate the lane keeps), re-scored
/// exactly down to the lane's size.
pub const APPROX_PER_CANDIDATE: i64 = 4;
/// Subjects with this many episodes (as of the call) use approximate vector candidates: an exact
/// cosine over every vector grows with the subject (about 1 s at 100k memories with MiniLM).
pub const APPROX_VECTORS_FROM: i64 = 20_000;

/// The query inputs shared by both tables.
#[derive(Debug, Clone)]
pub struct Probe<'a> {
    pub tenant: &'a str,
    pub subject_id: &'a str,
    pub as_of: DateTime<Utc>,
    /// `to_tsquery` text (lexemes joined with `|`), or None when the task has no words.
    pub tsquery: Option<String>,
    /// The task vector with its model id, when the embedder is semantic.
    pub vector: Option<(Vector, String)>,
    pub session_id: Option<&'a str>,
    /// Starts (UTC midnight) of the days the task names; episodes of those days are candidates.
    pub days: Vec<DateTime<Utc>>,
    /// From this many episodes recorded by `as_of`, the vector lanes pick candidates through the
    /// HNSW indexes (see [`crate::db::vector_index`]) and score only those exactly; below it they
    /// score every vector of the subject. Normally [`APPROX_VECTORS_FROM`].
    pub approx_from: i64,
    /// Candidates each ranked lane (lexical, semantic) takes: see [`ranked_lane`].
    pub ranked_lane: i64,
    /// Up to this many episodes and memories, the lanes are applied in process to the subject's
    /// rows (see [`candidates`]); normally [`SMALL_SUBJECT`].
    pub small_subject: [i32; 2],
    /// Whether the sessions' digests are candidates ([`crate::compile::digest`]): only for a
    /// task about many moments of the history.
    pub digests: bool,
}

impl<'a> Probe<'a> {
    /// A probe of `subject_id` at `as_of` for the task lexemes `tsquery`, with no vector, session
    /// or days and the normal bounds; set the other fields on the result.
    pub fn new(tenant: &'a str, subject_id: &'a str, as_of: DateTime<Utc>, tsquery: Option<String>) -> Self {
        Probe {
            tenant,
            subject_id,
            as_of,
            tsquery,
            vector: None,
            session_id: None,
            days: Vec::new(),
            approx_from: APPROX_VECTORS_FROM,
            ranked_lane: MAX_RANKED_LANE,
            small_subject: SMALL_SUBJECT,
            digests: false,
        }
    }
}

/// Subjects of up to this many episodes and memories (today) get their lanes applied by the
/// server (`services::context::lanes`) on their rows, kept between calls and brought up to date
/// with what changed. A call that finds its copy current on a subject of 605 episodes and 1,024
/// memories takes 2.3 ms against 5.6 through `mnemo_context`; the server's CPU for the lanes
/// grows with the rows (1.7 ms a call there), so the bound stays where `mnemo_context` is still
/// the dearer (bench/README.md, "Small subjects kept between calls").
pub const SMALL_SUBJECT: [i32; 2] = [1000, 2500];

/// Candidates per ranked lane for a bundle of `max_tokens`: one per `tokens_per_candidate`
/// tokens of the budget, between [`MIN_RANKED_LANE`] and [`MAX_RANKED_LANE`] (0 tokens per
/// candidate: always [`MAX_RANKED_LANE`]).
///
/// A bundle shows a few dozen lines (a compact line is some 20-40 tokens), so a lane far longer
/// than the budget can show only adds rows to read, return and check: about half of a call's
/// Postgres time on a large subject grows with the lanes (bench/README.md, "Lanes sized by the
/// budget").
pub fn ranked_lane(max_tokens: usize, tokens_per_candidate: usize) -> i64 {
    if tokens_per_candidate == 0 {
        return MAX_RANKED_LANE;
    }
    let n = i64::try_from(max_tokens.div_ceil(tokens_per_candidate)).unwrap_or(i64::MAX);
    n.clamp(MIN_RANKED_LANE, MAX_RANKED_LANE)
}

/// A memory candidate with its bitemporal columns and raw relevance signals.
#[derive(Debug, Clone)]
pub struct MemoryCandidate {
    pub memory: std::sync::Arc<Memory>,
    pub asserted_valid_to: Option<DateTime<Utc>>,
    pub superseded_at: Option<DateTime<Utc>>,
    pub claim_single: bool,
    pub lex: f64,
    pub sem: Option<f64>,
}

/// An episode candidate with its ingest seq and raw relevance signals.
#[derive(Debug, Clone)]
pub struct EpisodeCandidate {
    pub episode: std::sync::Arc<Episode>,
    pub seq: i64,
    pub lex: f64,
    pub sem: Option<f64>,
    /// Where the passage nearest the task starts (a char of the episode's text), when a passage
    /// of the turn is nearer than its opening: the bundle's excerpt shows it.
    pub focus: Option<usize>,
}

/// One episode's backing: whether a memory compiled from it is visible at `as_of`, and whether
/// one was superseded by then through a claim contradiction.
#[derive(Debug, Clone, Copy)]
pub struct Backing {
    pub episode_id: Uuid,
    pub visible: bool,
    pub contradicted: bool,
}

/// The candidates of one call, as the lanes chose them (`services::context::lanes`).
#[derive(Debug, Default)]
pub struct Found {
    pub memories: Vec<MemoryCandidate>,
    /// The lanes' episodes, the turns next to them and the sources of single-turn summaries.
    pub episodes: Vec<EpisodeCandidate>,
    /// Backing of every episode returned and of every source of a summary returned.
    pub backing: Vec<Backing>,
    /// The session's latest snapshot as of the call, when the probe names a session that has
    /// one: its pinned turns are among `episodes`, and the turns it covers are not.
    pub snapshot: Option<SnapshotRow>,
    /// The subject's state for an index of its lexemes (`mnemo_lexical_state`).
    pub lexical_state: Option<String>,
    /// Whether lexical lanes from the server's index were used (None: none were sent).
    pub lexical_used: Option<bool>,
}

/// Lexical lanes the server ranked (`services::context::lexical::bm25`) for `mnemo_context`: on
/// its index of the subject (`state` Some: used when it is the subject's state and the terms are
/// the call's), or on the hits the statement returned for the call (`state` None).
#[derive(Debug, Clone, Default)]
pub struct LexicalLanes {
    pub state: Option<String>,
    /// The task's lexemes per source, without the subject's common terms, in byte order.
    pub memory_terms: Vec<String>,
    pub episode_terms: Vec<String>,
    /// Each lane's ids and scores.
    pub memories: (Vec<Uuid>, Vec<f64>),
    pub episodes: (Vec<Uuid>, Vec<f64>),
}

/// One item holding one of the task's lexemes: its id, the lexeme's place among the lane's terms
/// and the item's length in lexemes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub id: Uuid,
    pub term: usize,
    pub dl: f64,
}

/// What `mnemo_context` returns when the call brought no lexical lanes it can use: the task's
/// lexemes per source and their hits, for the server to rank before it calls again.
#[derive(Debug, Clone, Default)]
pub struct LexicalHits {
    /// The subject's state as the statement saw it (`mnemo_lexical_state`).
    pub state: Option<String>,
    pub memory_terms: Vec<String>,
    pub episode_terms: Vec<String>,
    /// The subject's size as BM25 counts it: its latest seq recorded by the call's instant.
    pub size: f64,
    pub memories: Vec<Hit>,
    pub episodes: Vec<Hit>,
}

pub use crate::db::context_small::{Citer, Lexemes, Sent, SmallCall, SubjectEpisode, SubjectMemory, SubjectRows};

/// What one call's statement returned: a large subject's pool, or a small subject's rows, for
/// the server to apply the lanes to; or the lexical hits to rank before calling again.
#[derive(Debug)]
pub enum Fetched {
    Pool(Pool),
    Subject(SmallCall),
    Hits(LexicalHits),
}

/// A large subject's pool (`mnemo_context`): each lane's leading candidates and what the lanes'
/// closure may take (the turns next to them, their summaries' sources, the snapshot's pinned
/// turns), with their distances to the task vector and the memories citing those turns
/// ([`SmallCall::citers`]); the rows come as all of a small subject's do, without lexemes.
#[derive(Debug)]
pub struct Pool {
    pub call: SmallCall,
    /// The subject's state for an index of its lexemes (`mnemo_lexical_state`).
    pub lexical_state: Option<String>,
    /// Whether the lexical lanes sent with the call are this call's (else its lexical lanes are
    /// empty: the task has no lexemes the subject does not hold as common).
    pub lexical_used: bool,
    /// Whether those lanes came from the server's index (None: none were sent).
    pub index_used: Option<bool>,
}

/// What the lanes for `probe` choose from, in one round trip, on a connection outside any
/// transaction: the functions name the tenant for their own statement, so row-level security
/// confines it as a scoped transaction would.
///
/// A subject of up to `probe.small_subject` episodes and memories (and whose vector lanes would
/// be exact) takes `mnemo_context_small`: [`Fetched::Subject`], what depends on the call and the
/// subject's fingerprint, with the rows that changed since `known` (the fingerprint of the rows
/// the caller holds, and the highest row version of their memories). A larger one takes
/// `mnemo_context`: [`Fetched::Pool`], each lane's leading candidates (full-text as ranked by the
/// server and sent in `lexical`; nearest vectors, exact below `approx_from` episodes and through
/// the model's HNSW index from there, see [`crate::db::vector_index`]; every current
/// single-valued claim and the recent facts; the recent turns, the session's and those of the
/// days the task names) with the turns next to them (`around`), their summaries' sources and the
/// snapshot's pinned turns, or [`Fetched::Hits`] when the call brought no lexical lanes it can
/// use. `services::context::lanes` applies the lanes to either.
///
/// Returns what it fetched and the tenant's settings version, read after the tenant was named
/// (as [`crate::db::scope::begin_versioned`] returns it).
pub async fn candidates(
    pool: &PgPool,
    p: &Probe<'_>,
    around: bool,
    sources: bool,
    known: Option<(&str, i64)>,
    lexical: Option<&LexicalLanes>,
) -> sqlx::Result<(Fetched, i64)> {
    let (vector, model) = match &p.vector {
        Some((v, m)) => (Some(v), Some(m.as_str())),
        None => (None, None),
    };
    let iterative = p.vector.is_some() && iterative_scan(pool).await?;
    let ranked = p.ranked_lane.clamp(1, MAX_RANKED_LANE);
    let digests = if p.digests { SESSION_DIGESTS } else { 0 };
    let lanes = [
        ranked,
        ranked,
        RECENT_FACTS,
        RECENT_EPISODES,
        SESSION_EPISODES,
        DATE_EPISODES,
        APPROX_PER_CANDIDATE * ranked,
        digests,
    ]
    .map(|n| n as i32);
    // The function takes the vector as text and casts it back: the binary
    // vector sent here turns into the same floats.
    // One statement: whether the subject is small, then one of the two functions (the other
    // sits under a one-time filter that is false, so it is never called).
    let rows: Vec<Row> = sqlx::query_as!(
        Row,
        r#"WITH small AS MATERIALIZED (
               SELECT mnemo_context_is_small($1, $2, $3, $5::vector::text, $9, $14) AS yes)
           SELECT x.part AS "part!", x.id, x.kind, x.content, x.summary, x.confidence, x.valid_from, x.valid_to,
                  x.asserted_valid_to, x.superseded_at, x.source_episode_ids, x.metadata, x.status,
                  x.sensitivity_labels, x.suggested_labels, x.created_at, x.updated_at, x.claim_single, x.source,
                  x.payload, x.provenance, x.session_id, x.occurred_at, x.seq, x.recorded_at, x.row_version,
                  x.contradicted, x.lexemes, x.distance, x.embedded, x.ids, x.terms,
                  x.floats AS "floats: Vec<Option<f64>>", x.meta
           FROM small, LATERAL (SELECT * FROM mnemo_context_small($1, $2, $3, $4, $5::vector::text, $6, $7, $15, $16)
                                WHERE small.yes) x
           UNION ALL
           SELECT c.* FROM small, LATERAL (SELECT * FROM mnemo_context($1, $2, $3, $4, $5::vector::text, $6, $7, $8,
                                                                      $9, $10, $11, $12, $13, $17, $18, $19, $20, $21)
                                          WHERE NOT small.yes) c"#,
        p.tenant,
        p.subject_id,
        p.as_of,
        p.tsquery.as_deref(),
        vector as Option<&Vector>,
        model,
        p.session_id,
        &p.days,
        p.approx_from,
        around,
        sources,
        iterative,
        &lanes[..],
        &p.small_subject[..],
        known.map(|k| k.0),
        known.map(|k| k.1),
        lexical.and_then(|l| l.state.as_deref()),
        lexical.map(|l| &l.memory_terms[..]),
        lexical.map(|l| &l.episode_terms[..]),
        lexical.map(|l| &l.memories.0[..]),
        lexical.map(|l| &l.episodes.0[..])
    )
    .fetch_all(pool)
    .await?;
    let mut small = SmallCall::default();
    let (mut lexical_state, mut lexical_used, mut index_used) = (None, false, None);
    let mut hits: Option<LexicalHits> = None;
    let mut version = 0;
    for r in rows {
        match r.part {
            0 => {
                let header: Header = meta(r.meta)?;
                version = header.version;
                if header.hits_follow {
                    hits = Some(LexicalHits {
                        state: header.state.clone(),
                        memory_terms: header.memory_terms,
                        episode_terms: header.episode_terms,
                        size: header.size,
                        ..LexicalHits::default()
                    });
                }
                lexical_state = header.state;
                lexical_used = header.lexical_used;
                index_used = header.index_used;
            }
            5 => {
                let lane = hits.as_mut().ok_or_else(|| sqlx::Error::Protocol("hits without their header".into()))?;
                let (ids, terms, dls) = (need(r.ids, "ids")?, need(r.terms, "terms")?, need(r.floats, "floats")?);
                if ids.len() != terms.len() || ids.len() != dls.len() {
                    return Err(sqlx::Error::Protocol("the hits' arrays differ in length".into()));
                }
                let into = if r.source.as_deref() == Some("memory") { &mut lane.memories } else { &mut lane.episodes };
                for ((id, term), dl) in ids.into_iter().zip(terms).zip(dls) {
                    let (term, dl) = (usize::try_from(term).map_err(|_| missing("terms"))?, need(dl, "floats")?);
                    into.push(Hit { id, term, dl });
                }
            }
            4 => small.snapshot = Some(r.snapshot()?),
            part => {
                if !small.take(r, p.subject_id)? {
                    return Err(sqlx::Error::Protocol(format!(
                        "the context statement returned an unknown part {part}"
                    )));
                }
            }
        }
    }
    if let Some(hits) = hits {
        return Ok((Fetched::Hits(hits), version));
    }
    // Only a small subject's call returns its fingerprint.
    if !small.fingerprint.is_empty() {
        return Ok((Fetched::Subject(small), version));
    }
    let pool = Pool { call: small, lexical_state, lexical_used, index_used };
    Ok((Fetched::Pool(pool), version))
}

/// Whether pgvector takes `hnsw.iterative_scan` (0.8+). Read once per process: the extension's
/// version does not change under a running server in practice, and a catalogue lookup on every
/// call is what this avoids.
async fn iterative_scan(pool: &PgPool) -> sqlx::Result<bool> {
    static ITERATIVE: tokio::sync::OnceCell<bool> = tokio::sync::OnceCell::const_new();
    ITERATIVE
        .get_or_try_init(|| async {
            let v: Option<Option<bool>> = sqlx::query_scalar!(
                "SELECT (regexp_match(extversion, '^(\\d+)\\.(\\d+)'))::int[] >= '{0,8}' FROM pg_extension \
                 WHERE extname = 'vector'",
            )
            .fetch_optional(pool)
            .await?;
            Ok(v.flatten().unwrap_or(false))
        })
        .await
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranked_lanes_follow_the_budget_between_their_bounds() {
        // One candidate per 20 tokens, rounded up.
        assert_eq!(ranked_lane(800, 20), 40);
        assert_eq!(ranked_lane(801, 20), 41);
        assert_eq!(ranked_lane(1000, 20), 50);
        // Never fewer than the floor, never more than the longest lane.
        assert_eq!(ranked_lane(0, 20), MIN_RANKED_LANE);
        assert_eq!(ranked_lane(100, 20), MIN_RANKED_LANE);
        assert_eq!(ranked_lane(2000, 20), MAX_RANKED_LANE);
        assert_eq!(ranked_lane(usize::MAX, 20), MAX_RANKED_LANE);
        assert_eq!(ranked_lane(usize::MAX, 1), MAX_RANKED_LANE);
        // 0 tokens per candidate: the longest lanes whatever the budget.
        assert_eq!(ranked_lane(100, 0), MAX_RANKED_LANE);
        // Monotone in the budget.
        let sizes: Vec<i64> = (0..5000).step_by(7).map(|t| ranked_lane(t, 20)).collect();
        assert!(sizes.windows(2).all(|w| w[0] <= w[1]));
    }
}
