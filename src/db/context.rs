//! Context retrieval: bounded candidate sets from every lane, scored in one query per table,
//! all as of an instant (bitemporal visibility).
//!
//! A memory is visible at `as_of` when mnemo had recorded it by then, had not yet superseded
//! it, and its validity as first asserted had not ended. Episodes are visible once recorded.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::model::episode::Episode;
use crate::model::memory::Memory;

/// Lane sizes: each lane contributes at most this many candidates.
pub const LEXICAL_LANE: i64 = 100;
pub const SEMANTIC_LANE: i64 = 100;
pub const RECENT_FACTS: i64 = 50;
pub const RECENT_EPISODES: i64 = 20;
pub const SESSION_EPISODES: i64 = 30;
pub const DATE_EPISODES: i64 = 30;
/// HNSW candidates per vector lane in a large subject, re-scored exactly down to [`SEMANTIC_LANE`].
pub const APPROX_CANDIDATES: i64 = 4 * SEMANTIC_LANE;
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
    /// The task vector in pgvector text form, with its model id, when the embedder is semantic.
    pub vector: Option<(String, String)>,
    pub session_id: Option<&'a str>,
    /// Starts (UTC midnight) of the days the task names; episodes of those days are candidates.
    pub days: Vec<DateTime<Utc>>,
    /// From this many episodes recorded by `as_of`, the vector lanes pick candidates through the
    /// HNSW indexes (see [`crate::db::vector_index`]) and score only those exactly; below it they
    /// score every vector of the subject. Normally [`APPROX_VECTORS_FROM`].
    pub approx_from: i64,
}

impl Probe<'_> {
    /// The `sz` CTE: whether the subject counts as large as of `$3` (its latest episode seq
    /// recorded by then, read backwards on the (tenant, subject, seq) index), with the threshold in
    /// parameter `$n`.
    fn size_cte(n: usize) -> String {
        format!(
            "sz AS (SELECT COALESCE((SELECT seq FROM episodes WHERE tenant_id = $1 AND subject_id = $2 \
               AND created_at <= $3 ORDER BY seq DESC LIMIT 1), 0) >= ${n} AS big)"
        )
    }

    /// The approximate vector lane's pieces: the model as an SQL literal (a partial index is only
    /// chosen when its predicate is visible in the statement) and the dimension count of the
    /// index expression. None without a task vector.
    fn hnsw_keys(&self) -> Option<(String, usize)> {
        let (v, m) = self.vector.as_ref()?;
        Some((format!("'{}'", m.replace('\'', "''")), v.split(',').count()))
    }

    /// The task vector and its model as separate bind parameters.
    fn vector_and_model(&self) -> (Option<&str>, Option<&str>) {
        match &self.vector {
            Some((v, m)) => (Some(v.as_str()), Some(m.as_str())),
            None => (None, None),
        }
    }
}

/// The `q` CTE: the task's full-text query for one source (`memory` or `episode`), from the
/// task words in `$4` (lexemes joined with `|`), and its lexemes (`terms`), leaving out the
/// terms that had become common in the subject by `$3` (`subject_terms`, see
/// [`crate::db::terms`]). NULL when the task has no words or all of them are common: the
/// full-text lane then adds nothing and `lex` is 0.
fn task_query(source: &str) -> String {
    format!(
        "q AS (SELECT string_agg(quote_literal(l), ' | ' ORDER BY l)::tsquery AS q, array_agg(l ORDER BY l) AS terms \
           FROM unnest(tsvector_to_array(to_tsvector('english', $4::text))) l \
           WHERE NOT EXISTS (SELECT 1 FROM subject_terms s WHERE s.tenant_id = $1 AND s.subject_id = $2 \
             AND s.source = '{source}' AND s.lexeme = l AND s.common_since <= $3))"
    )
}

/// A memory candidate with its bitemporal columns and raw relevance signals.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MemoryCandidate {
    #[sqlx(flatten)]
    pub memory: Memory,
    pub asserted_valid_to: Option<DateTime<Utc>>,
    pub superseded_at: Option<DateTime<Utc>>,
    pub claim_single: bool,
    pub lex: f64,
    pub sem: Option<f64>,
}

const MEMORY_VISIBLE: &str = "tenant_id = $1 AND subject_id = $2 AND recorded_at <= $3 \
     AND (superseded_at IS NULL OR superseded_at > $3) AND status <> 'tombstoned' \
     AND (asserted_valid_to IS NULL OR asserted_valid_to > $3)";

/// Memory candidates: full-text, nearest vectors, every current single-valued claim, recent facts.
///
/// The full-text lane goes through `mnemo_memory_bm25` (migration 0014), which can use the
/// GIN index that row-level security would otherwise keep out of reach, applies the same
/// visibility and tenant filter, and scores by BM25 as of `as_of`; `lex` is that score (0
/// outside the lane).
///
/// The claims and recent-facts lanes are each split into the rows not superseded (partial
/// indexes of current rows) and the rows superseded after `as_of` (their own index; none for a
/// call about now): the same rows as one visibility filter, without reading every superseded
/// value the subject ever had. The second part has no ORDER BY of its own, so even a generic
/// plan (prepared statements switch to one) cannot prefer walking the valid_from index, which
/// read all 100k rows of a large subject to find nothing.
///
/// `vis` is `NOT MATERIALIZED`: referenced several times, Postgres would otherwise copy every
/// visible row of the subject (content, tsvector, vector) into a tuplestore on each call and
/// scan that copy without indexes; inlined, each lane reads the table through its own index
/// (claims, recent facts) and the final join fetches the chosen ids by key. Same rows either way.
/// The task vector is `(SELECT $5::vector)`, an init-plan computed once per execution: written
/// as `$5::vector` the text-to-vector cast ran for every row compared (384 floats parsed per
/// row; 10-13 ms of a 1k-memory call with MiniLM, 4 ms without).
pub async fn memory_candidates(conn: &mut PgConnection, p: &Probe<'_>) -> sqlx::Result<Vec<MemoryCandidate>> {
    let (vector, model) = p.vector_and_model();
    let q = task_query("memory");
    let sz = Probe::size_cte(7);
    let approx = match p.hnsw_keys() {
        Some((model, dims)) => format!(
            "UNION (SELECT c.id FROM (SELECT id, embedding <=> (SELECT $5::vector) AS d FROM vis \
               WHERE embedding_model = {model} AND (SELECT big FROM sz) \
               ORDER BY embedding::vector({dims}) <=> (SELECT $5::vector({dims})) LIMIT {APPROX_CANDIDATES}) c \
             ORDER BY c.d, c.id LIMIT {SEMANTIC_LANE})"
        ),
        None => String::new(),
    };
    let sql = format!(
        "WITH {q}, {sz}, \
         vis AS NOT MATERIALIZED (SELECT * FROM memories WHERE {MEMORY_VISIBLE}), \
         lx AS MATERIALIZED (SELECT l.id, l.score FROM q, mnemo_memory_bm25($2, $3, q.q, q.terms, {LEXICAL_LANE}) l \
           WHERE q.q IS NOT NULL), \
         ids AS ( \
           (SELECT id FROM lx) \
           UNION (SELECT id FROM vis WHERE $5::text IS NOT NULL AND embedding_model = $6 AND NOT (SELECT big FROM sz) \
              ORDER BY embedding <=> (SELECT $5::vector), id LIMIT {SEMANTIC_LANE}) \
           {approx} \
           UNION (SELECT id FROM vis WHERE claim_single AND superseded_at IS NULL) \
           UNION (SELECT id FROM vis WHERE claim_single AND superseded_at > $3) \
           UNION (SELECT id FROM ( \
              (SELECT id, valid_from FROM vis WHERE kind IN ('profile_fact', 'procedure') AND superseded_at IS NULL \
                 ORDER BY valid_from DESC, id DESC LIMIT {RECENT_FACTS}) \
              UNION ALL (SELECT id, valid_from FROM vis WHERE kind IN ('profile_fact', 'procedure') \
                 AND superseded_at > $3)) f \
              ORDER BY valid_from DESC, id DESC LIMIT {RECENT_FACTS})) \
         SELECT vis.id, subject_id, kind, content, summary, confidence, valid_from, valid_to, asserted_valid_to, \
           superseded_at, source_episode_ids, metadata, status, sensitivity_labels, suggested_labels, created_at, updated_at, \
           claim_single, COALESCE(lx.score, 0)::float8 AS lex, \
           CASE WHEN $5::text IS NOT NULL AND embedding_model = $6 \
             THEN (1 - (embedding <=> (SELECT $5::vector)))::float8 END AS sem \
         FROM vis JOIN ids ON ids.id = vis.id LEFT JOIN lx ON lx.id = vis.id"
    );
    sqlx::query_as(&sql)
        .bind(p.tenant)
        .bind(p.subject_id)
        .bind(p.as_of)
        .bind(&p.tsquery)
        .bind(vector)
        .bind(model)
        .bind(p.approx_from)
        .fetch_all(conn)
        .await
}

/// An episode candidate with its ingest seq and raw relevance signals.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EpisodeCandidate {
    #[sqlx(flatten)]
    pub episode: Episode,
    pub seq: i64,
    pub lex: f64,
    pub sem: Option<f64>,
}

const EPISODE_VISIBLE: &str = "tenant_id = $1 AND subject_id = $2 AND created_at <= $3";

/// Episode candidates: full-text, nearest vectors, the most recent, the current session's
/// (`vis` inlined for the same reason as in [`memory_candidates`]).
pub async fn episode_candidates(conn: &mut PgConnection, p: &Probe<'_>) -> sqlx::Result<Vec<EpisodeCandidate>> {
    let (vector, model) = p.vector_and_model();
    let q = task_query("episode");
    let sz = Probe::size_cte(9);
    // An embedding row is written after its episode, so `x.created_at <= $3` implies the episode
    // is visible too.
    let approx = match p.hnsw_keys() {
        Some((model, dims)) => format!(
            "UNION (SELECT c.episode_id FROM (SELECT x.episode_id, x.embedding <=> (SELECT $5::vector) AS d \
               FROM episode_embeddings x WHERE x.tenant_id = $1 AND x.subject_id = $2 AND x.created_at <= $3 \
               AND x.embedding_model = {model} AND (SELECT big FROM sz) \
               ORDER BY x.embedding::vector({dims}) <=> (SELECT $5::vector({dims})) LIMIT {APPROX_CANDIDATES}) c \
             ORDER BY c.d, c.episode_id LIMIT {SEMANTIC_LANE})"
        ),
        None => String::new(),
    };
    let sql = format!(
        "WITH {q}, {sz}, \
         vis AS NOT MATERIALIZED (SELECT * FROM episodes WHERE {EPISODE_VISIBLE}), \
         lx AS MATERIALIZED (SELECT l.id, l.score FROM q, mnemo_episode_bm25($2, $3, q.q, q.terms, {LEXICAL_LANE}) l \
           WHERE q.q IS NOT NULL), \
         ids AS ( \
           (SELECT id FROM lx) \
           UNION (SELECT x.episode_id FROM episode_embeddings x JOIN vis ON vis.id = x.episode_id \
              WHERE x.tenant_id = $1 AND x.subject_id = $2 AND $5::text IS NOT NULL AND x.embedding_model = $6 \
              AND x.created_at <= $3 AND NOT (SELECT big FROM sz) \
              ORDER BY x.embedding <=> (SELECT $5::vector), x.episode_id LIMIT {SEMANTIC_LANE}) \
           {approx} \
           UNION (SELECT id FROM vis ORDER BY occurred_at DESC, created_at DESC, id DESC LIMIT {RECENT_EPISODES}) \
           UNION (SELECT id FROM vis WHERE $7::text IS NOT NULL AND session_id = $7 \
              ORDER BY occurred_at DESC, created_at DESC, id DESC LIMIT {SESSION_EPISODES}) \
           UNION (SELECT day.id FROM unnest($8::timestamptz[]) d, LATERAL (SELECT id, occurred_at FROM vis \
                  WHERE occurred_at >= d AND occurred_at < d + interval '1 day' \
                  ORDER BY occurred_at, id LIMIT {DATE_EPISODES}) day \
              ORDER BY day.occurred_at, day.id LIMIT {DATE_EPISODES})) \
         SELECT vis.id, vis.subject_id, source, type, payload, metadata, provenance, session_id, occurred_at, \
           vis.created_at, seq, COALESCE(lx.score, 0)::float8 AS lex, \
           CASE WHEN $5::text IS NOT NULL AND x.embedding_model = $6 \
             THEN (1 - (x.embedding <=> (SELECT $5::vector)))::float8 END AS sem \
         FROM vis JOIN ids ON ids.id = vis.id LEFT JOIN lx ON lx.id = vis.id \
         LEFT JOIN episode_embeddings x ON x.tenant_id = $1 AND x.subject_id = $2 AND x.episode_id = vis.id \
           AND x.created_at <= $3"
    );
    sqlx::query_as(&sql)
        .bind(p.tenant)
        .bind(p.subject_id)
        .bind(p.as_of)
        .bind(&p.tsquery)
        .bind(vector)
        .bind(model)
        .bind(p.session_id)
        .bind(&p.days)
        .bind(p.approx_from)
        .fetch_all(conn)
        .await
}

/// Episodes with the given seqs (the neighbours of candidates) or ids (the sources of candidate
/// summaries), visible at `as_of`, with their cosine to the task; their lexical score is 0
/// (every episode the full-text lane ranks is a candidate already).
pub async fn episodes_at(
    conn: &mut PgConnection,
    p: &Probe<'_>,
    seqs: &[i64],
    ids: &[Uuid],
) -> sqlx::Result<Vec<EpisodeCandidate>> {
    if seqs.is_empty() && ids.is_empty() {
        return Ok(Vec::new());
    }
    let (vector, model) = p.vector_and_model();
    sqlx::query_as(
        "SELECT e.id, e.subject_id, source, type, payload, metadata, provenance, session_id, occurred_at, e.created_at, \
           seq, 0::float8 AS lex, \
           CASE WHEN $5::text IS NOT NULL AND x.embedding_model = $6 \
             THEN (1 - (x.embedding <=> (SELECT $5::vector)))::float8 END AS sem \
         FROM episodes e LEFT JOIN episode_embeddings x ON x.tenant_id = $1 AND x.subject_id = $2 \
           AND x.episode_id = e.id AND x.created_at <= $3 \
         WHERE e.tenant_id = $1 AND e.subject_id = $2 AND e.created_at <= $3 AND (e.seq = ANY($4) OR e.id = ANY($7))",
    )
    .bind(p.tenant)
    .bind(p.subject_id)
    .bind(p.as_of)
    .bind(seqs)
    .bind(vector)
    .bind(model)
    .bind(ids)
    .fetch_all(conn)
    .await
}

/// How the given episodes back memories as of `as_of`, one row per episode that backs any:
/// whether a memory compiled from it is visible then, and whether one was superseded by then
/// through a claim contradiction. Runs `mnemo_episode_backing` (migration 0012), which reads the
/// GIN index on `source_episode_ids` for just these episodes.
pub async fn episode_backing(conn: &mut PgConnection, p: &Probe<'_>, episodes: &[Uuid]) -> sqlx::Result<Vec<Backing>> {
    if episodes.is_empty() {
        return Ok(Vec::new());
    }
    sqlx::query_as("SELECT episode_id, visible, contradicted FROM mnemo_episode_backing($1, $2, $3)")
        .bind(p.subject_id)
        .bind(p.as_of)
        .bind(episodes)
        .fetch_all(conn)
        .await
}

/// One episode's backing (see [`episode_backing`]).
#[derive(Debug, Clone, Copy, sqlx::FromRow)]
pub struct Backing {
    pub episode_id: Uuid,
    pub visible: bool,
    pub contradicted: bool,
}

/// Settings of the approximate vector lanes for this transaction: iterative index scans (so the
/// subject and visibility filters can be met past the first neighbours found; pgvector 0.8+,
/// older versions reject the setting) and an `ef_search` as large as the candidate count.
/// Set before the lanes run when the task has a vector.
pub async fn prepare_vector_search(conn: &mut PgConnection) -> sqlx::Result<()> {
    let iterative = iterative_scan(&mut *conn).await?;
    sqlx::query(
        "SELECT set_config('hnsw.ef_search', $1, true), \
           CASE WHEN $2 THEN set_config('hnsw.iterative_scan', 'relaxed_order', true) END",
    )
    .bind(APPROX_CANDIDATES.to_string())
    .bind(iterative)
    .execute(conn)
    .await?;
    Ok(())
}

/// Whether pgvector takes `hnsw.iterative_scan` (0.8+). Read once per process: the extension's
/// version does not change under a running server in practice, and a catalogue lookup on every
/// call is what this avoids.
async fn iterative_scan(conn: &mut PgConnection) -> sqlx::Result<bool> {
    static ITERATIVE: tokio::sync::OnceCell<bool> = tokio::sync::OnceCell::const_new();
    ITERATIVE
        .get_or_try_init(|| async {
            let v: Option<bool> = sqlx::query_scalar(
                "SELECT (regexp_match(extversion, '^(\\d+)\\.(\\d+)'))::int[] >= '{0,8}' FROM pg_extension \
                 WHERE extname = 'vector'",
            )
            .fetch_optional(conn)
            .await?;
            Ok(v.unwrap_or(false))
        })
        .await
        .copied()
}
