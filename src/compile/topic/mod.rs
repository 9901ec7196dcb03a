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

use uuid::Uuid;

use words::{any, words};

mod bearing;
mod doubt;
mod sentence;
mod terms;
mod words;

use bearing::{about, Bearing, Old};
use doubt::{doubted_by_meaning, doubted_by_words, short};

pub use sentence::{about_someone_else, classify, screened, Mark};
use sentence::{asks, asserted, classify_sentence, masked, mentions, opens_as_reply, runs, sentences, Class};
use terms::{restates, terms, Terms};
pub use words::{with_words, UpdateWords, Words, BUILT_IN};

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
    /// The phrases that name it ("daily standup", "standup time"), for a claimed fact.
    pub key_phrases: Vec<String>,
    /// Its claim's attribute holds several values at once (tools, pets): a change retires the
    /// value only by naming it as ended ("moved from npm to yarn"), and a doubt marks it only
    /// with the rest of its message.
    pub multi: bool,
    /// Its place in time.
    pub at: Place,
    /// Where a later memory of the same batch supersedes it by another rule, if one does.
    pub until: Option<Place>,
    /// Its vector, when the embedder is semantic (for [`Doubt`]s no shared word explains).
    pub vector: Option<Vec<f32>>,
    /// The earlier memories it was found to change or doubt (its `metadata.revises`).
    pub revises: Vec<Uuid>,
}

/// A place in time: the time anchor in microseconds, then the message's sequence key.
pub type Place = (i64, String);

/// A new message of the user's.
#[derive(Debug, Clone)]
pub struct Newer {
    pub group: String,
    /// The memory that stands for the message (its summary), the successor of what it retires.
    pub successor: Option<Uuid>,
    pub text: String,
    /// Its place in time.
    pub at: Place,
    /// The message's vector, when the embedder is semantic.
    pub vector: Option<Vec<f32>>,
}

/// An earlier memory a change is likely about, though not surely enough to retire it (no
/// unique earlier statement shows the change by a value, or only the meaning ties the two):
/// the bundle shows it marked as earlier, so the agent sees that it may have changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Doubt {
    pub older: Uuid,
    /// The index of the newer message that may change it.
    pub by: usize,
}

/// What the newer messages do to the older memories.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Judgement {
    pub retired: Vec<Retirement>,
    pub doubts: Vec<Doubt>,
}

/// One earlier memory retired by a newer message.
#[derive(Debug, Clone, PartialEq)]
pub struct Retirement {
    pub older: Uuid,
    /// The index of the newer message that retires it.
    pub by: usize,
    /// None for a retraction: nothing replaces the value.
    pub newer: Option<Uuid>,
    pub mark: Mark,
    /// How many topic words the two statements share.
    pub shared: usize,
}

/// Longest message (in chars) the judge reads, new or earlier: a note about one's things is
/// short; a long message (a task, a pasted plan, a story) shares words and dates with
/// everything, and its matches are mostly wrong (measured on the BEAM dev chats).
const MAX_MESSAGE_CHARS: usize = 320;

/// Whether a message may change anything: short enough to be read, with a sentence that marks
/// a change (callers skip reading the earlier memories when no message of a batch may).
pub fn may_change(text: &str) -> bool {
    text.chars().count() <= MAX_MESSAGE_CHARS
        && sentences(text)
            .iter()
            .any(|(s, q)| matches!(classify_sentence(s, *q), Class::Marked(..) | Class::Theirs(..)))
}

/// Whether a message may restate a value the user holds one of ([`restates`]): short (a weaker
/// sign than a marked change needs a plainer message, as a doubt does), with a plain sentence
/// (neither a change nor a look-alike).
pub fn may_restate(text: &str) -> bool {
    short(text) && sentences(text).iter().any(|(s, q)| matches!(classify_sentence(s, *q), Class::Plain(_)))
}

/// Whether the judge reads an earlier memory at all: a short statement of the user's, not a
/// request to the assistant (only a claimed fact is read out of such a message) nor a reply.
pub fn readable(o: &Older) -> bool {
    o.text.chars().count() <= MAX_MESSAGE_CHARS && (o.value.is_some() || !asks(&o.text)) && !opens_as_reply(&o.text)
}

/// An earlier memory as the judge reads it: its asserting sentences' terms, read whole and (for
/// a short message) clause by clause ([`sentence::asserted`]), its attribute's own words, and
/// the stems of each phrase naming it (read once, not per sentence of every change).
type Read<'a> = (&'a Older, [Vec<Terms>; 2], BTreeSet<String>, Vec<BTreeSet<String>>);

/// The retirements the newer messages make among the older memories (earlier messages only,
/// in order: each newer message also sees the ones before it that survive).
pub fn judge(newer: &[Newer], older: &[Older]) -> Judgement {
    // Most messages change nothing; the earlier memories are read only when one does.
    let mut olds: Option<Vec<Read<'_>>> = None;
    let read = || -> Vec<Read<'_>> {
        older
            .iter()
            .filter(|o| readable(o))
            .map(|o| {
                // The attribute's own words, not their topic groups ("place of work" is no home).
                let named: BTreeSet<String> =
                    terms(&o.key_words.join(". ")).topic.into_iter().filter(|w| !w.starts_with('#')).collect();
                // Only what the earlier message asserted: its questions hold no value to replace.
                // Read whole, and (for a short change) clause by clause and in runs of clauses.
                let read = |by_clause: bool, in_runs: bool| -> Vec<Terms> {
                    let said = sentences(&o.text).into_iter().filter_map(|(s, q)| asserted(&s, q, by_clause));
                    let read_as = |s: String| if in_runs { runs(&s, &o.text) } else { vec![s] };
                    let mut ts: Vec<Terms> = said.flat_map(read_as).map(|s| terms(&s)).collect();
                    for t in &mut ts {
                        t.topic.extend(named.iter().cloned());
                    }
                    ts
                };
                // The stems of each phrase that names its attribute, for a restatement.
                let phrases = o
                    .key_phrases
                    .iter()
                    .map(|p| terms(p).topic.into_iter().filter(|w| !w.starts_with('#')).collect())
                    .collect();
                (o, [read(false, false), read(short(&o.text), true)], named, phrases)
            })
            .collect()
    };
    let mut retired: BTreeSet<Uuid> = BTreeSet::new();
    // What each memory was found to change: marks of earlier compiles, then this call's.
    let mut revised: BTreeMap<Uuid, Vec<Uuid>> =
        older.iter().filter(|o| !o.revises.is_empty()).map(|o| (o.id, o.revises.clone())).collect();
    let mut out = Judgement::default();
    for (k, n) in newer.iter().enumerate() {
        if n.text.chars().count() > MAX_MESSAGE_CHARS {
            continue;
        }
        let classes: Vec<Class> = sentences(&n.text).iter().map(|(s, q)| classify_sentence(s, *q)).collect();
        // The user's own mark; someone else's change marks only its own sentence.
        let marked = classes.iter().find_map(|c| match c {
            Class::Marked(m, _) => Some(*m),
            _ => None,
        });
        let theirs = classes.iter().any(|c| matches!(c, Class::Theirs(..)));
        // A message that marks no change may still restate a value the user holds one of, by
        // its attribute's own words ([`restates`]): "the VAT number is GB 123 4567 98" after
        // "our VAT number is GB 123 4567 89". Only claimed facts are read for it, and a
        // restatement doubts nothing.
        let restating = marked.is_none();
        if restating && !theirs && (!short(&n.text) || !classes.iter().any(|c| matches!(c, Class::Plain(_)))) {
            continue;
        }
        let message_mark = marked.unwrap_or(Mark::Change);
        // The message's words, screened sentences and clauses left out.
        let said: Vec<&str> = classes
            .iter()
            .filter_map(|c| match c {
                Class::Marked(_, t) | Class::Plain(t) | Class::Theirs(_, _, t) => Some(t.as_str()),
                Class::Screened => None,
            })
            .collect();
        let message = terms(&said.join(". "));
        // "…but I'm keeping the Corolla": the message keeps the old value.
        if any(&masked(&n.text), &words().keeping) {
            continue;
        }
        let olds = olds.get_or_insert_with(read);
        // A sentence that adds a value beside the others ("we added Redis to the orders
        // service") replaces none but a single-valued claim's; a message whose every change
        // adds doubts nothing.
        // A sentence that ends a value replaces it, whatever else it says ("replaced flake8 and
        // black with ruff for both").
        let adds = |text: &str| any(&masked(text), &words().adding) && terms(text).ended.is_empty();
        let only_adds = classes.iter().all(|c| !matches!(c, Class::Marked(_, t) | Class::Theirs(_, _, t) if !adds(t)));
        let before = out.retired.len();
        // Per earlier message, the best bearing of a sentence that retired nothing.
        let mut unsure: BTreeMap<&str, ((bool, usize), Vec<Uuid>)> = BTreeMap::new();
        // Each unit with whose it is: someone else's bears only on what was said of them.
        let units: Vec<(Mark, String, Option<&str>)> = classes
            .iter()
            .filter_map(|c| match c {
                Class::Marked(m, t) => Some((*m, t, None)),
                Class::Theirs(p, m, t) => Some((*m, t, Some(p.as_str()))),
                Class::Plain(t) => Some((message_mark, t, None)),
                Class::Screened => None,
            })
            .flat_map(|(m, t, p)| {
                if short(&n.text) { runs(t, &n.text) } else { vec![t.clone()] }.into_iter().map(move |w| (m, w, p))
            })
            .collect();
        let only_theirs = units.iter().all(|u| u.2.is_some());
        for (mark, text, person) in &units {
            let (mark, text) = (*mark, text.as_str());
            let restating = restating && person.is_none(); // a plain sentence may only restate
            let new = terms(text);
            let adding = adds(text);
            // Per earlier message: the memories of it the change bears on.
            let mut by_group: BTreeMap<&str, Vec<(Uuid, Bearing)>> = BTreeMap::new();
            for (o, [whole, by_clause], named, phrases) in olds.iter() {
                // What was current at the message's place: earlier, and not yet replaced.
                let current = o.at < n.at && o.until.as_ref().is_none_or(|u| *u > n.at);
                if o.group == n.group
                    || !current
                    || retired.contains(&o.id)
                    || (restating && !restates(text, &new, o, phrases))
                    || person.is_some_and(|p| !mentions(&o.text, p))
                {
                    continue;
                }
                // A hedge beside a statement is read apart from it only between two short
                // messages: a longer one is a task, and a hedge in it says so.
                let sentences = if short(&n.text) { by_clause } else { whole };
                // A restatement gives the attribute its new value in so many words: that shows
                // the change, whatever else the message says of the old value ("Javier is
                // injured, for the rest of the season Lucia is my coach").
                let restated = restating.then_some(Bearing { shared: 1, strong: true, mark: Mark::Change });
                let best = restated.or_else(|| {
                    sentences
                        .iter()
                        .filter_map(|t| {
                            let old = Old { terms: t, value: o.value.as_deref(), multi: o.multi, named, adding };
                            about(&new, &message, mark, &old)
                        })
                        .max_by_key(|b| (b.strong, b.shared))
                });
                if let Some(b) = best {
                    by_group.entry(o.group.as_str()).or_default().push((o.id, b));
                }
            }
            // A message is about the change when one of its memories shows it by a value; the
            // one message sharing most topic words is, when it is the only one.
            let score =
                |items: &Vec<(Uuid, Bearing)>| items.iter().filter(|(_, b)| b.strong).map(|(_, b)| b.shared).max();
            let top = by_group.values().filter_map(score).max().unwrap_or(0);
            let winners: Vec<&Vec<(Uuid, Bearing)>> = by_group.values().filter(|i| score(i) == Some(top)).collect();
            let [items] = winners.as_slice() else {
                for (group, items) in by_group {
                    let key = items.iter().map(|(_, b)| (b.strong, b.shared)).max().unwrap_or_default();
                    let entry = unsure.entry(group).or_default();
                    if key > entry.0 {
                        *entry = (key, items.iter().map(|(id, _)| *id).collect());
                    }
                }
                continue;
            };
            for (id, b) in items.iter() {
                retired.insert(*id);
                let newer = if b.mark == Mark::Retraction { None } else { n.successor };
                out.retired.push(Retirement { older: *id, by: k, newer, mark: b.mark, shared: top });
            }
        }
        let doubts_before = out.doubts.len();
        let mut by_meaning = false;
        let current = |o: &Older| o.at < n.at && o.until.as_ref().is_none_or(|u| *u > n.at) && o.group != n.group;
        if out.retired.len() == before && short(&n.text) && !only_adds && !restating && !only_theirs {
            let is_short = |id: &Uuid| olds.iter().any(|(o, ..)| o.id == *id && short(&o.text));
            let by_words = doubted_by_words(&unsure).map(|ids| if ids.iter().all(is_short) { ids } else { Vec::new() });
            by_meaning = by_words.is_none();
            // Meaning alone ties a change to an earlier memory only when the change says what
            // is new or what ended ("builds are way faster now" names neither).
            let names_value = !message.values.is_empty() || !message.ended.is_empty();
            let doubted = by_words.or_else(|| {
                if !names_value {
                    return None;
                }
                let eligible = olds
                    .iter()
                    .map(|(o, ..)| *o)
                    .filter(|o| current(o) && short(&o.text) && !o.multi && !retired.contains(&o.id));
                doubted_by_meaning(n.vector.as_deref(), eligible)
            });
            for id in doubted.unwrap_or_default() {
                out.doubts.push(Doubt { older: id, by: k });
            }
        }
        let found: Vec<Uuid> = out.retired[before..]
            .iter()
            .map(|r| r.older)
            .chain(out.doubts[doubts_before..].iter().map(|d| d.older))
            .collect();
        // A value changed before: what changed it since is earlier now too ("gym: Steelyard",
        // "joined Bodyworks", then "moved my membership to Apex Climbing": the change is found
        // to be about the first statement, and the second had changed that one). So is what the
        // found statement had changed itself ("paleo", "intermittent fasting now", then "these
        // days a plant-based diet": found to be about the fasting, which had changed the paleo):
        // its marks go with it when it is retired, and the older value must not come back.
        let mut chain: BTreeSet<Uuid> = found.iter().copied().collect();
        loop {
            let before_chain: BTreeSet<Uuid> = chain.iter().filter_map(|c| revised.get(c)).flatten().copied().collect();
            let next: Vec<Uuid> = older
                .iter()
                .filter(|o| current(o) && !chain.contains(&o.id) && !retired.contains(&o.id))
                .filter(|o| {
                    before_chain.contains(&o.id)
                        || revised.get(&o.id).is_some_and(|r| r.iter().any(|x| chain.contains(x)))
                })
                .map(|o| o.id)
                .collect();
            if next.is_empty() {
                break;
            }
            for id in next {
                chain.insert(id);
                out.doubts.push(Doubt { older: id, by: k });
            }
        }
        // A message is one statement: when the change retired or doubted a memory of an earlier
        // message, the other memories of it (a fact drawn from it) show as earlier too, never
        // as current beside their own turn marked earlier. Meaning alone is too weak a tie to
        // mark more than the memory it found.
        let weak: BTreeSet<Uuid> = if by_meaning {
            out.doubts[doubts_before..].iter().map(|d| d.older).filter(|id| found.contains(id)).collect()
        } else {
            BTreeSet::new()
        };
        let touched: BTreeSet<&str> = chain
            .iter()
            .filter(|id| !weak.contains(id))
            .filter_map(|id| older.iter().find(|o| o.id == *id).map(|o| o.group.as_str()))
            .collect();
        // Except the values the message claimed: a turn found by meaning shows as earlier with
        // the fact drawn from it, never beside it as current ("my daughter goes to Maple Grove
        // Elementary"; "we're on AWS", one value of several, after "finished moving everything
        // to GCP": a message that only adds doubts nothing, see `only_adds`).
        let weakly: BTreeSet<&str> =
            weak.iter().filter_map(|id| older.iter().find(|o| o.id == *id).map(|o| o.group.as_str())).collect();
        let held = |o: &Older| o.value.is_some();
        let marked: BTreeSet<Uuid> = out.doubts[doubts_before..].iter().map(|d| d.older).collect();
        for o in older {
            let group = o.group.as_str();
            let tied = touched.contains(group) || (weakly.contains(group) && held(o));
            if tied && current(o) && !retired.contains(&o.id) && !marked.contains(&o.id) {
                out.doubts.push(Doubt { older: o.id, by: k });
            }
        }
        // What this message changes, for the changes after it.
        if let Some(successor) = n.successor {
            let changed = out.retired[before..]
                .iter()
                .map(|r| r.older)
                .chain(out.doubts[doubts_before..].iter().map(|d| d.older));
            revised.entry(successor).or_default().extend(changed);
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
            key_phrases: Vec::new(),
            multi: false,
            at: (0, group.into()),
            until: None,
            vector: None,
            revises: Vec::new(),
        }
    }

    fn newer(text: &str) -> Vec<Newer> {
        vec![Newer {
            group: "new".into(),
            successor: Some(Uuid::from_u128(99)),
            text: text.into(),
            at: (1, "new".into()),
            vector: None,
        }]
    }

    #[test]
    fn the_word_lists_load() {
        assert!(!words().change.is_empty() && !words().screens.is_empty());
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
    fn someone_elses_change_bears_only_on_what_was_said_of_them() {
        // Theirs, not the user's: never a change of the user's own values.
        assert_eq!(classify("my daughter switched to Oakridge Academy this term", false), None);
        assert_eq!(classify("Big change: my daughter switched to Oakridge Academy", false), None);
        let school = older(1, "a", "My daughter goes to Linden Elementary.", Some("linden elementary"));
        let friend = older(5, "e", "A friend of mine goes to Hillside Academy.", None);
        let j = judge(&newer("a friend of mine switched to Oakridge Academy"), &[friend]);
        assert!(j.retired.is_empty(), "no one person: {j:?}");
        let home = older(2, "b", "I live in Lyon.", None);
        let son = older(3, "c", "My son goes to Hillside Middle School.", None);
        let old = [school.clone(), home.clone(), son.clone()];
        for change in
            ["Big change: my daughter switched to Oakridge Academy this term.", "my daughter moved to Oakridge Academy"]
        {
            let j = judge(&newer(change), &old);
            assert_eq!(j.retired.iter().map(|r| r.older).collect::<Vec<_>>(), [Uuid::from_u128(1)], "{change}");
        }
        // Another person's change touches nothing of the user's, by words or by meaning.
        for look_alike in [
            "my brother moved to Marseille last month",
            "my son's friend switched to Oakridge Academy",
            "a friend of mine switched to Oakridge Academy",
        ] {
            let j = judge(&newer(look_alike), &[school.clone(), home.clone(), son.clone()]);
            assert!(j.retired.is_empty() && j.doubts.is_empty(), "{look_alike}: {j:?}");
        }
        // Someone else's change marks only its own sentence: the next one is no change of the
        // user's ("He lives in York" after "my brother just started at Quorra").
        let mine = older(4, "d", "I work at Tessellate as a data engineer, live in Leeds, and drive a Clio.", None);
        let told = "Funny coincidence: my brother just started at Quorra as a data engineer too. He lives in York, drives a van.";
        let j = judge(&newer(told), &[mine]);
        assert!(j.retired.is_empty() && j.doubts.is_empty(), "{j:?}");
        // A label before a colon stays the user's when the user says more.
        assert_eq!(classify("Update: I moved to Denver", false), Some(Mark::Change));
        assert_eq!(classify("new mgr: Ravi Patel, Helen moved to another org", false), Some(Mark::Change));
    }

    #[test]
    fn a_polite_request_is_no_hedge_and_a_plan_noun_no_plan() {
        // The asking form's "could" is politeness; outside a request it still hedges.
        assert_eq!(classify("could you switch my billing address to 12 Elm St", true), Some(Mark::Change));
        assert_eq!(classify("would you please update my phone to 555 0100", true), Some(Mark::Change));
        assert_eq!(classify("I could switch my plan to Basic", false), None);
        // "plan" as a noun is no plan: "moved to the Family plan to share it".
        assert_eq!(classify("moved to the Family plan to share it with the kids", false), Some(Mark::Change));
        assert_eq!(classify("we plan to move to Oslo", false), None);
    }

    #[test]
    fn a_change_retires_the_one_statement_it_is_about() {
        let old =
            [older(1, "a", "my laptop is a ThinkPad X1", Some("thinkpad x1")), older(2, "b", "I live in Oslo", None)];
        let r = judge(&newer("new laptop day, a MacBook Air M3"), &old).retired;
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].older, Uuid::from_u128(1));
        // The value restated is no change.
        assert!(judge(&newer("finally got the ThinkPad X1 laptop set up now"), &old).retired.is_empty());
        // Two earlier statements equally about it: nothing is retired.
        let two = [older(1, "a", "cache node is 10.0.0.1", None), older(2, "b", "cache node backup is 10.0.0.2", None)];
        let unsure = judge(&newer("the cache node is 10.0.0.9 now"), &two);
        assert!(unsure.retired.is_empty());
        // Both are shown as earlier: the change may be about either.
        assert_eq!(unsure.doubts.iter().map(|d| d.older).collect::<Vec<_>>(), [Uuid::from_u128(1), Uuid::from_u128(2)]);
    }

    #[test]
    fn a_reply_to_the_assistant_changes_nothing_and_is_not_replaced() {
        // "now" marks a change, but not in a reply to an answer.
        assert_eq!(classify("Makes sense now, thanks for the breakdown", false), None);
        assert_eq!(classify("Got it, the formula is clear now", false), None);
        // An earlier message that opens as a reply restates the answer: nothing of it is retired.
        let old = [older(1, "a", "Got it! So the scale factor is 1.5 for those triangles.", None)];
        assert!(judge(&newer("the scale factor is 2 now"), &old).retired.is_empty());
        // An earlier message that asks something holds no value of the user's to replace.
        let asked = [older(1, "a", "my review is on October 15, any tips?", None)];
        assert!(judge(&newer("my review moved to October 20 now"), &asked).retired.is_empty());
    }

    #[test]
    fn only_a_short_message_that_marks_a_change_is_read() {
        assert!(may_change("we moved to Oslo last month"));
        assert!(!may_change("I like tea"));
        assert!(!may_change(&"we moved to Oslo and then some more words. ".repeat(10)));
    }

    #[test]
    fn a_hedge_in_one_clause_leaves_the_rest_of_an_earlier_statement() {
        let old = [older(1, "a", "my dentist is Dr Ferreira on Quay Road, she's ok I guess", None)];
        let r = judge(&newer("I moved to Dr Lindqvist's practice now"), &old).retired;
        assert_eq!(r.iter().map(|r| r.older).collect::<Vec<_>>(), [Uuid::from_u128(1)]);
        // A sentence that is a plan as a whole still states nothing.
        let plan = [older(1, "a", "thinking about switching my dentist to Dr Ferreira", None)];
        assert!(judge(&newer("I moved to Dr Lindqvist's practice now"), &plan).retired.is_empty());
    }

    #[test]
    fn a_value_named_as_ended_and_replaced_goes_whatever_the_words_look_like() {
        // Neither tool is capitalised: the replacement is what the ending's "with" brings in.
        let old = [older(1, "a", "the frontend is formatted by prettier", None)];
        let r = judge(&newer("we replaced prettier with biome last sprint"), &old).retired;
        assert_eq!(r.len(), 1);
        // Ended after the value ("the Confluence space is archived").
        let docs = [older(1, "a", "team docs live on Confluence", None)];
        assert_eq!(judge(&newer("we're on Notion now, the old Confluence space is archived"), &docs).retired.len(), 1);
        // Named as ended with nothing in its place and no change marked: nothing goes.
        let friend = [older(1, "a", "my best friend is Anna", None)];
        assert!(judge(&newer("got a lovely card from Anna today"), &friend).retired.is_empty());
    }

    #[test]
    fn a_plain_statement_needs_a_value_of_the_same_shape() {
        let old = [older(1, "a", "doing 5k runs on weekends", None)];
        assert_eq!(judge(&newer("finally up to 10k on my sunday runs"), &old).retired.len(), 1);
        assert!(judge(&newer("new shoes for the runs arrived"), &old).retired.is_empty());
    }

    #[test]
    fn a_change_tied_to_nothing_by_words_is_doubted_by_meaning() {
        let with = |n: u128, group: &str, text: &str, v: [f32; 3]| Older {
            vector: Some(v.to_vec()),
            ..older(n, group, text, None)
        };
        let old = [
            with(1, "a", "I write everything in Sublime Text", [1.0, 0.2, 0.0]),
            with(2, "b", "we have a dog called Pepper", [0.0, 0.1, 1.0]),
        ];
        let mut n = newer("been living in Zed for a month now");
        n[0].vector = Some(vec![0.9, 0.5, 0.1]);
        let j = judge(&n, &old);
        assert!(j.retired.is_empty(), "meaning alone never retires");
        assert_eq!(j.doubts, [Doubt { older: Uuid::from_u128(1), by: 0 }]);
        // The values the found message claimed show as earlier with it; a fact of the message
        // about something else, and another message's, do not.
        let mut message = old.to_vec();
        message
            .push(Older { multi: false, ..older(4, "a", "I write everything in Sublime Text", Some("sublime text")) });
        message.push(older(5, "a", "I use a split keyboard", None));
        message
            .push(Older { multi: true, ..older(7, "a", "I write everything in Sublime Text", Some("sublime text")) });
        message.push(older(6, "b", "we have a dog called Pepper", Some("pepper")));
        let doubted: Vec<Uuid> = judge(&n, &message).doubts.iter().map(|d| d.older).collect();
        assert_eq!(doubted, [Uuid::from_u128(1), Uuid::from_u128(4), Uuid::from_u128(7)]);
        // Two earlier messages about as close (a value changed twice): both are earlier.
        let close = [
            with(1, "a", "I write everything in Sublime Text", [1.0, 0.2, 0.0]),
            with(2, "b", "switched to Atom", [1.0, 0.25, 0.0]),
        ];
        assert_eq!(judge(&n, &close).doubts.len(), 2);
        // Three: no signal.
        let three = [close[0].clone(), close[1].clone(), with(3, "c", "my shell is fish", [1.0, 0.22, 0.0])];
        assert!(judge(&n, &three).doubts.is_empty());
        // A message that marks no change doubts nothing.
        let mut plain = newer("I like the Zed theme");
        plain[0].vector = n[0].vector.clone();
        assert!(judge(&plain, &old).doubts.is_empty());
        // Nor does a change that names nothing new and nothing ended.
        let mut vague = newer("builds are way faster now");
        vague[0].vector = n[0].vector.clone();
        assert!(judge(&vague, &old).doubts.is_empty());
    }

    #[test]
    fn a_tenants_words_apply_inside_with_words_only() {
        let text = "ops rebaselined the sla target to 99.5";
        assert_eq!(classify(text, false), None);
        let extra = UpdateWords { change: vec![" Rebaselined ".into()], ..UpdateWords::default() };
        let words = std::sync::Arc::new(BUILT_IN.extended(&extra));
        assert_eq!(with_words(&words, || classify(text, false)), Some(Mark::Change));
        assert_eq!(classify(text, false), None, "the built-in lists are back after");
        assert!(words.not_topic_words.contains("rebaselined"), "a change word is no topic word");
    }

    #[test]
    fn one_value_of_several_goes_only_when_named_as_ended() {
        let tool = |n: u128, g: &str, text: &str, v: &str| Older { multi: true, ..older(n, g, text, Some(v)) };
        let old = [tool(1, "a", "we use npm", "npm"), tool(2, "b", "we use docker", "docker")];
        let r = judge(&newer("we moved from npm to pnpm now"), &old).retired;
        assert_eq!(r.iter().map(|r| r.older).collect::<Vec<_>>(), [Uuid::from_u128(1)]);
        // Another value beside it is no change of it, and a multi-valued fact is never doubted.
        let j = judge(&newer("we started using pnpm now"), &old);
        assert!(j.retired.is_empty() && j.doubts.is_empty());
        // A replacement that shares what the value is for (beyond the attribute's own words)
        // replaces it; one that adds a value beside it does not.
        let scoped =
            [tool(1, "a", "we use yarn classic in the monorepo", "yarn"), tool(2, "b", "we use docker", "docker")];
        let r = judge(&newer("migrated the monorepo to pnpm last week"), &scoped).retired;
        assert_eq!(r.iter().map(|r| r.older).collect::<Vec<_>>(), [Uuid::from_u128(1)]);
        assert!(judge(&newer("we also added pnpm to the monorepo now"), &scoped).retired.is_empty());
        // Nor a plain statement, and it doubts nothing.
        let plain = [older(1, "a", "we use Postgres for the orders service", None)];
        let j = judge(&newer("we added Redis to the orders service as a read cache now"), &plain);
        assert!(j.retired.is_empty() && j.doubts.is_empty());
        let named = Older { key_words: vec!["monorepo".into()], ..scoped[0].clone() };
        assert!(
            judge(&newer("migrated the monorepo to pnpm last week"), &[named]).retired.is_empty(),
            "the attribute's own words are no purpose"
        );
    }

    #[test]
    fn what_changed_a_value_before_is_earlier_when_the_value_changes_again() {
        let old = [
            older(1, "a", "gym: Steelyard, 4am crew", None),
            Older {
                revises: vec![Uuid::from_u128(1)],
                ..older(2, "b", "joined Bodyworks, way closer to the office", None)
            },
            older(3, "c", "I like my office", None),
        ];
        let j = judge(&newer("my gym is Apex Climbing now"), &old);
        assert_eq!(j.retired.iter().map(|r| r.older).collect::<Vec<_>>(), [Uuid::from_u128(1)]);
        assert_eq!(j.doubts, [Doubt { older: Uuid::from_u128(2), by: 0 }]);
        // In one batch: what the first message was found to doubt counts for the second.
        let mut batch = newer("joined a new gym closer to the office now");
        batch.push(Newer {
            group: "new2".into(),
            successor: Some(Uuid::from_u128(98)),
            text: "my gym is Apex Climbing now".into(),
            at: (2, "new2".into()),
            vector: None,
        });
        let first =
            Older { at: (1, "new".into()), ..older(99, "new", "joined a new gym closer to the office now", None) };
        let two = [older(1, "a", "gym: Steelyard, 4am crew", None), first];
        let j = judge(&batch, &two);
        assert!(j.doubts.contains(&Doubt { older: Uuid::from_u128(1), by: 0 }), "{j:?}");
        assert!(j.doubts.iter().any(|d| d.older == Uuid::from_u128(99) && d.by == 1), "{j:?}");
    }

    #[test]
    fn what_a_changed_value_had_changed_stays_earlier_when_it_is_retired() {
        // "paleo", then "intermittent fasting now" (which doubted the paleo), then a change
        // found to be about the fasting: the paleo must not come back as current.
        let old = [
            older(1, "a", "Eating paleo at the moment, lots of meat and veg.", None),
            Older {
                revises: vec![Uuid::from_u128(1)],
                ..older(2, "b", "I'm doing intermittent fasting now, 16:8, eating whatever in the window.", None)
            },
            older(3, "c", "I like my office", None),
        ];
        let j = judge(&newer("stopped the intermittent fasting, 16:8 was too hard; plant-based now"), &old);
        assert_eq!(j.retired.iter().map(|r| r.older).collect::<Vec<_>>(), [Uuid::from_u128(2)], "{j:?}");
        assert_eq!(j.doubts, [Doubt { older: Uuid::from_u128(1), by: 0 }]);
    }

    #[test]
    fn a_value_named_as_ended_ties_a_change_to_its_statement() {
        let t = terms("we dropped Jenkins for CircleCI a while back");
        assert_eq!(t.ended.iter().collect::<Vec<_>>(), ["jenkin"], "the reach stops at 'for'");
        let old = [older(1, "a", "CI runs on Jenkins", None), older(2, "b", "I live in Oslo", None)];
        let r = judge(&newer("we dropped Jenkins for CircleCI a while back"), &old).retired;
        assert_eq!(r.iter().map(|r| r.older).collect::<Vec<_>>(), [Uuid::from_u128(1)]);
    }

    #[test]
    fn the_other_memories_of_a_changed_message_show_as_earlier() {
        let old = [
            older(1, "a", "My username is kiwi_baker and I can't upload photos to my recipes.", None),
            older(2, "a", "My username is kiwi_baker", Some("kiwi_baker")),
            older(3, "b", "I bake sourdough on Sundays", None),
        ];
        let j = judge(&newer("I renamed my account to sourdough_sam, but my old recipe links now 404."), &old);
        assert_eq!(j.retired.iter().map(|r| r.older).collect::<Vec<_>>(), [Uuid::from_u128(1)]);
        assert_eq!(j.doubts, [Doubt { older: Uuid::from_u128(2), by: 0 }], "the fact of the retired message");
    }

    #[test]
    fn a_pronoun_after_someone_else_keeps_the_clause_theirs() {
        // "she" continues the clause about the user's partner: her commute is no change of the user's.
        let s = "my partner just joined Harlow Labs, so she's driving to Leeds now";
        assert_eq!(classify(s, false), None);
        let old = [older(1, "a", "I work nights at the Leeds depot", None)];
        assert!(judge(&newer(s), &old).retired.is_empty());
        // Without someone else before it, a pronoun's clause is read as any other.
        assert_eq!(classify("they moved me to the day shift now", false), Some(Mark::Change));
    }

    #[test]
    fn a_name_holding_a_change_word_marks_no_change() {
        // "New" in a name is no new value.
        let old = [older(1, "a", "I'm on Central time, New Orleans.", None)];
        let j =
            judge(&newer("For the next week I'll be in Tokyo for a trade fair; back in New Orleans on the 3rd."), &old);
        assert!(j.retired.is_empty() && j.doubts.is_empty(), "{j:?}");
        // A new value of the same kind beside the restated one still changes it.
        let j = judge(&newer("left New Orleans, I'm on Mountain time in Denver now"), &old);
        assert_eq!(j.retired.len(), 1, "{j:?}");
    }

    #[test]
    fn a_long_sentence_is_read_in_runs_of_clauses() {
        // The change sits in one clause of a long sentence; so does the statement it ends.
        let old = [older(1, "a", "My back has been bad, so I take naproxen 500 mg twice a day with food, which my GP set up last spring after the scan.", None)];
        let n = "ok so a quick one: after the scan and the physio and all of the new exercises, which help a lot, I take ibuprofen 200 mg now, and only on the bad days";
        assert_eq!(judge(&newer(n), &old).retired.len(), 1);
        // "been going to the pool" is no plan.
        let old = [older(1, "a", "I've been going to the Westside pool on Larch Road every weekday morning", None)];
        let j = judge(&newer("I use the Eastgate pool now, closer to the new flat"), &old);
        assert_eq!(j.retired.len(), 1, "{j:?}");
    }

    #[test]
    fn reported_words_screen_only_from_the_clause_that_reports_them() {
        // What the user did before the clause that reports someone else's words is the user's.
        assert_eq!(
            classify("I finally sold the kayak to a neighbour, which my brother says was overdue", false),
            Some(Mark::Change)
        );
        // From the reporting clause on, the words are theirs.
        assert_eq!(classify("my aunt texted me, my new email is aunt@mail.example", false), None);
        // An ending or a correction in everyday words.
        assert_eq!(classify("we killed our nightly Jenkins jobs", false), Some(Mark::Retraction));
        assert_eq!(classify("sorry, I gave you the wrong number before", false), Some(Mark::Change));
    }

    /// A claimed fact with the phrases that name its attribute.
    fn claimed(text: &str, value: &str, phrases: &[&str]) -> Older {
        let mut o = older(1, "old", text, Some(value));
        o.key_words = phrases.iter().flat_map(|p| p.split(' ')).map(String::from).collect();
        o.key_phrases = phrases.iter().map(|p| p.to_string()).collect();
        o
    }

    #[test]
    fn a_plain_restatement_of_a_held_value_changes_it() {
        let retires = |old: &Older, text: &str| judge(&newer(text), std::slice::from_ref(old)).retired.len() == 1;
        let vat = claimed("Our VAT number is GB 123 4567 89", "gb 123 4567 89", &["vat number"]);
        assert!(retires(&vat, "Sorry, typo earlier: the VAT number is GB 123 4567 98. Please fix the invoice."));
        assert!(!retires(&vat, "Is the VAT number on the invoice?"));
        let standup = claimed("Daily standup is at 9:15", "9:15", &["standup", "daily standup"]);
        assert!(retires(&standup, "Standup is 9:30 from Monday on, the US folks asked for it."));
        // A value of another kind, or the attribute only named, restates nothing.
        assert!(!retires(&standup, "Standup was fun today, we talked about Kubernetes."));
        assert!(!retires(&standup, "Standup ran long again, 40 minutes."));
        let coach = claimed("My coach is Javier", "javier", &["coach"]);
        assert!(retires(&coach, "For the rest of the season Lucia is my coach."));
        assert!(retires(&coach, "Javier is injured, for the rest of the season Lucia is my coach."));
        // Someone's words about another person, an earlier value, another person's attribute.
        assert!(!retires(&coach, "My coach said Maria is great at serving."));
        let manager = claimed("My manager is Dana Whitfield", "dana whitfield", &["manager"]);
        // Someone's reported words, named by a name: theirs, not a change of the user's.
        assert!(!retires(&manager, "Dana said Priya is a great new manager for new hires."));
        assert!(retires(&manager, "I said it before: my new manager is Priya Raman."));
        assert!(!retires(&manager, "the recruiter says Priya is the new manager for that team."));
        assert_eq!(classify("had to say goodbye to our old cat, we adopted a puppy now", false), Some(Mark::Change));
        assert!(!retires(&coach, "Before, when I was junior, my coach was Marco, he was very funny."));
        let landlord = claimed("My landlord is Pete Morrow", "pete morrow", &["landlord"]);
        assert!(retires(&landlord, "our new landlord is Harcourt Lettings, an agency"));
        assert!(!retires(&landlord, "My friend's landlord is Harcourt Lettings."));
        // The same value said again changes nothing.
        assert!(!retires(&landlord, "the landlord is still Pete Morrow, sadly"));
    }

    #[test]
    fn a_sentence_that_ends_a_value_replaces_it_whatever_else_it_adds() {
        let old = vec![older(1, "old", "python linting with flake8 and black", None)];
        let j = judge(
            &newer("we replaced flake8 and black with ruff for both, way faster. how do I enable isort rules?"),
            &old,
        );
        assert_eq!(j.retired.len(), 1, "{j:?}");
        // Adding beside the old value still replaces nothing.
        let j = judge(&newer("we also added ruff for both projects now"), &old);
        assert!(j.retired.is_empty(), "{j:?}");
    }
}
