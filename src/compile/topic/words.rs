//! The English the same-topic judge reads (`topic.json`), and matching a phrase on word
//! boundaries.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock};

use serde::Deserialize;

/// The word lists of `topic.json` (with a tenant's own words, [`Words::extended`]).
#[derive(Debug, Clone, Deserialize)]
pub struct Words {
    pub(super) change: Vec<String>,
    pub(super) retraction: Vec<String>,
    pub(super) request: Vec<String>,
    pub(super) asking: Vec<String>,
    pub(super) screens: Vec<String>,
    /// Phrases holding a screen's words that screen nothing ("going to the gym", "I'd rather"):
    /// taken out before the screens are looked for.
    pub(super) not_screens: Vec<String>,
    /// Replies to the assistant's answer ("got it", "makes sense"): they assert nothing.
    pub(super) replies: Vec<String>,
    /// Questions to the assistant without their mark ("how do I …"); with `asking`, read by `sentence::asks`.
    pub(super) asks: Vec<String>,
    /// Words that open a clause before its subject ("so", "and", "oh").
    pub(super) openers: Vec<String>,
    /// Other people ("my sister", "a customer of ours"): a clause about them states their
    /// things, not the user's. Read with `clause_screens` by the judge.
    pub(super) others: Vec<String>,
    /// Pronouns that may open a clause as its subject ("she", "they"): after a clause about
    /// someone else, the next clause they open is about that person too.
    pub(super) pronouns: Vec<String>,
    /// What joins the user to another person in one subject ("my wife and I"): the clause is
    /// the user's too.
    pub(super) with_user: Vec<String>,
    /// What screens a clause besides other people (another instance, the past, a trial).
    pub(super) clause_screens: Vec<String>,
    pub(super) reported: Vec<String>,
    /// A message that adds a value beside the others ("also", "added"): it replaces none of a
    /// multi-valued attribute's.
    pub(super) adding: Vec<String>,
    pub(super) keeping: Vec<String>,
    pub(super) negation: Vec<String>,
    pub(super) question_words: Vec<String>,
    pub(super) ending: Vec<String>,
    /// Words after an ended value that bring in what replaces it ("dropped Jenkins for
    /// CircleCI", "replaced flake8 with ruff").
    pub(super) replacing: Vec<String>,
    /// Words an ending word's reach stops at (the `replacing` words among them).
    pub(super) ending_stops: Vec<String>,
    /// Words that join an attribute to the value it is given ("the VAT number is GB …",
    /// "Lucia is my coach"): a plain sentence restates a value only so.
    pub(super) linking: Vec<String>,
    /// Articles and possessives that may stand beside a linking word ("is *my* coach").
    pub(super) link_fillers: Vec<String>,
    pub(super) not_topic: Vec<String>,
    pub(super) topics: Vec<Vec<String>>,
    pub(super) numbers: Vec<String>,
    pub(super) times: Vec<String>,
    pub(super) abbreviations: Vec<String>,
    /// Single words that are never topic words: `not_topic`, the change words and negations.
    #[serde(skip)]
    pub(super) not_topic_words: BTreeSet<String>,
}

/// A tenant's own words for the judge (`update_words` in its configuration, checked there):
/// each list adds to the built-in one of the same name in `topic.json`.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize, PartialEq, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateWords {
    /// Words that mark a change ("rebaselined").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub change: Vec<String>,
    /// Words that end a value with none after it ("sunset").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retraction: Vec<String>,
    /// Requests to change a value ("please repoint").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub request: Vec<String>,
    /// Phrases that screen a whole sentence as no change (plans: "in the pilot").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub screens: Vec<String>,
    /// Phrases that screen their clause ("for the staging stack").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clause_screens: Vec<String>,
    /// Words that never name a topic ("ticket", "sprint").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_topic: Vec<String>,
    /// Words of a message that adds a value beside the others ("onboarded"): it replaces none
    /// of a multi-valued attribute's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adding: Vec<String>,
}

impl Words {
    /// These lists with a tenant's words added (lower-cased, trimmed, each once).
    pub fn extended(&self, extra: &UpdateWords) -> Words {
        let mut w = self.clone();
        let add = |list: &mut Vec<String>, more: &[String]| {
            for p in more.iter().map(|p| p.trim().to_lowercase()).filter(|p| !p.is_empty()) {
                if !list.contains(&p) {
                    list.push(p);
                }
            }
        };
        add(&mut w.change, &extra.change);
        add(&mut w.retraction, &extra.retraction);
        add(&mut w.request, &extra.request);
        add(&mut w.screens, &extra.screens);
        add(&mut w.clause_screens, &extra.clause_screens);
        add(&mut w.not_topic, &extra.not_topic);
        add(&mut w.adding, &extra.adding);
        w.finish()
    }

    fn finish(mut self) -> Words {
        for o in &self.others {
            if !self.clause_screens.contains(o) {
                self.clause_screens.push(o.clone());
            }
        }
        self.not_topic_words = self
            .not_topic
            .iter()
            .chain(&self.change)
            .chain(&self.negation)
            .filter(|p| !p.contains(' '))
            .cloned()
            .collect();
        self
    }
}

/// The built-in lists.
pub static BUILT_IN: LazyLock<Arc<Words>> = LazyLock::new(|| {
    #[allow(clippy::expect_used)] // compiled-in data, covered by the tests below
    let w: Words = serde_json::from_str(include_str!("topic.json")).expect("topic.json is valid");
    Arc::new(w.finish())
});

thread_local! {
    /// The lists of the compile running on this thread ([`with_words`]); None: the built-in.
    static CURRENT: RefCell<Option<Arc<Words>>> = const { RefCell::new(None) };
}

/// The lists the judge reads now: the tenant's, inside [`with_words`], else the built-in.
pub(super) fn words() -> Arc<Words> {
    CURRENT.with(|c| c.borrow().clone()).unwrap_or_else(|| Arc::clone(&BUILT_IN))
}

/// Runs `f` (synchronous: the judge never awaits) with `words` as the lists the judge reads.
pub fn with_words<R>(words: &Arc<Words>, f: impl FnOnce() -> R) -> R {
    struct Reset(Option<Arc<Words>>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = previous);
        }
    }
    let _reset = Reset(CURRENT.with(|c| c.borrow_mut().replace(Arc::clone(words))));
    f()
}

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
