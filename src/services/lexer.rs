//! Whether the server computes episodes' lexemes itself (`crate::lexemes`): set by
//! `MNEMO_LEXEMES` and checked once against the database's own text-search configuration.

use serde_json::{Map, Value};
use sqlx::PgPool;
use tokio::sync::OnceCell;

use crate::db;
use crate::lexemes::{episode_lexemes, LexemesAt, Tsvector, PROBES};

/// Computes episodes' lexemes in the server where [`LexemesAt::Server`] says so and the
/// database agrees with these rules (checked once, on its probe payloads).
pub struct Lexer {
    at: LexemesAt,
    agreed: OnceCell<bool>,
}

impl Lexer {
    pub fn new(at: LexemesAt) -> Self {
        Lexer { at, agreed: OnceCell::new() }
    }

    /// Whether the server computes lexemes: set and checked against the database. The check
    /// runs once; when it cannot run (no connection) the answer is no, and it runs again next
    /// time.
    pub async fn active(&self, pool: &PgPool) -> bool {
        if self.at != LexemesAt::Server {
            return false;
        }
        let checked = self.agreed.get_or_try_init(|| agrees(pool)).await;
        checked.copied().unwrap_or(false)
    }

    /// The lexemes of one payload where the server computes them; None where the statement must.
    pub async fn one(&self, pool: &PgPool, payload: &Map<String, Value>) -> Option<Tsvector> {
        self.of(pool, [payload]).await.pop().flatten()
    }

    /// The lexemes of each payload where the server computes them; None where the statement
    /// must (and for all when [`Self::active`] is not).
    pub async fn of<'a>(
        &self,
        pool: &PgPool,
        payloads: impl IntoIterator<Item = &'a Map<String, Value>>,
    ) -> Vec<Option<Tsvector>> {
        let active = self.active(pool).await;
        let lexemes: Vec<Option<Tsvector>> =
            payloads.into_iter().map(|p| if active { episode_lexemes(p) } else { None }).collect();
        let by_server = lexemes.iter().filter(|l| l.is_some()).count();
        crate::metrics::record_episode_lexemes("server", by_server);
        crate::metrics::record_episode_lexemes("postgres", lexemes.len() - by_server);
        lexemes
    }
}

/// Whether the database's `mnemo_episode_lexemes` gives, for every probe, what this module does.
async fn agrees(pool: &PgPool) -> sqlx::Result<bool> {
    // Unit tests hold every probe to be JSON and answered here; a server built with one that is
    // not leaves the work to Postgres.
    let Ok(payloads) = PROBES.iter().map(|p| serde_json::from_str(p)).collect::<Result<Vec<Value>, _>>() else {
        return Ok(false);
    };
    let theirs = db::episodes::lexemes_of(pool, &payloads).await?;
    let differ = payloads
        .iter()
        .zip(&theirs)
        .filter(|(p, t)| p.as_object().and_then(episode_lexemes).map(|l| l.to_string()).as_ref() != Some(*t))
        .count();
    if differ > 0 {
        tracing::warn!(
            differ,
            probes = PROBES.len(),
            "the database's text-search configuration differs from the server's rules: episodes' lexemes are left to Postgres"
        );
    }
    Ok(differ == 0)
}
