//! How a change bears on one earlier statement: the topic words the two share, and whether a
//! value shows the change.

use std::collections::BTreeSet;

use super::sentence::Mark;
use super::terms::{value_shape, Terms};
use super::words::has;
use crate::compile::attributes::Shape;

/// Longest sentence (in words) the judge reads as a statement about one thing.
const MAX_WORDS: usize = 30;

/// How a change bears on one earlier statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Bearing {
    /// Topic words shared.
    pub(super) shared: usize,
    /// Whether a value shows the change (else it only shares the topic).
    pub(super) strong: bool,
    /// What it does to the earlier value.
    pub(super) mark: Mark,
}

/// An earlier statement as [`about`] weighs a change against it.
#[derive(Clone, Copy)]
pub(super) struct Old<'a> {
    /// The terms of one of its sentences.
    pub(super) terms: &'a Terms,
    /// Its claimed value, for a claimed fact.
    pub(super) value: Option<&'a str>,
    /// Its claim's attribute holds several values at once.
    pub(super) multi: bool,
    /// The attribute's own words (not what the value is for).
    pub(super) named: &'a BTreeSet<String>,
    /// The change's message adds a value rather than replacing one ("also", "added").
    pub(super) adding: bool,
}

/// How a change bears on `old`; None when it is not about it. `sentence` holds the change's
/// terms, `message` those of the whole message (the new value may sit in the next sentence:
/// "new laptop day! MacBook Air M3"). A value of `old` the message names next to a word that
/// ends it ("moved off DigitalOcean") is not restated.
pub(super) fn about(sentence: &Terms, message: &Terms, mark: Mark, old: &Old<'_>) -> Option<Bearing> {
    let Old { terms: old, value, multi, named, adding } = *old;
    let mut shared = sentence.topic.intersection(&old.topic).count();
    if multi {
        if sentence.words > MAX_WORDS || old.words > MAX_WORDS {
            return None;
        }
        // One value among several: a change that names it as ended bears on it.
        let ended = value.is_some_and(|v| {
            let words: Vec<&str> = v.split_whitespace().collect();
            !words.is_empty() && words.iter().all(|w| message.ended.contains(*w))
        });
        if ended {
            return Some(Bearing { shared: shared.max(1), strong: true, mark });
        }
        // So does a replacement (nothing added) that shares what the value is for, beyond the
        // attribute's own words ("we use yarn in the monorepo", then "migrated the monorepo to
        // pnpm"): one value per purpose, judged as a single value below.
        let purpose = sentence.topic.intersection(&old.topic).any(|w| !named.contains(w));
        if adding || !purpose {
            return None;
        }
    }
    // A message that adds a value beside the others ("we added Redis to the orders service")
    // replaces only a single-valued claim's value, and only one it names the attribute of ("we
    // also adopted a cat" changes no dog).
    if adding && (value.is_none() || !sentence.topic.iter().any(|w| named.contains(w))) {
        return None;
    }
    let restated = |v: &str| message.all.contains(v) && !message.ended.contains(v);
    let old_only: Vec<&String> = old.values.iter().filter(|v| !restated(v)).collect();
    let new_only: Vec<&String> =
        message.values.iter().filter(|v| !old.all.contains(*v) && !message.ended.contains(*v)).collect();
    // Two values of one exact form (two email addresses, two IPs) name the same kind of thing.
    let exact = |o: &&String| {
        let sh = value_shape(o);
        sh.is_exact() && new_only.iter().any(|n| value_shape(n) == sh)
    };
    // So does a value of it the change names as ended ("CI runs on Jenkins", then "we dropped
    // Jenkins for CircleCI"), with no topic word shared.
    if shared == 0 && (old_only.iter().any(exact) || old.values.iter().any(|v| message.ended.contains(v))) {
        shared = 1;
    }
    // A long sentence shares some word with nearly anything: a statement about one thing is
    // short.
    if shared == 0 || sentence.words > MAX_WORDS || old.words > MAX_WORDS {
        return None;
    }
    // A retraction that also gives a new value is a change ("stopped X, now Y").
    let mark = if mark == Mark::Retraction && !new_only.is_empty() { Mark::Change } else { mark };
    let fresh = message.all.iter().any(|v| !old.all.contains(v) && !message.ended.contains(v));
    let loose = |s: Shape| matches!(s, Shape::Name | Shape::Text);
    let alike = |o: Shape, n: Shape| o == n || (loose(o) && loose(n));
    let strong = match value {
        // A claimed fact: its value must not be restated, and (for a change) something new said.
        Some(v) => !has(&message.kept, v) && (mark == Mark::Retraction || fresh),
        // A plain statement: it holds a value the change does not, of a shape the change gives
        // a different one of.
        None => {
            let compatible = old_only.iter().any(|o| new_only.iter().any(|n| alike(value_shape(o), value_shape(n))));
            // Or a value or word of it the change names as ended, with something new in its
            // place ("replaced prettier with biome"), whatever the two look like.
            let ended = |w: &String| !w.starts_with('#') && message.ended.contains(w);
            let replaced = old.values.iter().chain(&old.topic).any(ended) && !new_only.is_empty();
            (!old_only.is_empty() && (mark == Mark::Retraction || compatible)) || replaced
        }
    };
    Some(Bearing { shared, strong, mark })
}
