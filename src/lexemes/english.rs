//! The lexemes Postgres' `english` text-search configuration makes of single words: of a task's
//! content words (`bundle::terms::content_words`), so a server can rank a large
//! subject's lexical lanes before its call (`services::context::lexical`), and of the words of an
//! episode's text ([`super::english_tsvector`]).
//!
//! Content words are lower-case runs of letters and digits. Postgres parses a run of ASCII
//! letters as `asciiword`, which the `english_stem` dictionary drops when it is a stop word and
//! otherwise stems (Snowball's English stemmer, which `rust-stemmers` implements); a run holding
//! digits (`uint`, `numword`) goes to the `simple` dictionary, which keeps it as it is. Any other
//! word (one with a letter outside ASCII) is not guessed. A guess is only ever an optimisation:
//! the call's statement computes the lexemes itself and uses the server's lanes only when the
//! two lists are equal.

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;
use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};

/// `english.stop`, the stop words of Postgres' `english_stem` dictionary (Snowball's list).
const STOP_WORDS: [&str; 127] = [
    "i",
    "me",
    "my",
    "myself",
    "we",
    "our",
    "ours",
    "ourselves",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "he",
    "him",
    "his",
    "himself",
    "she",
    "her",
    "hers",
    "herself",
    "it",
    "its",
    "itself",
    "they",
    "them",
    "their",
    "theirs",
    "themselves",
    "what",
    "which",
    "who",
    "whom",
    "this",
    "that",
    "these",
    "those",
    "am",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "have",
    "has",
    "had",
    "having",
    "do",
    "does",
    "did",
    "doing",
    "a",
    "an",
    "the",
    "and",
    "but",
    "if",
    "or",
    "because",
    "as",
    "until",
    "while",
    "of",
    "at",
    "by",
    "for",
    "with",
    "about",
    "against",
    "between",
    "into",
    "through",
    "during",
    "before",
    "after",
    "above",
    "below",
    "to",
    "from",
    "up",
    "down",
    "in",
    "out",
    "on",
    "off",
    "over",
    "under",
    "again",
    "further",
    "then",
    "once",
    "here",
    "there",
    "when",
    "where",
    "why",
    "how",
    "all",
    "any",
    "both",
    "each",
    "few",
    "more",
    "most",
    "other",
    "some",
    "such",
    "no",
    "nor",
    "not",
    "only",
    "own",
    "same",
    "so",
    "than",
    "too",
    "very",
    "s",
    "t",
    "can",
    "will",
    "just",
    "don",
    "should",
    "now",
];

static STEMMER: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// [`STOP_WORDS`] for lookups (an episode's text asks once a word).
static STOP_SET: LazyLock<HashSet<&'static str>> = LazyLock::new(|| STOP_WORDS.into_iter().collect());

/// What `english_stem` makes of a lower-case word of ASCII letters (hyphens joining them allowed,
/// as in a hyphenated word's whole): None for a stop word.
pub(crate) fn stem(word: &str) -> Option<String> {
    if STOP_SET.contains(word) {
        return None;
    }
    Some(STEMMER.stem(word).into_owned())
}

/// Words stemmed lately on this thread. Prose repeats its words, and Snowball allocates and
/// walks its rules for each: an episode's words cost a third as much from here.
const STEMS_KEPT: usize = 4096;

thread_local! {
    static STEMS: RefCell<quick_cache::unsync::Cache<String, Option<Rc<str>>>> =
        RefCell::new(quick_cache::unsync::Cache::new(STEMS_KEPT));
}

/// [`stem`], from this thread's recent words when it is one of them.
pub(crate) fn stem_kept(word: &str) -> Option<Rc<str>> {
    STEMS.with(|stems| {
        let mut stems = stems.borrow_mut();
        if let Some(s) = stems.get(word) {
            return s.clone();
        }
        let s: Option<Rc<str>> = stem(word).map(Rc::from);
        stems.insert(word.to_owned(), s.clone());
        s
    })
}

/// The lexeme of one lower-case content word: `Some(None)` for a stop word, `None` when the word
/// is not one this module can tell.
pub fn lexeme(word: &str) -> Option<Option<String>> {
    if word.is_empty() || !word.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
        return None;
    }
    if word.bytes().any(|b| b.is_ascii_digit()) {
        return Some(Some(word.to_string()));
    }
    Some(stem(word))
}

/// The distinct lexemes of `words` in byte order, or None when one of them cannot be told.
pub fn lexemes(words: &[String]) -> Option<Vec<String>> {
    let mut out = Vec::with_capacity(words.len());
    for w in words {
        if let Some(l) = lexeme(w)? {
            out.push(l);
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(ws: &[&str]) -> Vec<String> {
        ws.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn words_are_stemmed_stop_words_dropped_and_numbers_kept() {
        // As `to_tsvector('english', '214 | abc123 | docs | onboarding | running | the')` makes them.
        let got = lexemes(&words(&["214", "abc123", "docs", "onboarding", "running", "the", "docs"])).unwrap();
        assert_eq!(got, ["214", "abc123", "doc", "onboard", "run"]);
        assert_eq!(lexeme("through"), Some(None));
        assert_eq!(lexeme("kafka"), Some(Some("kafka".into())));
    }

    #[test]
    fn words_it_cannot_tell_make_no_guess() {
        assert_eq!(lexeme("café"), None);
        assert_eq!(lexeme("Kafka"), None, "content words come lower-cased");
        assert_eq!(lexeme(""), None);
        assert_eq!(lexemes(&words(&["deploy", "naïve"])), None);
        assert_eq!(lexemes(&[]), Some(Vec::new()));
    }
}
