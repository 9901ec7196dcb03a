//! The English the same-topic judge reads (`topic.json`), and matching a phrase on word
//! boundaries.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use serde::Deserialize;

/// The word lists of `topic.json`.
#[derive(Debug, Deserialize)]
pub(super) struct Words {
    pub(super) change: Vec<String>,
    pub(super) retraction: Vec<String>,
    pub(super) request: Vec<String>,
    pub(super) asking: Vec<String>,
    pub(super) screens: Vec<String>,
    /// Replies to the assistant's answer ("got it", "makes sense"): they assert nothing.
    pub(super) replies: Vec<String>,
    /// Questions to the assistant without their mark ("how do I …"); with `asking`, read by `sentence::asks`.
    pub(super) asks: Vec<String>,
    pub(super) clause_screens: Vec<String>,
    pub(super) reported: Vec<String>,
    pub(super) keeping: Vec<String>,
    pub(super) negation: Vec<String>,
    pub(super) question_words: Vec<String>,
    pub(super) ending: Vec<String>,
    pub(super) not_topic: Vec<String>,
    pub(super) topics: Vec<Vec<String>>,
    pub(super) numbers: Vec<String>,
    pub(super) times: Vec<String>,
    pub(super) abbreviations: Vec<String>,
}

pub(super) static WORDS: LazyLock<Words> = LazyLock::new(|| {
    #[allow(clippy::expect_used)] // compiled-in data, covered by the tests below
    serde_json::from_str(include_str!("topic.json")).expect("topic.json is valid")
});

pub(super) static NOT_TOPIC: LazyLock<BTreeSet<&'static str>> = LazyLock::new(|| {
    let w = &*WORDS;
    w.not_topic.iter().chain(&w.change).chain(&w.negation).map(String::as_str).filter(|p| !p.contains(' ')).collect()
});

/// Whether `text` (lower-cased) holds `phrase` on word boundaries; "a ... b" is a then b.
pub(super) fn has(text: &str, phrase: &str) -> bool {
    if let Some((a, b)) = phrase.split_once(" ... ") {
        return find(text, a).is_some_and(|i| find(&text[i + a.len()..], b).is_some());
    }
    find(text, phrase).is_some()
}

pub(super) fn find(text: &str, phrase: &str) -> Option<usize> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric());
    let mut from = 0;
    while let Some(i) = text[from..].find(phrase).map(|i| i + from) {
        let before = text[..i].chars().next_back();
        let after = text[i + phrase.len()..].chars().next();
        // "n't" is glued to its verb.
        if (phrase.starts_with('n') && phrase.contains('\'') || !word(before)) && !word(after) {
            return Some(i);
        }
        from = i + phrase.len().max(1);
    }
    None
}

pub(super) fn any(text: &str, list: &[String]) -> bool {
    list.iter().any(|p| has(text, p))
}
