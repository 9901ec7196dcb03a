//! The same-topic judge: a later statement by the user about the same thing as an earlier one,
//! with a different value, retires the earlier one, whatever words either was said in.
//!
//! Extraction rules see one sentence and know its phrasings; this judge needs none. It reads
//! each sentence of a new user message and asks, in order:
//! 1. is it a change at all? A sentence that marks a change, a retraction or a request to
//!    change (the word lists of `topic.json`) and is none of the look-alikes (someone else's
//!    thing, a plan, a hypothetical, a hedge, another instance, a one-off, a question that is
//!    not a request, a negation that is not a retraction);
//! 2. which earlier statement is it about? One that shares a topic word with it (stemmed, stop
//!    words, fillers and change words out, values masked) and holds a value it does not: the
//!    earlier fact's claimed value, or a value-shaped token (a number, an address, a name) of a
//!    shape the new sentence also gives a different one of;
//! 3. is that earlier statement the only one? The best-sharing earlier message must be unique,
//!    else nothing is retired (an ambiguous change stays a plain record: omission over a wrong
//!    supersession).
//!
//! The English is data (`topic.json`); this file is the engine. It never sees evidence: callers
//! pass only the user's own lines.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use serde::Deserialize;
use uuid::Uuid;

use super::attributes::{shape, Shape};
use super::text::split_sentences;

/// The word lists of `topic.json`.
#[derive(Debug, Deserialize)]
struct Words {
    change: Vec<String>,
    retraction: Vec<String>,
    request: Vec<String>,
    screens: Vec<String>,
    clause_screens: Vec<String>,
    reported: Vec<String>,
    keeping: Vec<String>,
    negation: Vec<String>,
    question_words: Vec<String>,
    ending: Vec<String>,
    not_topic: Vec<String>,
    topics: Vec<Vec<String>>,
    numbers: Vec<String>,
    times: Vec<String>,
    abbreviations: Vec<String>,
}

static WORDS: LazyLock<Words> = LazyLock::new(|| {
    #[allow(clippy::expect_used)] // compiled-in data, covered by the tests below
    serde_json::from_str(include_str!("topic.json")).expect("topic.json is valid")
});

static NOT_TOPIC: LazyLock<BTreeSet<&'static str>> = LazyLock::new(|| {
    let w = &*WORDS;
    w.not_topic.iter().chain(&w.change).chain(&w.negation).map(String::as_str).filter(|p| !p.contains(' ')).collect()
});

/// What a sentence does to an earlier value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// Gives the thing a new value ("the movers dropped everything at our new place in Boise").
    Change,
    /// Ends the value with none after it ("we're no longer on Azure").
    Retraction,
}

/// An earlier memory of the user's own words that a change may retire.
#[derive(Debug, Clone)]
pub struct Older {
    pub id: Uuid,
    /// Memories of one message share it (the episode they came from).
    pub group: String,
    /// The user's words (a fact, or the user lines of a summary).
    pub text: String,
    /// The normalised value of a single-valued claim the memory carries.
    pub value: Option<String>,
    /// The words that name the claim's attribute (`attributes.json`), for a claimed fact.
    pub key_words: Vec<String>,
}

/// A new message of the user's.
#[derive(Debug, Clone)]
pub struct Newer {
    pub group: String,
    /// The memory that stands for the message (its summary), the successor of what it retires.
    pub successor: Option<Uuid>,
    pub text: String,
}

/// One earlier memory retired by a newer message.
#[derive(Debug, Clone, PartialEq)]
pub struct Retirement {
    pub older: Uuid,
    /// None for a retraction: nothing replaces the value.
    pub newer: Option<Uuid>,
    pub mark: Mark,
    /// How many topic words the two statements share.
    pub shared: usize,
}

/// Whether `text` (lower-cased) holds `phrase` on word boundaries; "a ... b" is a then b.
fn has(text: &str, phrase: &str) -> bool {
    if let Some((a, b)) = phrase.split_once(" ... ") {
        return find(text, a).is_some_and(|i| find(&text[i + a.len()..], b).is_some());
    }
    find(text, phrase).is_some()
}

fn find(text: &str, phrase: &str) -> Option<usize> {
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

fn any(text: &str, list: &[String]) -> bool {
    list.iter().any(|p| has(text, p))
}

/// What a sentence is to the judge.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Class {
    /// A look-alike (or a question): it changes nothing, and its words count for nothing.
    Screened,
    /// A plain statement: a change when another sentence of its message marks one.
    Plain(String),
    /// A change or retraction, with the words of its clauses that are not screened.
    Marked(Mark, String),
}

/// Lower-cases a clause and masks its values: "kim@work.example" is no example.
fn masked(clause: &str) -> String {
    let words: Vec<String> = clause
        .split_whitespace()
        .map(|t| {
            let t = t.trim_end_matches(['.', ',', ';', ':', '!', '?', ')']);
            if t.contains(['@', '/']) || t.contains('.') {
                "_".to_string()
            } else {
                t.to_lowercase().replace('’', "'")
            }
        })
        .collect();
    words.join(" ")
}

/// The clauses of a sentence: split at commas, semicolons, colons, dashes and brackets.
fn clauses(sentence: &str) -> Vec<String> {
    let spaced = sentence.replace(" - ", " — ").replace(" – ", " — ");
    spaced
        .split([',', ';', '—', '(', ')'])
        .flat_map(|c| c.split(": "))
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect()
}

/// A question that opens with a statement ("We downgraded to Basic, so why was I charged
/// more?"): the statement, when there is one.
fn statement_before_question(sentence: &str) -> Option<String> {
    let w = &*WORDS;
    let parts = clauses(sentence);
    let asks = |c: &String| {
        let m = masked(c);
        let m = ["so ", "but ", "and ", "then "].iter().fold(m.as_str(), |m, p| m.strip_prefix(p).unwrap_or(m));
        w.question_words.iter().any(|q| find(m, q) == Some(0))
    };
    let at = parts.iter().position(asks)?;
    (at > 0).then(|| parts[..at].join(", "))
}

fn classify_sentence(sentence: &str, question: bool) -> Class {
    let w = &*WORDS;
    let whole = masked(sentence);
    if question && !any(&whole, &w.request) {
        return match statement_before_question(sentence) {
            Some(head) => classify_sentence(&head, false),
            None => Class::Screened,
        };
    }
    if any(&whole, &w.screens) || quotes(sentence) {
        return Class::Screened;
    }
    // "my aunt texted me, my new email is …": the rest of the sentence is her words.
    let others = clauses(sentence).iter().any(|c| any(&masked(c), &w.clause_screens));
    if others && any(&whole, &w.reported) {
        return Class::Screened;
    }
    // Someone else's thing, another instance, the past, a negation: that clause says nothing.
    let kept: Vec<String> = clauses(sentence)
        .into_iter()
        .filter(|c| {
            let m = masked(c);
            !any(&m, &w.clause_screens) && (!any(&m, &w.negation) || any(&m, &w.retraction))
        })
        .collect();
    if kept.is_empty() {
        return Class::Screened;
    }
    let text = kept.join(", ");
    let m = masked(&text);
    if any(&m, &w.retraction) {
        Class::Marked(Mark::Retraction, text)
    } else if any(&m, &w.request) || any(&m, &w.change) {
        Class::Marked(Mark::Change, text)
    } else {
        Class::Plain(text)
    }
}

/// Whether a sentence quotes something: double quotes, backticks, or a single quote opening
/// a word (an apostrophe inside a word is no quote).
fn quotes(sentence: &str) -> bool {
    sentence.contains(['"', '`', '“', '‘'])
        || sentence.split_whitespace().any(|t| t.starts_with('\'') || (t.ends_with('\'') && !t.ends_with("s'")))
}

/// Whether a sentence changes a value of the user's own, and how; None for anything else.
pub fn classify(sentence: &str, question: bool) -> Option<Mark> {
    match classify_sentence(sentence, question) {
        Class::Marked(m, _) => Some(m),
        _ => None,
    }
}

/// The sentences of a text; an abbreviation's full stop ("Dr. Quint") ends none.
fn sentences(text: &str) -> Vec<(String, bool)> {
    let mut t = text.to_string();
    for a in &WORDS.abbreviations {
        for cased in [a.clone(), capitalised(a)] {
            t = t.replace(&format!(" {cased}. "), &format!(" {cased} "));
            if t.starts_with(&format!("{cased}. ")) {
                t = format!("{cased} {}", &t[cased.len() + 2..]);
            }
        }
    }
    split_sentences(&t)
}

fn capitalised(w: &str) -> String {
    let mut c = w.chars();
    c.next().map(|f| f.to_uppercase().collect::<String>() + c.as_str()).unwrap_or_default()
}

/// A sentence's topic words (stemmed, plus the topic groups of `topic.json`), its values
/// (value-shaped tokens, number and time words, capitalised names) and which of its terms sit
/// next to a word that ends them ("moved off DigitalOcean", "LaunchDarkly anymore").
#[derive(Debug, Default)]
struct Terms {
    topic: BTreeSet<String>,
    values: BTreeSet<String>,
    all: BTreeSet<String>,
    ended: BTreeSet<String>,
    /// The sentence lower-cased without the words an ending word reaches.
    kept: String,
}

/// How far (in words) an ending word reaches.
const ENDING_REACH: usize = 3;

/// The tokens of a sentence, a run of tokens with digits joined ("0161 496 0734").
fn tokens(sentence: &str) -> Vec<String> {
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

fn group_of(word: &str) -> Option<String> {
    WORDS.topics.iter().find(|g| g.iter().any(|w| w == word)).map(|g| format!("#{}", g[0]))
}

fn terms(sentence: &str) -> Terms {
    let w = &*WORDS;
    let mut t = Terms::default();
    let toks = tokens(sentence);
    let lowers: Vec<String> = toks.iter().map(|x| x.to_lowercase().replace('’', "'")).collect();
    let ending: Vec<usize> =
        lowers.iter().enumerate().filter(|(_, l)| w.ending.iter().any(|e| e == *l)).map(|(i, _)| i).collect();
    for (n, (tok, lower)) in toks.iter().zip(&lowers).enumerate() {
        let ended = ending.iter().any(|&e| e != n && e.abs_diff(n) <= ENDING_REACH);
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
        let word = lower.trim_end_matches("'s").trim_end_matches('\'');
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
        if word.chars().count() < 2 || NOT_TOPIC.contains(word) || NOT_TOPIC.contains(lower.as_str()) {
            continue;
        }
        let Some(Some(stem)) = crate::lexemes::english::lexeme(word) else { continue };
        let name = n > 0 && tok.chars().next().is_some_and(char::is_uppercase);
        add(&mut t, stem, name, true);
    }
    t
}

/// The shape of a value token: a weekday or month is a time, a number word a number.
fn value_shape(v: &str) -> Shape {
    if WORDS.times.iter().any(|x| x == v) {
        Shape::Time
    } else if WORDS.numbers.iter().any(|x| x == v) {
        Shape::Number
    } else {
        shape(v)
    }
}

/// How a change bears on one earlier statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bearing {
    /// Topic words shared.
    shared: usize,
    /// Whether a value shows the change (else it only shares the topic).
    strong: bool,
    /// What it does to the earlier value.
    mark: Mark,
}

/// How a change bears on `old`; None when it is not about it. `sentence` holds the change's
/// terms, `message` those of the whole message (the new value may sit in the next sentence:
/// "new laptop day! MacBook Air M3"). A value of `old` the message names next to a word that
/// ends it ("moved off DigitalOcean") is not restated.
fn about(sentence: &Terms, message: &Terms, mark: Mark, old: &Terms, value: Option<&str>) -> Option<Bearing> {
    let mut shared = sentence.topic.intersection(&old.topic).count();
    let restated = |v: &str| message.all.contains(v) && !message.ended.contains(v);
    let old_only: Vec<&String> = old.values.iter().filter(|v| !restated(v)).collect();
    let new_only: Vec<&String> =
        message.values.iter().filter(|v| !old.all.contains(*v) && !message.ended.contains(*v)).collect();
    // Two values of one exact form (two email addresses, two IPs) name the same kind of thing.
    let exact = |o: &&String| {
        let sh = value_shape(o);
        sh.is_exact() && new_only.iter().any(|n| value_shape(n) == sh)
    };
    if shared == 0 && old_only.iter().any(exact) {
        shared = 1;
    }
    if shared == 0 {
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
            !old_only.is_empty() && (mark == Mark::Retraction || compatible)
        }
    };
    Some(Bearing { shared, strong, mark })
}

/// The retirements the newer messages make among the older memories (earlier messages only,
/// in order: each newer message also sees the ones before it that survive).
pub fn judge(newer: &[Newer], older: &[Older]) -> Vec<Retirement> {
    let olds: Vec<(&Older, Vec<Terms>)> = older
        .iter()
        .map(|o| {
            let mut ts: Vec<Terms> = sentences(&o.text).iter().map(|(s, _)| terms(s)).collect();
            // The attribute's own words, not their topic groups ("place of work" is no home).
            let named = terms(&o.key_words.join(". "));
            for t in &mut ts {
                t.topic.extend(named.topic.iter().filter(|w| !w.starts_with('#')).cloned());
            }
            (o, ts)
        })
        .collect();
    let mut retired: BTreeSet<Uuid> = BTreeSet::new();
    let mut out = Vec::new();
    for n in newer {
        let classes: Vec<Class> = sentences(&n.text).iter().map(|(s, q)| classify_sentence(s, *q)).collect();
        let marked = classes.iter().find_map(|c| match c {
            Class::Marked(m, _) => Some(*m),
            _ => None,
        });
        let Some(message_mark) = marked else { continue };
        // The message's words, screened sentences and clauses left out.
        let said: Vec<&str> = classes
            .iter()
            .filter_map(|c| match c {
                Class::Marked(_, t) | Class::Plain(t) => Some(t.as_str()),
                Class::Screened => None,
            })
            .collect();
        let message = terms(&said.join(". "));
        // "…but I'm keeping the Corolla": the message keeps the old value.
        if any(&masked(&n.text), &WORDS.keeping) {
            continue;
        }
        for class in &classes {
            let (mark, text) = match class {
                Class::Marked(m, t) => (*m, t),
                Class::Plain(t) => (message_mark, t),
                Class::Screened => continue,
            };
            let new = terms(text);
            // Per earlier message: the memories of it the change bears on.
            let mut by_group: BTreeMap<&str, Vec<(Uuid, Bearing)>> = BTreeMap::new();
            for (o, sentences) in &olds {
                if o.group == n.group || retired.contains(&o.id) {
                    continue;
                }
                let best = sentences
                    .iter()
                    .filter_map(|t| about(&new, &message, mark, t, o.value.as_deref()))
                    .max_by_key(|b| (b.strong, b.shared));
                if let Some(b) = best {
                    by_group.entry(o.group.as_str()).or_default().push((o.id, b));
                }
            }
            // A message is about the change when one of its memories shows it by a value; the
            // one message sharing most topic words is, when it is the only one.
            let score = |items: &Vec<(Uuid, Bearing)>| items.iter().filter(|(_, b)| b.strong).map(|(_, b)| b.shared).max();
            let top = by_group.values().filter_map(score).max().unwrap_or(0);
            let winners: Vec<&Vec<(Uuid, Bearing)>> = by_group.values().filter(|i| score(i) == Some(top)).collect();
            let [items] = winners.as_slice() else { continue };
            for (id, b) in items.iter() {
                retired.insert(*id);
                let newer = if b.mark == Mark::Retraction { None } else { n.successor };
                out.push(Retirement { older: *id, newer, mark: b.mark, shared: top });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn older(n: u128, group: &str, text: &str, value: Option<&str>) -> Older {
        Older {
            id: Uuid::from_u128(n),
            group: group.into(),
            text: text.into(),
            value: value.map(String::from),
            key_words: Vec::new(),
        }
    }

    fn newer(text: &str) -> Vec<Newer> {
        vec![Newer { group: "new".into(), successor: Some(Uuid::from_u128(99)), text: text.into() }]
    }

    #[test]
    fn the_word_lists_load() {
        assert!(!WORDS.change.is_empty() && !WORDS.screens.is_empty());
    }

    #[test]
    fn changes_retractions_and_look_alikes() {
        assert_eq!(classify("we're no longer on Azure", false), Some(Mark::Retraction));
        assert_eq!(classify("I don't eat gluten-free anymore", false), Some(Mark::Retraction));
        assert_eq!(classify("can you change my billing email to kim@work.example", true), Some(Mark::Change));
        assert_eq!(classify("correction: the retro is on Thursday now", false), Some(Mark::Change));
        assert_eq!(classify("my sister just got a new car", false), None);
        assert_eq!(classify("thinking about moving to Oslo next year", false), None);
        assert_eq!(classify("should we switch to Linear", true), None);
        assert_eq!(classify("we're not switching banks", false), None);
        assert_eq!(classify("I like tea", false), None);
    }

    #[test]
    fn a_change_retires_the_one_statement_it_is_about() {
        let old = [older(1, "a", "my laptop is a ThinkPad X1", Some("thinkpad x1")), older(2, "b", "I live in Oslo", None)];
        let r = judge(&newer("new laptop day, a MacBook Air M3"), &old);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].older, Uuid::from_u128(1));
        // The value restated is no change.
        assert!(judge(&newer("finally got the ThinkPad X1 laptop set up now"), &old).is_empty());
        // Two earlier statements equally about it: nothing is retired.
        let two = [older(1, "a", "cache node is 10.0.0.1", None), older(2, "b", "cache node backup is 10.0.0.2", None)];
        assert!(judge(&newer("the cache node is 10.0.0.9 now"), &two).is_empty());
    }

    #[test]
    fn a_plain_statement_needs_a_value_of_the_same_shape() {
        let old = [older(1, "a", "doing 5k runs on weekends", None)];
        assert_eq!(judge(&newer("finally up to 10k on my sunday runs"), &old).len(), 1);
        assert!(judge(&newer("new shoes for the runs arrived"), &old).is_empty());
    }
}
