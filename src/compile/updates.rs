//! Statements that give an attribute a (new) value: verb frames ("I bank with Monzo", "first
//! day at Acme"), changes of a named thing ("the cache node moved to 10.2.3.5", "we bumped node
//! to 20"), terse forms ("new address: 12 Main St") and replacements ("sold my old car and got
//! a Model 3").
//!
//! Events are usually told in the past ("I joined Acme last week"), so they are screened by a
//! narrower list than present-tense statements: hedges, negation, plans, credentials and
//! explicitly historic wording ("used to", "previously", "until") still block them.

use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::attributes::{attributes, phrase_words, shape, Shape};
use super::frames::{builtin_candidates, Frame, FrameMatch, Slot, LEAD};
use super::heuristic::{claim_cut, cut_value, looks_like_place, plausible_value, ExtractedFact, LinkHint, RawClaim};
use super::values::{first_word, first_word_lower, lower_name_run, name_run, strip_article, NAME_END};

struct Rules {
    event_skip: Vec<Regex>,
    update_mark: Regex,
    change: Regex,
    change_bare: Regex,
    colon: Regex,
    inverse: Regex,
    new_one: Regex,
    role_at: Regex,
    disposal: Regex,
    appositive: Regex,
    counted: Regex,
    list_head: Regex,
    cadence: Regex,
    version_tail: Regex,
}

static RULES: LazyLock<Rules> = LazyLock::new(|| crate::patterns::built("update rules", build()));

fn build() -> Result<Rules, regex::Error> {
    let np = r"(?P<np>[\p{L}\p{N}'’\-]+(?:\s+[\p{L}\p{N}'’\-]+){0,3}?)";
    Ok(Rules {
        event_skip: [
            r"(?i)\b(?:might|maybe|perhaps|probably|possibly|could|would|should|must|thinking\s+(?:about|of)|considering|consider|planning|plans?\s+to|wants?\s+to|wanted\s+to|wanna|hoping|hope\s+to|hopefully|not\s+sure|unsure|guess|supposedly|think|believe|suspect|assume|apparently|allegedly|likely|unlikely|wish|wonder|kind\s+of|sort\s+of|kinda|sorta|seems?|if|unless|whether|ideally|theoretically|hypothetically|pretend|imagine|dream(?:ing)?\s+of|tempted|debating|looking\s+(?:into|at)|eyeing|interview(?:ed|ing)?|applied|applying|offered|an\s+offer|in\s+talks|shortlisted|waitlist(?:ed)?|trial|trying\s+out|testing\s+out|evaluating|almost|nearly)\b|['’]d\b".to_string(),
            r"\b(?:may|will)\b".to_string(),
            r"(?i)\b(?:not|never|no|none|nobody|nothing|neither|nor|without|cannot|nope|dont|doesnt|didnt|isnt|arent|wasnt|werent|cant|wont|aint|hardly|barely)\b|n['’]t\b".to_string(),
            r"(?i)\b(?:used\s+to|previously|formerly|former|until|till|back\s+then|in\s+the\s+past|ex-|at\s+the\s+time|at\s+first|originally|before\s+(?:that|then|this))\b".to_string(),
            r"(?i)\b(?:going\s+to|gonna|next\s+(?:week|month|year|quarter|time|weekend|summer|winter|spring|fall|autumn|monday|tuesday|wednesday|thursday|friday)|soon|someday|some\s+day|tomorrow|upcoming|about\s+to|later|eventually|shortly)\b|['’]ll\b".to_string(),
            r"(?i)\b(?:passwords?|passcodes?|passphrases?|secrets?|tokens?|api\s+keys?|private\s+keys?|secret\s+keys?|access\s+keys?|ssn|social\s+security|credit\s+cards?|card\s+numbers?|cvv|otp|pin\s+(?:code|number)|credentials?)\b".to_string(),
        ]
        .iter()
        .map(|p| Regex::new(p))
        .collect::<Result<_, _>>()?,
        update_mark: Regex::new(
            r"(?i)\b(?:now|new|newly|since|switched|moved|migrated|upgraded|downgraded|replaced|bumped|changed|relocated|promoted|joined|left|anymore|any\s+more|these\s+days|as\s+of|updated|finally|officially|starting|took\s+over|instead)\b",
        )?,
        change: Regex::new(&format!(
            r"(?i)\b(?P<s>my|our|the)\s+{np}\s+(?:(?:has|have|had|just|finally|officially|now|been|got|was|were|is|are|also)\s+)*(?P<verb>changed|switched|moved|bumped|updated|upgraded|migrated|shifted|pushed|pointed|repointed|reset|set|gone|went)\s+(?:over\s+)?(?:from\s+\S+(?:\s+\S+)?\s+)?to\s+"
        ))?,
        // Terse chat drops the determiner: "standup got pushed to 10:15".
        change_bare: Regex::new(&format!(
            r"(?i){LEAD}(?P<s>)(?P<np>[\p{{L}}\p{{N}}\-]+(?:\s+[\p{{L}}\p{{N}}'’\-]+){{0,3}}?)\s+(?:(?:has|have|had|just|finally|officially|now|been|got|was|were|is|are|also)\s+)*(?P<verb>changed|switched|moved|bumped|updated|upgraded|migrated|shifted|pushed|pointed|repointed|reset|set)\s+(?:over\s+)?(?:from\s+\S+(?:\s+\S+)?\s+)?to\s+"
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
        // "my old bike", "the previous host": what a statement says is gone.
        disposal: Regex::new(r"(?i)\b(?:my|our|the)\s+(?:old|previous|former|last|existing)\s+(?P<n>[\w-]+(?:\s+[\w-]+)?)|\b(?:my|our|the)\s+(?P<d>[\w-]+(?:\s+[\w-]+)?)\s+(?:died|broke|is\s+dead|was\s+stolen|got\s+stolen|is\s+gone|quit\s+on\s+me|gave\s+out|got\s+cancelled|was\s+cancelled|closed)\b")?,
        // "we got a new manager, Rafael Costa".
        appositive: Regex::new(&format!(
            r"(?i)\b(?:got|have|has|there's|theres|met|welcomed|hired)\s+(?:a|an|our|my)\s+new\s+{np}\s*(?:[,:—–]|\s-)\s*"
        ))?,
        // "we're at 24 seats", "We have 10 seats on the plan".
        counted: Regex::new(r"(?i)\b(?:have|at|to|with|got|now|pay\s+for|paying\s+for)\s+(?P<v>\d[\d,.]*)\s+(?P<np>[\p{L}-]+(?:\s+[\p{L}-]+)?)")?,
        list_head: Regex::new(r"^\W*[\p{L}][\p{L}\p{N} '’-]{0,30}:\s+")?,
        cadence: Regex::new(
            r"(?i)\b(?:every|each|daily|weekly|biweekly|bi-weekly|fortnightly|monthly|quarterly|nightly|hourly|yearly|annually|per\s+(?:day|week|month|sprint)|a\s+(?:day|week|month)|twice|once|continuously|on\s+(?:mondays|tuesdays|wednesdays|thursdays|fridays|demand))\b",
        )?,
        version_tail: Regex::new(r"^(?P<name>[A-Za-z][\w.+#-]*(?:\s+[A-Za-z][\w+#-]*)?)\s+(?P<ver>v?\d+(?:\.\d+){0,3}(?:\.x)?)$")?,
    })
}

/// True when a clause that fails the present-tense screen may still carry an event.
pub(super) fn event_allowed(clause: &str) -> bool {
    !RULES.event_skip.iter().any(|re| re.is_match(clause))
}

/// True when the clause marks a change ("now", "new", "switched", "since"…).
pub(super) fn marks_update(clause: &str) -> bool {
    RULES.update_mark.is_match(clause)
}

/// Facts from frames, named-thing changes and terse forms, with their byte position.
/// `present_ok` is false when the clause failed the present-tense screen: only events then.
pub(super) fn update_facts(clause: &str, present_ok: bool, extra: &[Frame]) -> Vec<(usize, ExtractedFact)> {
    let r = &*RULES;
    let straight = clause.replace('’', "'");
    let update = marks_update(&straight);
    let mut out = Vec::new();
    for f in extra.iter().chain(builtin_candidates(&straight)) {
        if !present_ok && !f.event {
            continue;
        }
        if let Some(m) = f.find(&straight) {
            if let Some(fact) = frame_fact(r, &straight, &m, update) {
                out.push((m.span.0, fact));
            }
        }
    }
    for c in r.change.captures_iter(&straight) {
        out.extend(change_fact(&straight, &c).map(|f| (c.get(0).map_or(0, |m| m.start()), f)));
    }
    if let Some(c) = r.change_bare.captures(&straight) {
        // Without a determiner only a phrase the registry knows names the user's own thing.
        if c.name("np").is_some_and(|np| known(np.as_str())) {
            out.extend(change_fact(&straight, &c).map(|f| (0, f)));
        }
    }
    if present_ok || update {
        if let Some(c) = r.colon.captures(&straight) {
            out.extend(colon_fact(&straight, &c).map(|f| (0, f)));
        }
    }
    if present_ok {
        if let Some(c) = r.inverse.captures(&straight) {
            out.extend(inverse_fact(&c).map(|f| (0, f)));
        }
    }
    if present_ok {
        if let Some(c) = r.role_at.captures(&straight) {
            out.extend(role_at_fact(&straight, &c).map(|f| (c.get(0).map_or(0, |m| m.start()), f)));
        }
    }
    if present_ok || update {
        for c in r.counted.captures_iter(&straight) {
            out.extend(counted_fact(&straight, &c).map(|f| (c.get(0).map_or(0, |m| m.start()), f)));
        }
    }
    if let Some(c) = r.appositive.captures(&straight) {
        out.extend(appositive_fact(&straight, &c).map(|f| (c.get(0).map_or(0, |m| m.start()), f)));
    }
    if let Some(c) = r.new_one.captures(&straight) {
        out.extend(new_one_fact(&straight, &c).map(|f| (c.get(0).map_or(0, |m| m.start()), f)));
    }
    out
}

/// "I'm a junior designer at Polaris": the employer after a job title.
fn role_at_fact(clause: &str, c: &Captures) -> Option<ExtractedFact> {
    let role = c.name("role")?.as_str();
    if !role.split_whitespace().last().is_some_and(|w| attributes().is_role(w)) {
        return None;
    }
    let rest = cut_value(&clause[c.get(0)?.end()..]);
    let lower = !clause.chars().any(char::is_uppercase);
    let value = if lower { lower_name_run(rest) } else { name_run(rest) };
    let capital = value.chars().next().is_some_and(char::is_uppercase);
    if !plausible_value(value, 5) || !(capital || lower) {
        return None;
    }
    let start = c.get(0)?.start();
    let content = format!("{} {value}", clause[start..c.get(0)?.end()].trim_end());
    let hint = LinkHint { update: marks_update(clause), object: None, old: None, value: value.to_string(), kinds: &[] };
    let claim = Some(RawClaim { key: "employment.current_employer".into(), value: value.to_string() });
    Some(ExtractedFact { content, claim, rule: "role_at", link: Some(hint) })
}

/// "now at 16 seats": a count of a thing the registry knows.
fn counted_fact(clause: &str, c: &Captures) -> Option<ExtractedFact> {
    let value = c.name("v")?.as_str();
    let words: Vec<&str> = c.name("np")?.as_str().split_whitespace().collect();
    // The longest known phrase ("store locations" before "store").
    let np = (1..=words.len()).rev().map(|n| words[..n].join(" ")).find(|p| known(p))?;
    let key = attributes().key_for(&np, value)?;
    let start = c.get(0)?.start();
    let end = c.name("v")?.end() + 1 + np.len();
    let content = clause.get(start..end.min(clause.len()))?.to_string();
    Some(claimed(content, key, value, "count", marks_update(clause), Some(np.clone())))
}

/// "we got a new manager, Rafael Costa".
fn appositive_fact(clause: &str, c: &Captures) -> Option<ExtractedFact> {
    let np = c.name("np")?.as_str();
    if !known(np) {
        return None;
    }
    let rest = cut_value(&clause[c.get(0)?.end()..]);
    let lower = !clause.chars().any(char::is_uppercase);
    let value = if lower { lower_name_run(rest) } else { name_run(rest) };
    if !plausible_value(value, 4)
        || !(value.chars().next().is_some_and(char::is_uppercase) || lower || shape(value).is_exact())
    {
        return None;
    }
    let key = attributes().key_for(np, value)?;
    let content = format!("new {np}: {value}");
    let hint = LinkHint { update: true, object: Some(np.to_string()), old: None, value: value.to_string(), kinds: &[] };
    Some(ExtractedFact {
        content,
        claim: Some(RawClaim { key, value: value.to_string() }),
        rule: "appositive",
        link: Some(hint),
    })
}

/// The items of a list-like sentence ("Contact details: email a@b.co, phone 0412 555 018"),
/// each to be read as a clause of its own; empty for other sentences.
pub(super) fn list_items(sentence: &str) -> Vec<&str> {
    let r = &*RULES;
    let body = r.list_head.find(sentence).map_or(sentence, |m| &sentence[m.end()..]);
    let headed = body.len() < sentence.len();
    let items: Vec<&str> = body.split([',', ';']).map(str::trim).filter(|i| !i.is_empty()).collect();
    if !(headed && !items.is_empty() || items.len() >= 3) {
        return Vec::new();
    }
    items
}

/// One list item: "email hana@softloop.example", "billing contact Joy Park", "18 seats",
/// "Team plan", "role: dispatcher".
pub(super) fn item_fact(item: &str) -> Option<ExtractedFact> {
    let a = attributes();
    let item = item.trim().trim_end_matches(['.', '!']);
    let words: Vec<&str> = item.split_whitespace().collect();
    if words.len() < 2 || words.len() > 8 {
        return None;
    }
    let fact = |np: &str, value: &str, content: String| -> Option<ExtractedFact> {
        let value = claim_cut(value.trim().trim_start_matches(':').trim());
        if !plausible_value(value, 5) || a.names_person(np) && !known(np) {
            return None;
        }
        let key = a.key_for(np, value)?;
        let hint = LinkHint {
            update: marks_update(item),
            object: Some(np.to_string()),
            old: None,
            value: value.to_string(),
            kinds: &[],
        };
        Some(ExtractedFact {
            content,
            claim: Some(RawClaim { key, value: value.to_string() }),
            rule: "list_item",
            link: Some(hint),
        })
    };
    // "np: value" and "np value": the longest known phrase first.
    for n in (1..=3.min(words.len() - 1)).rev() {
        let np = words[..n].join(" ");
        let np = np.trim_end_matches(':');
        let value = words[n..].join(" ");
        let colon = words[n - 1].ends_with(':');
        let value_ok = colon
            || shape(first_word(&value)).is_exact()
            || value.chars().next().is_some_and(|c| c.is_uppercase() || c.is_ascii_digit());
        if known(np) && value_ok {
            return fact(np, &value, item.to_string());
        }
    }
    // "value np": "18 seats", "Team plan", "weekly rotation".
    for n in (1..=2.min(words.len() - 1)).rev() {
        let np = words[words.len() - n..].join(" ");
        let value = words[..words.len() - n].join(" ");
        let named = value.chars().next().is_some_and(|c| c.is_uppercase() || c.is_ascii_digit());
        if known(&np) && words.len() - n <= 3 && named {
            return fact(&np, &value, item.to_string());
        }
    }
    None
}

/// The thing a statement says is gone ("sold the old car", "the previous host"), if any.
pub(super) fn disposed_thing(statement: &str) -> Option<String> {
    let r = &*RULES;
    let c = r.disposal.captures(statement)?;
    let words: Vec<&str> = c.name("n").or_else(|| c.name("d"))?.as_str().split_whitespace().collect();
    let keep: Vec<&str> = words
        .iter()
        .take_while(|w| {
            let w = w.to_lowercase();
            !NAME_END.contains(&w.as_str())
                && !["away", "off", "got", "was", "were", "has", "had", "one", "is"].contains(&w.as_str())
        })
        .copied()
        .collect();
    (!keep.is_empty()).then(|| keep.join(" "))
}

/// "Dr. Patel is my dentist": the phrase after "my" names the attribute, the subject is its value.
fn inverse_fact(c: &Captures) -> Option<ExtractedFact> {
    let np = c.name("np")?.as_str();
    let value = c.name("v")?.as_str().trim();
    let a = attributes();
    // "Sam is my brother" names a relation, not a setting; only known attributes count here.
    if !known(np) || !plausible_value(value, 4) {
        return None;
    }
    let key = a.key_for(np, value)?;
    let content = c.get(0)?.as_str().trim().trim_end_matches(['.', '!', ',', ';']).to_string();
    let content = content.trim_start_matches(|ch: char| !ch.is_alphanumeric()).to_string();
    Some(claimed(content, key, value, "inverse", c.name("new").is_some(), Some(np.to_string())))
}

/// "my old dentist retired, the new one is dr lindqvist".
fn new_one_fact(clause: &str, c: &Captures) -> Option<ExtractedFact> {
    let np = c.name("np")?.as_str();
    let value = claim_cut(strip_article(cut_value(&clause[c.get(0)?.end()..])));
    if !plausible_value(value, 5) || attributes().names_person(np) && !known(np) {
        return None;
    }
    let key = version_key(np, value).or_else(|| attributes().key_for(np, value))?;
    let content = format!("new {np}: {value}");
    let hint = LinkHint { update: true, object: Some(np.to_string()), old: None, value: value.to_string(), kinds: &[] };
    Some(ExtractedFact {
        content,
        claim: Some(RawClaim { key, value: value.to_string() }),
        rule: "new_one",
        link: Some(hint),
    })
}

fn frame_fact(r: &Rules, clause: &str, m: &FrameMatch, update: bool) -> Option<ExtractedFact> {
    let raw = &clause[m.value.0..m.value.1];
    let value = strip_article(if m.trailing { cut_value(raw) } else { raw.trim() });
    // Someone who writes without capitals gives no capitals to names either.
    let lower = !clause.chars().any(char::is_uppercase);
    let value = match m.slot {
        Slot::Name | Slot::Place if lower => lower_name_run(value),
        Slot::Name | Slot::Place if m.trailing => name_run(value),
        Slot::Value | Slot::Role if m.trailing => claim_cut(value),
        _ => value,
    };
    if !plausible_value(value, 6) || !slot_accepts(r, m.slot, value, lower) {
        return None;
    }
    // `value` is a slice of `clause`, so its offset tells where the statement ends.
    let value_end = value.as_ptr() as usize - clause.as_ptr() as usize + value.len();
    let end = if m.trailing { value_end } else { m.span.1 };
    let content = clause[m.span.0..end.max(m.span.0)].split_whitespace().collect::<Vec<_>>().join(" ");
    let content = content.trim_end_matches([',', '.', ';', ':']).to_string();
    let hint =
        LinkHint { update: update || m.event, object: None, old: m.old.clone(), value: value.to_string(), kinds: &[] };
    if m.key == "link" {
        // "got a OnePlus 9": a thing of one kind is the value of that attribute.
        let claim = attributes().kind_of(value).map(|key| RawClaim { key, value: value.to_string() });
        return Some(ExtractedFact { content, claim, rule: "replacement", link: Some(hint) });
    }
    let claim = Some(RawClaim { key: m.key.clone(), value: value.to_string() });
    Some(ExtractedFact { content, claim, rule: if m.event { "update_event" } else { "frame" }, link: Some(hint) })
}

fn slot_accepts(r: &Rules, slot: Slot, value: &str, lower: bool) -> bool {
    let a = attributes();
    let first_upper = value.chars().next().is_some_and(|c| c.is_uppercase() || c.is_ascii_digit());
    let lower_ok = lower
        && !value.is_empty()
        && !["a", "an", "the", "my", "our", "some", "this", "that", "it"].contains(&first_word_lower(value).as_str());
    match slot {
        Slot::Value | Slot::Diet => true,
        Slot::Name => first_upper || shape(value).is_exact() || lower_ok,
        Slot::Place => looks_like_place(value) || lower_ok && !value.contains(['.', '/', '@']),
        Slot::Role => {
            value.split_whitespace().last().is_some_and(|w| a.is_role(w.trim_matches(|c: char| !c.is_alphanumeric())))
        }
        Slot::Cadence => r.cadence.is_match(value),
    }
}

/// "my X changed to V", "the cache node moved to 10.2.3.5", "our standup got pushed to 10:00".
fn change_fact(clause: &str, c: &Captures) -> Option<ExtractedFact> {
    let np = c.name("np")?.as_str();
    let a = attributes();
    if a.names_person(np) {
        return None;
    }
    let rest = &clause[c.get(0)?.end()..];
    let value = claim_cut(strip_article(cut_value(rest)));
    if !plausible_value(value, 6) {
        return None;
    }
    // "The" things and moves are only claimed with a value whose form says what it is.
    let determiner = c.name("s")?.as_str();
    let possessive = !determiner.eq_ignore_ascii_case("the") && !determiner.is_empty() || known(np);
    let moved = c.name("verb").is_some_and(|v| v.as_str().eq_ignore_ascii_case("moved"));
    if (!possessive || moved) && !shape(value).is_exact() && !known(np) {
        return None;
    }
    let key = version_key(np, value).or_else(|| a.key_for(np, value))?;
    let start = c.get(0)?.start();
    let content = format!("{} {}", clause[start..c.get(0)?.end()].trim_end(), value);
    let content = content.split_whitespace().collect::<Vec<_>>().join(" ");
    let hint = LinkHint { update: true, object: Some(np.to_string()), old: None, value: value.to_string(), kinds: &[] };
    Some(ExtractedFact {
        content,
        claim: Some(RawClaim { key, value: value.to_string() }),
        rule: "change",
        link: Some(hint),
    })
}

/// "new address: 12 Main St", "my billing email: ap@example.com".
fn colon_fact(clause: &str, c: &Captures) -> Option<ExtractedFact> {
    let np = c.name("np")?.as_str();
    let value = claim_cut(strip_article(cut_value(&clause[c.get(0)?.end()..])));
    let marked = c.name("new").is_some() || c.name("s").is_some();
    if !plausible_value(value, 8) || !(marked || shape(value).is_exact()) || attributes().names_person(np) {
        return None;
    }
    if !(known(np) || shape(value).is_exact()) {
        return None;
    }
    let key = attributes().key_for(np, value)?;
    let content = format!("{}: {value}", clause[..c.get(0)?.end()].trim().trim_end_matches(':').trim());
    let content = content.trim_start_matches(|ch: char| !ch.is_alphanumeric()).to_string();
    let update = c.name("new").is_some();
    let hint = LinkHint { update, object: Some(np.to_string()), old: None, value: value.to_string(), kinds: &[] };
    Some(ExtractedFact {
        content,
        claim: Some(RawClaim { key, value: value.to_string() }),
        rule: "terse",
        link: Some(hint),
    })
}

/// A fact whose claim is `key = value`, with the hint the linker reads.
fn claimed(
    content: String,
    key: String,
    value: &str,
    rule: &'static str,
    update: bool,
    object: Option<String>,
) -> ExtractedFact {
    let hint = LinkHint { update, object, old: None, value: value.to_string(), kinds: &[] };
    ExtractedFact { content, claim: Some(RawClaim { key, value: value.to_string() }), rule, link: Some(hint) }
}

/// True when the phrase is one the attribute registry knows (not a made-up `attr.` slug).
fn known(np: &str) -> bool {
    attributes().group_key(np).is_some()
}

/// "Postgres 16" as the value of a thing named "the database" is still a version of Postgres;
/// "node to 20" is node's version. Versions of one tool supersede each other, tools accumulate.
pub(super) fn version_key(object: &str, value: &str) -> Option<String> {
    let r = &*RULES;
    if let Some(c) = r.version_tail.captures(value.trim()) {
        let name = c.name("name")?.as_str();
        return tool_version_key(name);
    }
    if matches!(shape(value), Shape::Version | Shape::Number) {
        let words = phrase_words(object);
        if words.len() == 1 && attributes().key_for(&words[0], value).is_some_and(|k| k.starts_with("attr.")) {
            return tool_version_key(&words[0]);
        }
    }
    None
}

fn tool_version_key(name: &str) -> Option<String> {
    let slug: String = name
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect::<String>()
        .split('_')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("_");
    (!slug.is_empty() && slug.len() <= 40).then(|| format!("attr.{slug}_version"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(s: &str) -> Vec<(Option<(String, String)>, String)> {
        update_facts(s, true, &[]).into_iter().map(|(_, f)| (f.claim.map(|c| (c.key, c.value)), f.content)).collect()
    }

    fn claim(s: &str) -> Option<(String, String)> {
        facts(s).into_iter().find_map(|(c, _)| c)
    }

    fn kv(k: &str, v: &str) -> Option<(String, String)> {
        Some((k.to_string(), v.to_string()))
    }

    #[test]
    fn frames_give_claims() {
        assert_eq!(claim("I bank with Monzo"), kv("attr.bank", "Monzo"));
        assert_eq!(claim("we host on Fly.io"), kv("attr.hosting", "Fly.io"));
        assert_eq!(claim("I ride my Brompton to work"), kv("attr.commute", "Brompton"));
        assert_eq!(claim("our frontend is built with React"), kv("attr.frontend_stack", "React"));
        assert_eq!(claim("we're on the Team tier"), kv("attr.plan", "Team"));
        assert_eq!(claim("after the reorg, Sam runs my team"), kv("attr.manager", "Sam"));
        assert_eq!(claim("first day at Acme Robotics went well"), kv("employment.current_employer", "Acme Robotics"));
        assert_eq!(claim("got promoted to Staff Engineer"), kv("attr.job_title", "Staff Engineer"));
        assert_eq!(claim("we're settled into the new flat in Ghent"), kv("location.current_home", "Ghent"));
        assert_eq!(claim("we ship every two weeks"), kv("attr.release_cadence", "every two weeks"));
    }

    #[test]
    fn changes_of_named_things() {
        assert_eq!(claim("the cache node moved to 10.2.3.5"), kv("attr.cache_node", "10.2.3.5"));
        assert_eq!(claim("we bumped node to 20"), None);
        assert_eq!(claim("my email changed to dana@new.io"), kv("attr.email", "dana@new.io"));
        assert_eq!(claim("our standup got pushed to 10:15"), kv("attr.standup", "10:15"));
        assert_eq!(claim("my manager moved to Berlin"), None);
        assert_eq!(claim("the meeting moved to Tuesday"), None);
    }

    #[test]
    fn terse_forms() {
        assert_eq!(claim("new address: 12 Harbour Lane, Leith"), kv("attr.address", "12 Harbour Lane"));
        assert_eq!(
            claim("webhook endpoint: https://hooks.example.com/v2"),
            kv("attr.webhook_endpoint", "https://hooks.example.com/v2")
        );
        assert_eq!(claim("lunch: pizza"), None);
    }

    #[test]
    fn value_first_and_new_one() {
        assert_eq!(claim("dr okafor is my dentist"), kv("attr.dentist", "dr okafor"));
        assert_eq!(claim("Sam Rivera is our new team lead"), kv("attr.manager", "Sam Rivera"));
        assert_eq!(claim("Sam is my brother"), None);
        assert_eq!(
            claim("my old dentist retired :( new one is dr lindqvist, closer to work"),
            kv("attr.dentist", "dr lindqvist")
        );
        assert_eq!(claim("Got a new number: 555-0199"), kv("attr.phone_number", "555-0199"));
    }

    #[test]
    fn replacements_need_linking() {
        let got = update_facts("gave my old bike away and got an e-scooter", true, &[]);
        let (_, f) = got.first().expect("a replacement");
        // An e-scooter can only be a commute; what it replaces is linked later.
        assert_eq!(f.claim.as_ref().map(|c| c.key.as_str()), Some("attr.commute"));
        let hint = f.link.as_ref().expect("hint");
        assert_eq!((hint.old.as_deref(), hint.value.as_str()), (Some("bike"), "e-scooter"));
    }

    #[test]
    fn events_pass_a_narrower_screen() {
        assert!(event_allowed("I joined Acme last week"));
        assert!(!event_allowed("I might join Acme"));
        assert!(!event_allowed("I used to work at Acme"));
        assert!(!event_allowed("I interviewed at Acme"));
        assert!(!event_allowed("we're not switching banks"));
    }

    #[test]
    fn versions() {
        assert_eq!(version_key("", "Postgres 16").as_deref(), Some("attr.postgres_version"));
        assert_eq!(version_key("node", "20").as_deref(), Some("attr.node_version"));
        assert_eq!(version_key("cache node", "10.2.3.5"), None);
    }
}
