//! The terms of a sentence as the judge compares them: topic words, values, and what an
//! ending word reaches.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

use super::words::words;
use super::Older;
use crate::compile::attributes::{shape, Shape};

/// A sentence's topic words (stemmed, plus the topic groups of `topic.json`), its values
/// (value-shaped tokens, number and time words, capitalised names) and which of its terms sit
/// next to a word that ends them ("moved off DigitalOcean", "LaunchDarkly anymore").
#[derive(Debug, Default)]
pub(super) struct Terms {
    pub(super) topic: BTreeSet<String>,
    pub(super) values: BTreeSet<String>,
    pub(super) all: BTreeSet<String>,
    pub(super) ended: BTreeSet<String>,
    /// The sentence lower-cased without the words an ending word reaches.
    pub(super) kept: String,
    /// How many tokens the sentence has.
    pub(super) words: usize,
}

/// How far (in words) an ending word reaches.
const ENDING_REACH: usize = 3;

/// The tokens of a sentence, a run of tokens with digits joined ("0161 496 0734").
pub(super) fn tokens(sentence: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut joinable = false;
    for raw in sentence.split_whitespace() {
        let tok = raw.trim_matches(|c: char| !c.is_alphanumeric() && !matches!(c, '~' | '/' | '+' | '@'));
        if tok.is_empty() {
            joinable = false;
            continue;
        }
        let digits = tok.chars().any(|c| c.is_ascii_digit()) && !tok.contains(['@', '/']);
        match out.last_mut() {
            Some(last) if digits && joinable => {
                last.push(' ');
                last.push_str(tok);
            }
            _ => out.push(tok.to_string()),
        }
        // A token ending in punctuation ends a run.
        joinable = digits && raw.ends_with(|c: char| c.is_alphanumeric());
    }
    out
}

/// A token lower-cased, with typographic apostrophes made plain.
fn lowered(tok: &str) -> String {
    tok.to_lowercase().replace('’', "'")
}

/// A lower-cased token without its possessive ("standup's" → "standup").
fn bare(lower: &str) -> &str {
    lower.trim_end_matches("'s").trim_end_matches('\'')
}

fn group_of(word: &str) -> Option<String> {
    words().topics.iter().find(|g| g.iter().any(|w| w == word)).map(|g| format!("#{}", g[0]))
}

pub(super) fn terms(sentence: &str) -> Terms {
    let w = words();
    let mut t = Terms::default();
    let toks = tokens(sentence);
    t.words = toks.len();
    let lowers: Vec<String> = toks.iter().map(|x| lowered(x)).collect();
    let ending: Vec<usize> =
        lowers.iter().enumerate().filter(|(_, l)| w.ending.iter().any(|e| e == *l)).map(|(i, _)| i).collect();
    let replacing: BTreeSet<usize> = ending.iter().flat_map(|&e| replacement(&lowers, e)).collect();
    for (n, (tok, lower)) in toks.iter().zip(&lowers).enumerate() {
        // An ending word reaches a few words either way, never past a word that brings in
        // what follows ("dropped Jenkins for CircleCI": CircleCI is not ended).
        let ended = ending.iter().any(|&e| {
            let between = if e < n { e + 1..n } else { n + 1..e };
            e != n && e.abs_diff(n) <= ENDING_REACH && !lowers[between].iter().any(|l| w.ending_stops.contains(l))
        });
        if !ended {
            t.kept.push_str(lower);
            t.kept.push(' ');
        }
        let add = |t: &mut Terms, term: String, value: bool, topic: bool| {
            if ended {
                t.ended.insert(term.clone());
            }
            if value {
                t.values.insert(term.clone());
            }
            if topic {
                t.topic.insert(term.clone());
            }
            t.all.insert(term);
        };
        let word = bare(lower);
        if let Some(g) = group_of(word) {
            add(&mut t, g, false, true);
        }
        let spoken = w.numbers.iter().chain(&w.times).any(|x| x == word);
        if spoken || tok.chars().any(|c| c.is_ascii_digit()) || tok.contains(['@', '/', '.', '-', '_']) {
            add(&mut t, lower.clone(), true, false);
            // "on-call" still names its topic.
            for part in lower.split(['-', '_']).filter(|p| p.len() >= 3 && p.chars().all(char::is_alphabetic)) {
                if let Some(Some(stem)) = crate::lexemes::english::lexeme(part) {
                    add(&mut t, stem, false, true);
                }
            }
            continue;
        }
        if word.chars().count() < 2 || w.not_topic_words.contains(word) || w.not_topic_words.contains(lower.as_str()) {
            continue;
        }
        let Some(Some(stem)) = crate::lexemes::english::lexeme(word) else { continue };
        let name = n > 0 && tok.chars().next().is_some_and(char::is_uppercase);
        add(&mut t, stem, name || replacing.contains(&n), true);
    }
    t
}

/// Most words between an attribute and the value a plain sentence gives it.
const LINK_REACH: usize = 3;

/// Whether `sentence` gives the attribute named by `named` (stems) the value `value` (a term of
/// it): the two stand at most [`LINK_REACH`] words apart, joined by a linking word ("the VAT
/// number is GB 123", "Standup's at 9:30", "Lucia is my coach") with nothing else between but
/// fillers and other words of the sentence's `values`; not "my coach said Maria is great", nor
/// "the UK role".
pub(super) fn links(sentence: &str, named: &BTreeSet<String>, value: &str, values: &BTreeSet<String>) -> bool {
    let w = words();
    let lowers: Vec<String> = tokens(sentence).iter().map(|x| lowered(x)).collect();
    let stem = |l: &str| crate::lexemes::english::lexeme(bare(l)).flatten().unwrap_or_else(|| bare(l).to_string());
    let attr: Vec<usize> = (0..lowers.len()).filter(|&i| named.contains(&stem(&lowers[i]))).collect();
    let vals: Vec<usize> = (0..lowers.len()).filter(|&i| lowers[i] == value || stem(&lowers[i]) == value).collect();
    attr.iter().any(|&a| {
        vals.iter().any(|&v| {
            let between = if a < v { a + 1..v } else { v + 1..a };
            // Other words of a value ("GB 123 4567 98") and fillers may stand between too; a
            // linking word (or the attribute's own "'s") must: "the UK role" gives no role.
            let between = &lowers[between];
            let allowed = |l: &String| {
                w.linking.contains(l) || w.link_fillers.contains(l) || l == value || values.contains(&stem(l))
            };
            let joined = between.iter().any(|l| w.linking.contains(l)) || (a < v && lowers[a].ends_with("'s"));
            a.abs_diff(v) <= LINK_REACH + 1 && joined && between.iter().all(allowed)
        })
    })
}

/// How many words after a replacing word name the replacement.
const REPLACEMENT_WORDS: usize = 2;

/// The places of the words that replace what the ending word at `e` ends: after the first
/// word within its reach that brings in a replacement, when something stands between the two
/// ("dropped Jenkins for CircleCI", "moved from npm to yarn", "replaced flake8 and black with
/// ruff"), up to `REPLACEMENT_WORDS` words that name something (not `not_topic`), never past
/// the next stop or ending word.
fn replacement(lowers: &[String], e: usize) -> Vec<usize> {
    let w = words();
    let is = |list: &[String], i: usize| list.iter().any(|x| *x == lowers[i]);
    let last = (e + ENDING_REACH + 1).min(lowers.len().saturating_sub(1));
    let Some(stop) = (e + 1..=last).find(|&i| is(&w.replacing, i)) else { return Vec::new() };
    if stop == e + 1 {
        return Vec::new();
    }
    (stop + 1..lowers.len())
        .take_while(|&i| !is(&w.ending_stops, i) && !is(&w.ending, i))
        .filter(|&i| !w.not_topic_words.contains(lowers[i].as_str()))
        .take(REPLACEMENT_WORDS)
        .collect()
}

/// The shape of a value token: a weekday or month is a time, a number word a number.
pub(super) fn value_shape(v: &str) -> Shape {
    // An ordinal ("the 18th", "every 4th week") counts, as a number word does.
    static ORDINAL: LazyLock<Regex> = LazyLock::new(|| crate::patterns::regex(r"^\d+(?:st|nd|rd|th)$"));
    if words().times.iter().any(|x| x == v) {
        Shape::Time
    } else if words().numbers.iter().any(|x| x == v) || ORDINAL.is_match(v) {
        Shape::Number
    } else {
        shape(v)
    }
}

/// Whether a plain sentence gives a claimed single value's attribute a new value: it names the
/// attribute by one of its phrases (every word of it) and holds a value of the old value's
/// shape, other than the old value, joined to the attribute by a linking word
/// ([`links`]). A restatement is an update however it is said ("the VAT number is …",
/// "Standup is 9:30 from Monday on"); a sentence that names the attribute with a value of
/// another kind ("standup was fun, we talked about Kubernetes") restates nothing.
pub(super) fn restates(text: &str, new: &Terms, o: &Older, phrases: &[BTreeSet<String>]) -> bool {
    let Some(old) = o.value.as_deref() else { return false };
    let said = |w: &String| !w.starts_with('#') && (new.topic.contains(w) || new.values.contains(w));
    let phrase = phrases.iter().filter(|p| !p.is_empty() && p.iter().all(said)).max_by_key(|p| p.len());
    let Some(named) = phrase.filter(|_| !o.multi) else { return false };
    // The shapes of the old value's words ("gb 123 4567 89": a name and a number).
    let shapes: Vec<Shape> = tokens(old).iter().map(|t| value_shape(t)).collect();
    let loose = |s: Shape| matches!(s, Shape::Name | Shape::Text);
    new.values.iter().filter(|v| !named.contains(*v) && !old.contains(v.as_str())).any(|v| {
        let s = value_shape(v);
        shapes.iter().any(|o| *o == s || (loose(*o) && loose(s))) && links(text, named, v, &new.values)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attribute_is_linked_to_its_value_only_by_linking_words() {
        let named: BTreeSet<String> = ["coach".to_string()].into();
        let none = BTreeSet::new();
        assert!(links("Lucia is my coach now", &named, "lucia", &none));
        assert!(links("my coach is Lucia", &named, "lucia", &none));
        assert!(!links("my coach said Maria is great", &named, "maria", &none));
        assert!(!links("my coach was Marco", &named, "marco", &none));
        let vat: BTreeSet<String> = ["vat".to_string(), "number".to_string()].into();
        let values: BTreeSet<String> = ["gb".to_string()].into();
        assert!(links("the VAT number is GB 123 4567 98", &vat, "123 4567 98", &values));
        let role: BTreeSet<String> = ["role".to_string()].into();
        assert!(!links("or taking the UK role with a bigger salary", &role, "uk", &none));
    }

    #[test]
    fn what_an_ending_brings_in_is_a_value() {
        let t = terms("we moved from npm to yarn last week");
        assert!(t.ended.contains("npm") && t.values.contains("yarn"), "{t:?}");
        let t = terms("replaced flake8 and black with ruff for both");
        assert!(t.values.contains("ruff") && !t.values.contains("both"), "{t:?}");
        // Nothing ended before the word: no replacement ("switched to tea").
        assert!(!terms("dropped to bed early").values.contains("bed"));
        // A word in no ending's reach brings in nothing.
        assert!(!terms("I cook with garlic").values.contains("garlic"));
    }
}
