//! What a sentence of a new message is to the judge: a change, a retraction, a plain statement
//! or a look-alike, and which of its clauses count.

use super::words::{any, find, words};
use crate::compile::text::split_sentences;

/// What a sentence does to an earlier value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// Gives the thing a new value ("the movers dropped everything at our new place in Boise").
    Change,
    /// Ends the value with none after it ("we're no longer on Azure").
    Retraction,
}

/// What a sentence is to the judge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Class {
    /// A look-alike (or a question): it changes nothing, and its words count for nothing.
    Screened,
    /// A plain statement: a change when another sentence of its message marks one.
    Plain(String),
    /// A change or retraction, with the words of its clauses that are not screened.
    Marked(Mark, String),
    /// A change or retraction of someone else's (`others`: "my daughter switched to Oakridge
    /// Academy"), with who: it may change only what the user said about that same person.
    Theirs(String, Mark, String),
}

/// Lower-cases a clause and masks its values: "kim@work.example" is no example, and a
/// capitalised word inside a clause is a name ("back in New York" says nothing new).
pub(super) fn masked(clause: &str) -> String {
    let mut opens = true;
    let words: Vec<String> = clause
        .split_whitespace()
        .map(|raw| {
            let t = raw.trim_end_matches(['.', ',', ';', ':', '!', '?', ')']);
            let lower = t.to_lowercase().replace('’', "'");
            let named = !opens && t.starts_with(char::is_uppercase) && lower != "i" && !lower.starts_with("i'");
            opens = raw.ends_with(['.', ',', ';', ':', '!', '?']) || raw == "—" || raw == "-";
            if named || t.contains(['@', '/']) || t.contains('.') {
                "_".to_string()
            } else {
                lower
            }
        })
        .collect();
    words.join(" ")
}

/// Longest stretch of a sentence (in words) the judge reads as a statement about one thing.
pub(super) const MAX_WORDS: usize = 30;

/// A sentence as the judge reads it: whole when it is short, else its clauses in runs of at
/// most [`MAX_WORDS`] words ("… I'm off the lisinopril completely now, as of last Tuesday, …"
/// is a short statement inside a long sentence). A clause longer than that stays one run.
pub(super) fn windows(sentence: &str) -> Vec<String> {
    let count = |t: &str| t.split_whitespace().count();
    if count(sentence) <= MAX_WORDS {
        return vec![sentence.to_string()];
    }
    let mut out: Vec<String> = Vec::new();
    let (mut run, mut len): (Vec<String>, usize) = (Vec::new(), 0);
    for c in clauses(sentence) {
        if !run.is_empty() && len + count(&c) > MAX_WORDS {
            out.push(run.join(", "));
            (run, len) = (Vec::new(), 0);
        }
        len += count(&c);
        run.push(c);
    }
    if !run.is_empty() {
        out.push(run.join(", "));
    }
    out
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
    let w = words();
    let parts = clauses(sentence);
    let asks = |c: &String| {
        let m = masked(c);
        w.question_words.iter().any(|q| find(opened(&m), q) == Some(0))
    };
    let at = parts.iter().position(asks)?;
    // "hmm, can I…": a filler is no statement.
    let head = parts[..at].join(", ");
    (head.split_whitespace().count() >= 3).then_some(head)
}

pub(super) fn classify_sentence(sentence: &str, question: bool) -> Class {
    let w = words();
    let whole = masked(sentence);
    // A question is a change only as a request addressed to the assistant ("can you change my
    // billing email to …?"); "do I need to update my scripts?" asks about one.
    if question && !(any(&whole, &w.request) && any(&whole, &w.asking)) {
        return match statement_before_question(sentence) {
            Some(head) => classify_sentence(&head, false),
            None => Class::Screened,
        };
    }
    // "could you switch my email to …": in a request the asking form's "could" or "would" is
    // politeness, not a hedge.
    let request = any(&whole, &w.request) && any(&whole, &w.asking);
    let hedged = if request { hedges(&without(&whole, &w.asking)) } else { hedges(&whole) };
    if hedged || any(&whole, &w.replies) || quotes(sentence) {
        return Class::Screened;
    }
    // "my aunt texted me, my new email is …": from the clause that reports someone else's
    // words on, the sentence is theirs; what comes before it is the user's ("I sold the boat,
    // which my wife says was overdue").
    let parts = clauses(sentence);
    // "Big change: my daughter switched to …": a short label before a colon, which is all the
    // user says of their own when the rest is someone else's.
    let label = match sentence.split_once(": ") {
        Some((head, _)) if parts.len() > 1 && parts[0] == head.trim() && is_label(head) => Some(parts[0].clone()),
        _ => None,
    };
    let mut other_seen = false;
    let reported_from = parts.iter().position(|c| {
        let m = masked(c);
        other_seen |= any(&m, &w.clause_screens);
        (other_seen && any(&m, &w.reported)) || reported_by_someone(c)
    });
    // Someone else's thing, another instance, the past, a negation: that clause says nothing.
    // A clause opened by a pronoun after one about someone else is about them too ("my wife
    // started at Corvina, so she's commuting now").
    let mut person: Option<String> = None;
    let (mut kept, mut theirs): (Vec<String>, Vec<(String, String)>) = (Vec::new(), Vec::new());
    for c in &parts[..reported_from.unwrap_or(parts.len())] {
        let m = masked(c);
        let continued = person.is_some() && w.pronouns.iter().any(|p| find(opened(&m), p) == Some(0));
        person = someone_else(c).or(if continued { person.take() } else { None });
        // The person a clause is about screens it from the user's values, not from theirs; what
        // belongs to them ("my son's friend") is someone else again.
        let own = match &person {
            Some(p) if find(&m, p).is_some_and(|i| m[i + p.len()..].starts_with("'s")) => None,
            Some(p) => Some(without(&m, std::slice::from_ref(p))),
            None => Some(m.clone()),
        };
        let counts =
            own.is_some_and(|own| !any(&own, &w.clause_screens)) && (!any(&m, &w.negation) || any(&m, &w.retraction));
        match (&person, counts) {
            (None, true) => kept.push(c.clone()),
            (Some(p), true) => theirs.push((p.clone(), c.clone())),
            _ => {}
        }
    }
    let mark = |m: &str| {
        if any(m, &w.retraction) {
            Some(Mark::Retraction)
        } else if any(m, &w.request) || any(m, &w.change) {
            Some(Mark::Change)
        } else {
            None
        }
    };
    let only_label = label.is_some() && kept.len() == 1 && kept.first() == label.as_ref();
    if kept.is_empty() || (only_label && !theirs.is_empty()) {
        // Someone else's change, all of one person the user names as theirs ("my daughter", not
        // "a friend" or "someone": no one person): theirs, not the user's.
        let Some((who, _)) = theirs.first() else { return Class::Screened };
        if !who.starts_with("my ") || theirs.iter().any(|(p, _)| p != who) {
            return Class::Screened;
        }
        let text = theirs.iter().map(|(_, c)| c.as_str()).collect::<Vec<_>>().join(", ");
        let marked = kept.iter().map(String::as_str).chain([text.as_str()]).collect::<Vec<_>>().join(", ");
        return match mark(&masked(&marked)) {
            Some(m) => Class::Theirs(who.clone(), m, text),
            None => Class::Screened,
        };
    }
    let text = kept.join(", ");
    match mark(&masked(&text)) {
        Some(m) => Class::Marked(m, text),
        None => Class::Plain(text),
    }
}

/// A label before a colon: at most three words, no value ("Big change", "Funny thing", "FYI").
fn is_label(head: &str) -> bool {
    let words: Vec<&str> = head.split_whitespace().collect();
    (1..=3).contains(&words.len())
        && masked(head).split_whitespace().all(|w| w != "_" && !w.chars().any(|c| c.is_ascii_digit()))
}

/// Whether a text says something of `person` (an `others` phrase, as [`someone_else`] gives
/// it): one of its clauses is about them.
pub(super) fn mentions(text: &str, person: &str) -> bool {
    sentences(text).iter().flat_map(|(s, _)| clauses(s)).any(|c| someone_else(&c).as_deref() == Some(person))
}

/// `masked` text with every occurrence of `phrases` (on word boundaries) taken out.
fn without(masked: &str, phrases: &[String]) -> String {
    let mut t = masked.to_string();
    for p in phrases {
        while let Some(i) = find(&t, p) {
            t.replace_range(i..i + p.len(), " ");
        }
    }
    t
}

/// Whether a sentence quotes something: double quotes, backticks, or a single quote opening
/// a word (an apostrophe inside a word is no quote).
fn quotes(sentence: &str) -> bool {
    sentence.contains(['"', '`', '“', '‘'])
        || sentence.split_whitespace().any(|t| t.starts_with('\'') || (t.ends_with('\'') && !t.ends_with("s'")))
}

/// What an earlier sentence asserted, if anything: a question (other than one that opens with
/// a statement) and a reply hold no value a later change could replace, nor does a plan or a
/// hedge. Read `by_clause`, a hedge in one clause leaves the others standing ("the cat goes to
/// the clinic on Elm, they're fine I guess" still says where the cat goes); the judge reads so
/// only between two short messages: a longer one with a hedge is a task or a question about one
/// (on the BEAM dev chats, reading every earlier message clause by clause retired 15 task
/// messages wrongly, and every short one, 2).
pub(super) fn asserted(sentence: &str, question: bool, by_clause: bool) -> Option<String> {
    let head = if question { statement_before_question(sentence)? } else { sentence.to_string() };
    if any(&masked(&head), &words().replies) || (!by_clause && screened(&head)) {
        return None;
    }
    let kept: Vec<String> = clauses(&head).into_iter().filter(|c| !screened(c)).collect();
    (!kept.is_empty()).then(|| kept.join(", "))
}

/// Whether a message asks the assistant something: a question mark, a request addressed to it
/// (the phrases of `asking` that name it, "can you …"; not a bare "please") or a question
/// without its mark ("how do I …").
pub(super) fn asks(text: &str) -> bool {
    let m = masked(text);
    let addressed: Vec<String> = words().asking.iter().filter(|p| p.contains(' ')).cloned().collect();
    text.contains('?') || any(&m, &addressed) || any(&m, &words().asks)
}

/// Whether a message opens as a reply to the assistant's answer ("Got it! So the …"): what
/// follows restates the answer, not a value of the user's own.
pub(super) fn opens_as_reply(text: &str) -> bool {
    sentences(text).first().is_some_and(|(s, _)| any(&masked(s), &words().replies))
}

/// Whether a clause reports the words of someone as its subject ("Dana said Priya is a great
/// manager", "the landlord says the code is 9902"): a reporting word (`reported`) right after a
/// name, "he/she/they" or a determiner and a noun ("I said", "had to say goodbye" are the user's).
fn reported_by_someone(clause: &str) -> bool {
    let w = words();
    let original: Vec<&str> = clause.split_whitespace().collect();
    let lower = clause.to_lowercase().replace('’', "'");
    let toks: Vec<&str> = opened(&lower).split_whitespace().collect();
    let skipped = original.len().saturating_sub(toks.len());
    let Some(at) = toks.iter().take(3).position(|t| w.reported.iter().any(|r| r == t)) else { return false };
    // A name ("Dana said"), a pronoun ("she says") or a determiner and a noun ("the landlord
    // says"); not an implied "I" ("had to say goodbye").
    let name = |i: usize| original.get(skipped + i).is_some_and(|t| t.starts_with(char::is_uppercase) && *t != "I");
    match toks[..at] {
        [_] if name(0) => true,
        ["he" | "she" | "they"] => true,
        ["the" | "my" | "our" | "his" | "her" | "their", _] => true,
        _ => false,
    }
}

/// Whether a clause opens with someone else as its subject ("my teammate got a new manager",
/// "a customer of ours replaced their router"): a change it tells is theirs, not the user's.
/// A subject that joins the user to them ("my wife and I switched to Verizon") is the user's.
pub fn about_someone_else(clause: &str) -> bool {
    someone_else(clause).is_some()
}

/// Who a clause is about when it opens with another person (`others`: "my daughter …"), not
/// joined to the user ("my wife and I …").
fn someone_else(clause: &str) -> Option<String> {
    let w = words();
    let m = masked(clause);
    let m = opened(&m);
    w.others
        .iter()
        .find(|o| {
            find(m, o) == Some(0) && {
                let rest = m[o.len()..].trim_start();
                !w.with_user.iter().any(|u| find(rest, u) == Some(0))
            }
        })
        .cloned()
}

/// A masked clause without the words that open it before its subject (`openers`).
fn opened(masked: &str) -> &str {
    let w = words();
    let mut m = masked.trim_start();
    while let Some(rest) = w.openers.iter().find_map(|o| m.strip_prefix(o.as_str()).and_then(|r| r.strip_prefix(' '))) {
        m = rest.trim_start();
    }
    m
}

/// Whether a sentence is a look-alike as a whole (a plan, a hypothetical, a hedge, a temporary
/// change: `screens`): it states no current value, for the judge or any other rule.
pub fn screened(sentence: &str) -> bool {
    hedges(&masked(sentence))
}

/// Whether masked text holds a screen once the phrases that only look like one are taken out
/// (`not_screens`: "been going to the gym" is no plan, "I'd rather" no hypothetical).
fn hedges(masked: &str) -> bool {
    let w = words();
    any(&without(masked, &w.not_screens), &w.screens)
}

/// Whether a sentence changes a value of the user's own, and how; None for anything else.
pub fn classify(sentence: &str, question: bool) -> Option<Mark> {
    match classify_sentence(sentence, question) {
        Class::Marked(m, _) => Some(m),
        _ => None,
    }
}

/// The sentences of a text; an abbreviation's full stop ("Dr. Quint") ends none.
pub(super) fn sentences(text: &str) -> Vec<(String, bool)> {
    let mut t = text.to_string();
    for a in &words().abbreviations {
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

/// Longest message (in chars) whose long sentences the judge reads in runs of clauses.
const RUNS_CHARS: usize = 200;

/// A sentence of `message` as the judge reads it beside a short change: in runs of clauses
/// ([`windows`]) when the message is a short one that asks nothing, else whole. A long sentence
/// of a task or a question shares words with everything: on the BEAM dev chats, read in runs
/// beside changes of any length, task messages up to 320 chars made 8 wrong retirements, up to
/// 200 chars 3; beside a change of at most 160 chars, none.
pub(super) fn runs(sentence: &str, message: &str) -> Vec<String> {
    if asks(message) || message.chars().count() > RUNS_CHARS {
        vec![sentence.to_string()]
    } else {
        windows(sentence)
    }
}
