//! What a server's index of a large subject's lexemes is built from (`mnemo_lexical_rows`):
//! one state of the subject, read in one statement.

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

/// A memory as its BM25 lane reads it.
#[derive(Debug, Clone)]
pub struct MemoryRow {
    pub id: Uuid,
    pub recorded_at: DateTime<Utc>,
    pub superseded_at: Option<DateTime<Utc>>,
    pub asserted_valid_to: Option<DateTime<Utc>>,
    pub tombstoned: bool,
    /// Its distinct lexemes (`content_tsv`).
    pub lexemes: Vec<String>,
    /// The episodes it was compiled from.
    pub sources: Vec<Uuid>,
    /// A claim contradiction's record names it as the superseded memory.
    pub contradiction: bool,
}

/// An episode as its BM25 lane reads it.
#[derive(Debug, Clone)]
pub struct EpisodeRow {
    pub id: Uuid,
    pub seq: i64,
    pub created_at: DateTime<Utc>,
    /// Its distinct lexemes (`search_tsv`).
    pub lexemes: Vec<String>,
}

/// A lexeme the subject holds as common in one source, since an instant.
#[derive(Debug, Clone)]
pub struct CommonTerm {
    pub memory: bool,
    pub lexeme: String,
    pub since: DateTime<Utc>,
}

/// One row of a subject's state as `mnemo_lexical_rows` sends it, in this order: the state
/// first, then memories (unless the index's are current), episodes (all, or those after the
/// index's latest), the common terms.
#[derive(Debug)]
pub enum LexicalRow {
    /// The state (`mnemo_lexical_state`: memory version / latest seq / latest episode id),
    /// whether every memory follows (else none: the index's are current) and whether only the
    /// episodes after the index's latest follow (else all).
    State {
        state: String,
        memories: bool,
        episodes_after: bool,
    },
    Memory(MemoryRow),
    Episode(EpisodeRow),
    Common(CommonTerm),
}

struct Row {
    part: Option<i16>,
    id: Option<Uuid>,
    seq: Option<i64>,
    stamp: Option<DateTime<Utc>>,
    superseded_at: Option<DateTime<Utc>>,
    asserted_valid_to: Option<DateTime<Utc>>,
    tombstoned: Option<bool>,
    lexemes: Option<Vec<String>>,
    note: Option<String>,
    sources: Option<Vec<Uuid>>,
    contradiction: Option<bool>,
}

fn bad(what: &str) -> sqlx::Error {
    sqlx::Error::Protocol(format!("the lexical rows statement returned {what}"))
}

impl Row {
    fn decode(self) -> sqlx::Result<LexicalRow> {
        Ok(match self.part {
            Some(0) => {
                let sent = self.lexemes.unwrap_or_default();
                LexicalRow::State {
                    state: self.note.ok_or_else(|| bad("no state"))?,
                    memories: sent.first().map(String::as_str) == Some("all"),
                    episodes_after: sent.get(1).map(String::as_str) == Some("after"),
                }
            }
            Some(1) => LexicalRow::Memory(MemoryRow {
                id: self.id.ok_or_else(|| bad("a memory without id"))?,
                recorded_at: self.stamp.ok_or_else(|| bad("a memory without recorded_at"))?,
                superseded_at: self.superseded_at,
                asserted_valid_to: self.asserted_valid_to,
                tombstoned: self.tombstoned.unwrap_or(false),
                lexemes: self.lexemes.unwrap_or_default(),
                sources: self.sources.unwrap_or_default(),
                contradiction: self.contradiction.unwrap_or(false),
            }),
            Some(2) => LexicalRow::Episode(EpisodeRow {
                id: self.id.ok_or_else(|| bad("an episode without id"))?,
                seq: self.seq.ok_or_else(|| bad("an episode without seq"))?,
                created_at: self.stamp.ok_or_else(|| bad("an episode without created_at"))?,
                lexemes: self.lexemes.unwrap_or_default(),
            }),
            Some(3) => LexicalRow::Common(CommonTerm {
                memory: self.note.as_deref() == Some("memory"),
                lexeme: self
                    .lexemes
                    .and_then(|l| l.into_iter().next())
                    .ok_or_else(|| bad("a common term without lexeme"))?,
                since: self.stamp.ok_or_else(|| bad("a common term without its instant"))?,
            }),
            other => return Err(bad(&format!("an unknown part {other:?}"))),
        })
    }
}

/// Streams the subject's rows for an index whose state is `known` (None: every row) to `each`,
/// one at a time (a large subject's rows are never all held at once).
pub async fn rows(
    pool: &PgPool,
    tenant: &str,
    subject_id: &str,
    known: Option<&str>,
    mut each: impl FnMut(LexicalRow),
) -> sqlx::Result<()> {
    use futures_util::TryStreamExt;
    let mut stream = sqlx::query_as!(
        Row,
        "SELECT part, id, seq, stamp, superseded_at, asserted_valid_to, tombstoned, lexemes, note, sources, \
         contradiction \
         FROM mnemo_lexical_rows($1, $2, $3)",
        tenant,
        subject_id,
        known
    )
    .fetch(pool);
    while let Some(row) = stream.try_next().await? {
        each(row.decode()?);
    }
    Ok(())
}

/// The subject's state now (`mnemo_lexical_state`: memory version / latest seq / latest episode
/// id), read under the tenant.
pub async fn state(pool: &PgPool, tenant: &str, subject_id: &str) -> sqlx::Result<String> {
    sqlx::query_scalar!(
        r#"WITH mnemo_tenant AS MATERIALIZED (SELECT set_config('mnemo.tenant', $1, true) AS tenant)
           SELECT mnemo_lexical_state($1, $2) AS "state!" FROM mnemo_tenant"#,
        tenant,
        subject_id
    )
    .fetch_one(pool)
    .await
}
