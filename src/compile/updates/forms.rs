//! Named-thing changes and terse forms: "the cache node moved to 10.2.3.5", "new address: 12
//! Main St", "Dr. Patel is my dentist", "the new one is dr lindqvist", "we got a new manager,
//! Rafael Costa", "now at 16 seats", "I'm a designer at Polaris".

use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::marks::marks_update;
use crate::compile::attributes::{attributes, shape};
use crate::compile::fact::{ExtractedFact, FactRule};
use crate::compile::frames::LEAD;
use crate::compile::values::{claim_cut, cut_value, lower_name_run, name_run, plausible, strip_article, version_key};

/// Auxiliaries before a verb of change ("has just been").
const AUX: &str = r"(?:(?:has|have|had|just|finally|officially|now|been|got|was|were|is|are|also)\s+)*";
/// Verbs of change ("moved", "bumped", "pushed").
const CHANGE_VERBS: &str =
    "changed|switched|moved|bumped|updated|upgraded|migrated|shifted|pushed|pointed|repointed|reset|set";
/// The old value, if told, and the "to" before the new one.
const CHANGED_TO: &str = r"\s+(?:over\s+)?(?:from\s+\S+(?:\s+\S+)?\s+)?to\s+";

struct Forms {
    change: Regex,
    change_bare: Regex,
    colon: Regex,
    inverse: Regex,
    new_one: Regex,
    role_at: Regex,
    appositive: Regex,
    counted: Regex,
}

static FORMS: LazyLock<Forms> = LazyLock::new(|| crate::patterns::built("update forms", build()));

fn build() -> Result<Forms, regex::Error> {
    let np = r"(?P<np>[\p{L}\p{N}'’\-]+(?:\s+[\p{L}\p{N}'’\-]+){0,3}?)";
    Ok(Forms {
        change: Regex::new(&format!(
            r"(?i)\b(?P<s>my|our|the)\s+{np}\s+{AUX}(?P<verb>{CHANGE_VERBS}|gone|went){CHANGED_TO}"
        ))?,
        // Terse chat drops the determiner: "standup got pushed to 10:15".
        change_bare: Regex::new(&format!(
            r"(?i){LEAD}(?P<s>)(?P<np>[\p{{L}}\p{{N}}\-]+(?:\s+[\p{{L}}\p{{N}}'’\-]+){{0,3}}?)\s+{AUX}(?P<verb>{CHANGE_VERBS}){CHANGED_TO}"
        ))?,
        colon: Regex::new(&format!(
            r"(?i)^\W*(?:(?:got|have|here's|heres|this\s+is|it's|its)\s+)?(?:(?:a|an|my|our)\s+)?(?P<new>(?:new|updated|changed|current)\s+)?{np}\s*:\s+"
        ))?,
        // "Dr. Patel is my dentist", "sam is our new team lead": the value comes first.
        inverse: Regex::new(&format!(
            r"(?i)^\W*(?:(?:so|well|ok|okay|yeah|um+|uh+|oh|also|and|btw|fyi|anyway|update)\W+)*(?P<v>(?:(?:dr|mr|mrs|ms|mx|prof)\.?\s+[\p{{L}}'-]+(?:\s+[\p{{L}}'-]+)?)|(?-i:\p{{Lu}}[\p{{L}}\p{{N}}'.&-]*(?:\s+\p{{Lu}}[\p{{L}}\p{{N}}'.&-]*){{0,2}})|[\w.+-]+@[\w-]+(?:\.[\w-]+)+)\s+(?:is|'s)\s+(?:now\s+|also\s+|officially\s+)?(?P<s>my|our)\s+(?P<new>new\s+)?{np}(?:\s+(?:now|these\s+days))?\s*(?:[.!,;:(]|\s-|$)"
        ))?,
        // "my old dentist retired, the new one is dr lindqvist": "one" is the attribute just named.
        new_one: Regex::new(&format!(
            r"(?i)\b(?:my|our|the)\s+(?:old|previous|former|last|usual)\s+{np}\b.*?\b(?:the\s+|a\s+|my\s+|our\s+)?new\s+one\s+(?:is|'s|will\s+be)\s+"
        ))?,
        role_at: Regex::new(
            r"(?i)\b(?:i'?m|i\s+am)\s+(?:now\s+|currently\s+|still\s+)?(?:a|an|the)\s+(?P<role>(?:[\w-]+\s+){0,3}?[\w-]+)\s+(?:at|for|with)\s+",
        )?,
        // "we got a new manager, Rafael Costa".
        appositive: Regex::new(&format!(
            r"(?i)\b(?:got|have|has|there's|theres|met|welcomed|hired)\s+(?:a|an|our|my)\s+new\s+{np}\s*(?:[,:—–]|\s-)\s*"
        ))?,
        // "we're at 24 seats", "We have 10 seats on the plan".
        counted: Regex::new(
            r"(?i)\b(?:have|at|to|with|got|now|pay\s+for|paying\s+for)\s+(?P<v>\d[\d,.]*)\s+(?P<np>[\p{L}-]+(?:\s+[\p{L}-]+)?)",
        )?,
    })
}

/// The facts of every form in a clause (apostrophes straightened), with their byte position.
pub(super) fn form_facts(straight: &str, present_ok: bool, update: bool) -> Vec<(usize, ExtractedFact)> {
    let r = &*FORMS;
    let mut out = Vec::new();
    for c in r.change.captures_iter(straight) {
        out.extend(change_fact(straight, &c).map(|f| (c.get(0).map_or(0, |m| m.start()), f)));
    }
    if let Some(c) = r.change_bare.captures(straight) {
        // Without a determiner only a phrase the registry knows names the user's own thing.
        if c.name("np").is_some_and(|np| attributes().knows(np.as_str())) {
            out.extend(change_fact(straight, &c).map(|f| (0, f)));
        }
    }
    if present_ok || update {
        if let Some(c) = r.colon.captures(straight) {
            out.extend(colon_fact(straight, &c).map(|f| (0, f)));
        }
    }
    if present_ok {
        if let Some(c) = r.inverse.captures(straight) {
            out.extend(inverse_fact(&c).map(|f| (0, f)));
        }
    }
    if present_ok {
        if let Some(c) = r.role_at.captures(straight) {
            out.extend(role_at_fact(straight, &c).map(|f| (c.get(0).map_or(0, |m| m.start()), f)));
        }
    }
    if present_ok || update {
        for c in r.counted.captures_iter(straight) {
            out.extend(counted_fact(straight, &c).map(|f| (c.get(0).map_or(0, |m| m.start()), f)));
        }
    }
    if let Some(c) = r.appositive.captures(straight) {
        out.extend(appositive_fact(straight, &c).map(|f| (c.get(0).map_or(0, |m| m.start()), f)));
    }
    if let Some(c) = r.new_one.captures(straight) {
        out.extend(new_one_fact(straight, &c).map(|f| (c.get(0).map_or(0, |m| m.start()), f)));
    }
    out
}

/// "I'm a junior designer at Polaris": the employer after a job title.
fn role_at_fact(clause: &str, c: &Captures) -> Option<ExtractedFact> {
    let role = c.name("role")?.as_str();
    if !role.split_whitespace().last().is_some_and(|w| attributes().is_role(w)) {
        return None;
    }
    let rest = cut_value(&clause[c.get(0)?.end()..], None);
    let lower = !clause.chars().any(char::is_uppercase);
    let value = if lower { lower_name_run(rest) } else { name_run(rest) };
    let capital = value.chars().next().is_some_and(char::is_uppercase);
    if !plausible(value, 5) || !(capital || lower) {
        return None;
    }
    let start = c.get(0)?.start();
    let content = format!("{} {value}", clause[start..c.get(0)?.end()].trim_end());
    let key = "employment.current_employer".to_string();
    Some(ExtractedFact::claimed(content, key, value, FactRule::RoleAt, marks_update(clause), None))
}

/// "now at 16 seats": a count of a thing the registry knows.
fn counted_fact(clause: &str, c: &Captures) -> Option<ExtractedFact> {
    let value = c.name("v")?.as_str();
    let words: Vec<&str> = c.name("np")?.as_str().split_whitespace().collect();
    // The longest known phrase ("store locations" before "store").
    let np = (1..=words.len()).rev().map(|n| words[..n].join(" ")).find(|p| attributes().knows(p))?;
    let key = attributes().key_for(&np, value)?;
    let start = c.get(0)?.start();
    let end = c.name("v")?.end() + 1 + np.len();
    let content = clause.get(start..end.min(clause.len()))?.to_string();
    Some(ExtractedFact::claimed(content, key, value, FactRule::Count, marks_update(clause), Some(np.clone())))
}

/// "we got a new manager, Rafael Costa".
fn appositive_fact(clause: &str, c: &Captures) -> Option<ExtractedFact> {
    let np = c.name("np")?.as_str();
    if !attributes().knows(np) {
        return None;
    }
    let rest = cut_value(&clause[c.get(0)?.end()..], None);
    let lower = !clause.chars().any(char::is_uppercase);
    let value = if lower { lower_name_run(rest) } else { name_run(rest) };
    if !plausible(value, 4)
        || !(value.chars().next().is_some_and(char::is_uppercase) || lower || shape(value).is_exact())
    {
        return None;
    }
    let key = attributes().key_for(np, value)?;
    let content = format!("new {np}: {value}");
    Some(ExtractedFact::claimed(content, key, value, FactRule::Appositive, true, Some(np.to_string())))
}

/// "Dr. Patel is my dentist": the phrase after "my" names the attribute, the subject is its value.
fn inverse_fact(c: &Captures) -> Option<ExtractedFact> {
    let np = c.name("np")?.as_str();
    let value = c.name("v")?.as_str().trim();
    let a = attributes();
    // "Sam is my brother" names a relation, not a setting; only known attributes count here.
    if !a.knows(np) || !plausible(value, 4) {
        return None;
    }
    let key = a.key_for(np, value)?;
    let content = c.get(0)?.as_str().trim().trim_end_matches(['.', '!', ',', ';']).to_string();
    let content = content.trim_start_matches(|ch: char| !ch.is_alphanumeric()).to_string();
    Some(ExtractedFact::claimed(content, key, value, FactRule::Inverse, c.name("new").is_some(), Some(np.to_string())))
}

/// "my old dentist retired, the new one is dr lindqvist".
fn new_one_fact(clause: &str, c: &Captures) -> Option<ExtractedFact> {
    let np = c.name("np")?.as_str();
    let value = claim_cut(strip_article(cut_value(&clause[c.get(0)?.end()..], None)));
    if !plausible(value, 5) || attributes().names_person(np) && !attributes().knows(np) {
        return None;
    }
    let key = version_key(np, value).or_else(|| attributes().key_for(np, value))?;
    let content = format!("new {np}: {value}");
    Some(ExtractedFact::claimed(content, key, value, FactRule::NewOne, true, Some(np.to_string())))
}

/// "my X changed to V", "the cache node moved to 10.2.3.5", "our standup got pushed to 10:00".
fn change_fact(clause: &str, c: &Captures) -> Option<ExtractedFact> {
    let np = c.name("np")?.as_str();
    let a = attributes();
    if a.names_person(np) {
        return None;
    }
    let rest = &clause[c.get(0)?.end()..];
    let value = claim_cut(strip_article(cut_value(rest, None)));
    if !plausible(value, 6) {
        return None;
    }
    // "The" things and moves are only claimed with a value whose form says what it is.
    let determiner = c.name("s")?.as_str();
    let possessive = !determiner.eq_ignore_ascii_case("the") && !determiner.is_empty() || a.knows(np);
    let moved = c.name("verb").is_some_and(|v| v.as_str().eq_ignore_ascii_case("moved"));
    if (!possessive || moved) && !shape(value).is_exact() && !a.knows(np) {
        return None;
    }
    let key = version_key(np, value).or_else(|| a.key_for(np, value))?;
    let start = c.get(0)?.start();
    let content = format!("{} {}", clause[start..c.get(0)?.end()].trim_end(), value);
    let content = content.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(ExtractedFact::claimed(content, key, value, FactRule::Change, true, Some(np.to_string())))
}

/// "new address: 12 Main St", "my billing email: ap@example.com".
fn colon_fact(clause: &str, c: &Captures) -> Option<ExtractedFact> {
    let np = c.name("np")?.as_str();
    let value = claim_cut(strip_article(cut_value(&clause[c.get(0)?.end()..], None)));
    let marked = c.name("new").is_some() || c.name("s").is_some();
    if !plausible(value, 8) || !(marked || shape(value).is_exact()) || attributes().names_person(np) {
        return None;
    }
    if !(attributes().knows(np) || shape(value).is_exact()) {
        return None;
    }
    let key = attributes().key_for(np, value)?;
    let content = format!("{}: {value}", clause[..c.get(0)?.end()].trim().trim_end_matches(':').trim());
    let content = content.trim_start_matches(|ch: char| !ch.is_alphanumeric()).to_string();
    Some(ExtractedFact::claimed(content, key, value, FactRule::Terse, c.name("new").is_some(), Some(np.to_string())))
}
