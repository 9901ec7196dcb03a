//! An episode's lexemes computed by the server, where it is sure of them.
//!
//! Every episode stores `search_tsv`, the `tsvector` that `to_tsvector('english', …)` makes of
//! its text (`mnemo_episode_lexemes(payload)`). Computing it is about a sixth of
//! the Postgres time of a grouped ingest statement, and that statement is the one serial step
//! of single-episode ingest (`services::group_commit`). So the request computes the lexemes of
//! its own episode, on its own task, and the statement stores them:
//! `COALESCE($lexemes, mnemo_episode_lexemes(payload))`, the parameter bound in `tsvector`'s
//! binary form ([`Tsvector`]), which Postgres reads without parsing. Where this module is not
//! sure (text outside ASCII, a URL, a path, an unusual payload shape: see `words` and
//! `text`) it sends nothing and Postgres computes them as before; the stored value is the
//! same either way, byte for byte.
//!
//! The rules reproduce Postgres' own parser and dictionaries, which a database can configure
//! differently (an altered `english` configuration, another stop-word file). [`Lexer`] checks
//! them against the database once, before its first use, on probe texts that exercise every
//! rule, and leaves the work to Postgres when any answer differs.

pub mod english;
mod text;
mod tsvector;
mod words;

use std::rc::Rc;

use serde_json::{Map, Value};

pub use tsvector::Tsvector;
use words::Kind;

/// Postgres keeps at most this many positions for one lexeme (`MAXNUMPOS`).
const MAX_POSITIONS: usize = 256;
/// Postgres caps positions at this value (`MAXENTRYPOS - 1`).
const MAX_POSITION: usize = 16_383;
/// Longest word given to the dictionaries here (Postgres skips words over 2,047 bytes and does
/// not stem those over 1,000; prose has none over this).
const MAX_WORD: usize = 255;

/// `to_tsvector('english', text)`, or None when the text has anything `words` is not sure of.
pub fn english_tsvector(text: &str) -> Option<Tsvector> {
    let words = words::words(text)?;
    if words.len() > MAX_POSITION {
        return None;
    }
    // (lexeme, position) for every word the dictionaries keep; every word takes a position, a
    // stop word too.
    let mut entries: Vec<(Rc<str>, u16)> = Vec::with_capacity(words.len());
    let mut lower = String::new();
    for (position, (word, kind)) in (1u16..).zip(words) {
        if word.len() > MAX_WORD {
            return None;
        }
        lower.clear();
        lower.push_str(word);
        lower.make_ascii_lowercase();
        let lexeme = match kind {
            Kind::Letters => english::stem_kept(&lower),
            Kind::Numeric => Some(Rc::from(lower.as_str())),
        };
        if let Some(l) = lexeme {
            entries.push((l, position));
        }
    }
    // Lexemes in byte order (they are ASCII: Postgres' order too), each with its positions in
    // order.
    entries.sort_unstable();
    Tsvector::of_sorted(&entries)
}

/// `mnemo_episode_lexemes(payload)`, or None when Postgres has to compute it.
pub fn episode_lexemes(payload: &Map<String, Value>) -> Option<Tsvector> {
    english_tsvector(&text::episode_text(payload)?)
}

/// Where episodes' lexemes are computed (`MNEMO_LEXEMES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LexemesAt {
    /// By the server where it is sure of them (checked against the database), else by Postgres.
    #[default]
    Server,
    /// Always by Postgres, in the insert statement.
    Postgres,
}

/// Probe payloads that exercise every rule of `words` and `text`: words and stop words,
/// stems, numbers, hyphenated words, separators in the places where they stay separators,
/// escapes, and each field of the episode text.
pub const PROBES: &[&str] = &[
    r#"{"messages": [{"role": "user", "content": "Hey Mel! I'm swamped with the kids & work. What's up?"}]}"#,
    r#"{"messages": [{"content": "A state-of-the-art, well-known x-ray; self- care -- wait... what?", "name": "Ann"}]}"#,
    r#"{"messages": [{"content": "Running 42 miles at 10am (really): 1,000 people, 5% off, $30 #tag @bob foo_bar"}]}"#,
    r#"{"messages": [{"content": "Say \"hi\"\n\tnow\\ please\u0001 generously connected relational"}], "speaker": "Bo"}"#,
    r#"{"text": "Caresses ponies ties cats; agreed plastered motoring sing conflated troubled sized hopping tanned falling hissing fizzed failing filing happy sky", "author": "Dee", "content": "formality sensitivity sensibility triplicate formative formalize electriciti hopeful goodness"}"#,
    r#"{"messages": [{"content": "ONE-ON-ONE Covid in-the-know: grade_A is fine", "speaker": "Eve"}, {"content": "generalizations oscillators"}]}"#,
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The text form of what [`english_tsvector`] makes.
    fn english(text: &str) -> Option<String> {
        english_tsvector(text).map(|t| t.to_string())
    }

    #[test]
    fn a_text_becomes_the_tsvector_postgres_makes() {
        // As `to_tsvector('english', …)` gives them.
        assert_eq!(english("The Fat Rats").as_deref(), Some("'fat':2 'rat':3"));
        assert_eq!(english("don't stop").as_deref(), Some("'stop':3"));
        assert_eq!(
            english("a state-of-the-art design, one-on-one").as_deref(),
            Some("'art':6 'design':7 'one':9,11 'one-on-on':8 'state':3 'state-of-the-art':2")
        );
        assert_eq!(english("Running 10AM 1,000 run").as_deref(), Some("'000':4 '1':3 '10am':2 'run':1,5"));
        assert_eq!(english("").as_deref(), Some(""));
        assert_eq!(english("the a of").as_deref(), Some(""));
        assert_eq!(english("see node.js"), None);
    }

    #[test]
    fn limits_postgres_applies_are_left_to_it() {
        assert_eq!(english(&"ab".repeat(200)), None);
        assert_eq!(english(&"cat ".repeat(300)), None);
        assert!(english(&"cat ".repeat(256)).is_some());
        assert_eq!(english(&"x ".repeat(MAX_POSITION + 1)), None);
    }

    #[test]
    fn an_episode_payload_is_read_as_mnemo_episode_text_reads_it() {
        let p = json!({"messages": [{"role": "user", "content": "Hello\nworld"}], "speaker": "Ann"});
        assert_eq!(
            episode_lexemes(p.as_object().unwrap()).map(|t| t.to_string()).as_deref(),
            Some("'ann':3 'hello':1 'nworld':2")
        );
    }

    #[test]
    fn every_probe_is_one_the_rules_answer() {
        for p in PROBES {
            let v: Value = serde_json::from_str(p).unwrap();
            assert!(episode_lexemes(v.as_object().unwrap()).is_some(), "{p}");
        }
    }
}
