//! What a server's index of a large subject's lexemes is built from (`mnemo_lexical_rows`,
//! migration 0036): one state of the subject, read in one statement.

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

/// One state of a subject, as far as an index of it needs.
#[derive(Debug, Default)]
pub struct LexicalRows {
    /// The state (`mnemo_lexical_state`): memory version / latest seq / latest episode id.
    pub state: String,
    /// Every memory, or None when the index's memory version is the subject's.
    pub memories: Option<Vec<MemoryRow>>,
    /// Every episode, or (`episodes_after`) those after the index's latest.
    pub episodes: Vec<EpisodeRow>,
    pub episodes_after: bool,
    /// All of the subject's common terms.
    pub common: Vec<CommonTerm>,
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
}

fn bad(what: &str) -> sqlx::Error {
    sqlx::Error::Protocol(format!("the lexical rows statement returned {what}"))
}

/// The subject's rows for an index whose state is `known` (None: every row).
pub async fn rows(pool: &PgPool, tenant: &str, subject_id: &str, known: Option<&str>) -> sqlx::Result<LexicalRows> {
    let rows: Vec<Row> = sqlx::query_as!(
        Row,
        "SELECT part, id, seq, stamp, superseded_at, asserted_valid_to, tombstoned, lexemes, note \
         FROM mnemo_lexical_rows($1, $2, $3)",
        tenant,
        subject_id,
        known
    )
    .fetch_all(pool)
    .await?;
    let mut out = LexicalRows::default();
    let mut memories = Vec::new();
    let mut memories_sent = false;
    for r in rows {
        match r.part {
            Some(0) => {
                out.state = r.note.ok_or_else(|| bad("no state"))?;
                let sent = r.lexemes.unwrap_or_default();
                memories_sent = sent.first().map(String::as_str) == Some("all");
                out.episodes_after = sent.get(1).map(String::as_str) == Some("after");
            }
            Some(1) => memories.push(MemoryRow {
                id: r.id.ok_or_else(|| bad("a memory without id"))?,
                recorded_at: r.stamp.ok_or_else(|| bad("a memory without recorded_at"))?,
                superseded_at: r.superseded_at,
                asserted_valid_to: r.asserted_valid_to,
                tombstoned: r.tombstoned.unwrap_or(false),
                lexemes: r.lexemes.unwrap_or_default(),
            }),
            Some(2) => out.episodes.push(EpisodeRow {
                id: r.id.ok_or_else(|| bad("an episode without id"))?,
                seq: r.seq.ok_or_else(|| bad("an episode without seq"))?,
                created_at: r.stamp.ok_or_else(|| bad("an episode without created_at"))?,
                lexemes: r.lexemes.unwrap_or_default(),
            }),
            Some(3) => out.common.push(CommonTerm {
                memory: r.note.as_deref() == Some("memory"),
                lexeme: r.lexemes.and_then(|l| l.into_iter().next()).ok_or_else(|| bad("a common term without lexeme"))?,
                since: r.stamp.ok_or_else(|| bad("a common term without its instant"))?,
            }),
            other => return Err(bad(&format!("an unknown part {other:?}"))),
        }
    }
    if out.state.is_empty() {
        return Err(bad("no state"));
    }
    out.memories = memories_sent.then_some(memories);
    Ok(out)
}
