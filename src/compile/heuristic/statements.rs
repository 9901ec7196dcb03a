//! What one matched pattern states: a name, an attribute ("my X is V"), a trigger ("I work at
//! X") or a migration ("we moved from X to Y"), each as a fact with its claim and link hint.

use regex::Captures;

use super::rules::{group, rest, Kind, Rules, Trigger, HOME, NAME_KEY, TOOLS};
use crate::compile::attributes::{attributes, shape, Shape};
use crate::compile::fact::{ExtractedFact, FactRule, LinkHint, RawClaim};
use crate::compile::updates::marks::marks_update;
use crate::compile::values::{
    claim_cut, cut_value, first_word, in_list, looks_like_place, plausible, starts_upper, strip_leading, version_key,
    TITLES,
};

/// Leading words after which a value is a description, not a name to claim.
const NOT_CLAIMABLE: &str =
    "my our your his her their its some any every each home night nights weekends remote remotely \
    free several many multiple various lots lot different another other all";
/// Capitalised words after "I'm" that are states or fillers rather than names.
const NOT_NAMES: &str = "fine good great okay ok happy sad tired busy sorry sure here there back ready done new not \
    just so very really also still currently now glad excited afraid hungry sick bored confused \
    stuck lost interested working going trying looking using learning building thinking a an the \
    in at on from into with well all always only home awake alive free available late early \
    online offline retired single married i me";

/// "my name is Dana Reyes" (claimed) or "I'm Dana" (fact only).
pub(super) fn name_fact(c: &Captures, clause: &str, intro: bool) -> Option<ExtractedFact> {
    let n = c.name("n")?;
    let name = n.as_str().trim();
    let words: Vec<&str> = name.split_whitespace().collect();
    let first = words.first()?.to_lowercase();
    let followed_ok = clause[n.end()..].chars().next().is_none_or(|ch| ch.is_whitespace() || ".,;:!)".contains(ch));
    let possessive = name.ends_with("'s") || name.ends_with("’s");
    if words.len() > 4 || in_list(TITLES, &first) || possessive || !followed_ok {
        return None;
    }
    if intro {
        if in_list(NOT_NAMES, &first) {
            return None;
        }
        return Some(fact(&[group(c, "s"), name], None, FactRule::IntroName));
    }
    let claim = claim(NAME_KEY, name);
    Some(fact(&[group(c, "s"), group(c, "v"), name], claim, FactRule::Name))
}

/// "my dog's name is Biscuit", "my favorite editor is Helix", "our database is Postgres 15",
/// "the cache node's address is 10.2.3.4". The attribute phrase becomes the claim key (an open
/// attribute unless the registry knows it); "the …" phrases count only with an exact value
/// (an address, a path, a URL…), since "the weather is nice" is no setting of the user's.
pub(super) fn attribute_fact(r: &Rules, c: &Captures, clause: &str) -> Option<ExtractedFact> {
    let np = group(c, "np");
    let verb = group(c, "v");
    let possessive = verb.starts_with(['\'', '’']);
    if r.np_skip.is_match(np) || !is_subject(&clause[..c.get(0).map_or(0, |m| m.start())], possessive) {
        return None;
    }
    let mut value = cut_value(rest(c, clause), None);
    let mut update = marks_update(np) || marks_update(verb);
    while let Some(stripped) = strip_leading(value, &["now", "currently", "officially", "actually", "still"]) {
        update |= !value.to_lowercase().starts_with("still");
        value = stripped;
    }
    // "my money's at Tidewater Bank": the kind of place says which attribute it is.
    if let Some(rest) = strip_leading(value, &["at", "with", "through", "via"]) {
        if let Some(key) = attributes().kind_of(rest) {
            let v = claim_cut(rest);
            let mut f = fact(&[subject_of(c), np, verb, value], claim(&key, v), FactRule::Attribute);
            f.link = Some(LinkHint { update, object: None, old: None, value: v.to_string(), kinds: &[] });
            return Some(f);
        }
    }
    // "the staging server is at 203.0.113.17": the address is the value.
    if let Some(stripped) = strip_leading(value, &["at", "on", "in"]) {
        if shape(first_word(stripped)).is_exact() {
            value = first_word(stripped);
        } else if version_key("", claim_cut(stripped)).is_some() {
            // "the build server's on node 18".
            value = stripped;
        }
    }
    if !plausible(value, 10) || r.passive.is_match(value) {
        return None;
    }
    let subject = group(c, "s");
    let the = subject.eq_ignore_ascii_case("the");
    let bare = subject.is_empty();
    let contracted = verb.starts_with(['\'', '’']);
    let a = attributes();
    let exact = shape(first_word(value)).is_exact();
    if the && !exact || contracted && (value.contains(" is ") || value.contains(" are ")) {
        return None;
    }
    // Without "my"/"our", only a phrase the registry knows or a value whose form says what it
    // is ("10.0.4.12", "Django 3.2") reads as the user's own setting.
    let versioned = version_key("", claim_cut(value)).is_some();
    if bare
        && (a.names_person(np)
            || in_list(NOT_ATTRIBUTES, &np.to_lowercase())
            || !(a.group_key(np).is_some() || exact || versioned))
    {
        return None;
    }
    let rule = if subject.eq_ignore_ascii_case("our") || the || bare {
        FactRule::TeamSetup
    } else if np.to_lowercase().starts_with("favo") {
        FactRule::Favorite
    } else {
        FactRule::Attribute
    };
    let claim_value = claim_cut(strip_leading(value, &["a", "an", "the"]).unwrap_or(value));
    let claim = claimable_attribute(value)
        .then(|| a.key_for(np, claim_value))
        .flatten()
        .and_then(|key| claim(&key, claim_value));
    let head = if contracted { format!("{np}{verb}") } else { format!("{np} {verb}") };
    let mut f = fact(&[subject, &head, value], claim, rule);
    let update = update || marks_update(clause);
    f.link =
        Some(LinkHint { update, object: Some(np.to_string()), old: None, value: claim_value.to_string(), kinds: &[] });
    Some(f)
}

/// Whether "my X …" after `before` (the clause up to it) is what the clause is about, its
/// subject: not the object of a verb or a preposition ("I'm trying to optimize my website's SEO",
/// "having trouble with my Flask app's deployment", "sticking to my schedule is key", "keeping
/// my original vision in mind is super important"). Prepositions that also join a noun's own
/// phrase ("the billing contact for our account is …", "the name of my dog is …") do not count,
/// nor does a verb in the progressive ("I'm doing my bachelor's at Kestrel"). After "to <verb>"
/// only a possessive ("to optimize my website's SEO") is an object: "happy to say my title is
/// Staff Engineer" states the title.
fn is_subject(before: &str, possessive: bool) -> bool {
    const BEFORE_OBJECT: [&str; 5] = ["with", "to", "into", "onto", "about"];
    const BE: [&str; 9] = ["i'm", "im", "am", "are", "we're", "is", "was", "were", "been"];
    let tail = before.rsplit([',', ';', ':', '—', '–', '(']).next().unwrap_or(before).to_lowercase().replace('’', "'");
    let words: Vec<&str> =
        tail.split_whitespace().map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')).collect();
    let back = |n: usize| words.len().checked_sub(n).and_then(|i| words.get(i)).copied().unwrap_or("");
    let gerund = back(1).len() > 4 && back(1).ends_with("ing") && !BE.contains(&back(2));
    !(BEFORE_OBJECT.contains(&back(1)) || gerund || possessive && back(2) == "to")
}

fn subject_of<'a>(c: &Captures<'a>) -> &'a str {
    group(c, "s")
}

/// Phrases that open a clause without naming a setting ("today is Monday", "it's fine").
const NOT_ATTRIBUTES: &str = "it this that there here today tomorrow yesterday tonight everything nothing something \
    anything life work weather what which who he she they we you i one all both none each mine ours";

/// Words that open a description or a state rather than a value ("my car is in the shop",
/// "our deploy is broken", "my job is killing me").
const NOT_VALUES: &str = "in at on with from for by under over near inside outside so very really quite pretty too \
    super kinda bit being getting going still always usually sometimes great good bad awesome terrible fine ok okay \
    nice broken down up slow fast busy full empty late early closed open gone missing dead back done ready huge \
    tiny big small old amazing annoying weird strange cool lovely happy sad tired sick";

fn claimable_attribute(value: &str) -> bool {
    let words: Vec<&str> = value.split_whitespace().collect();
    let Some(first) = words.first().map(|w| w.to_lowercase()) else {
        return false;
    };
    words.len() <= 6 && !in_list(NOT_VALUES, &first) && !(first.ends_with("ing") && first.len() > 5)
}

/// "I work at Globex", "I'm at Harwell Community College", "we use Kubernetes".
pub(super) fn trigger_fact(r: &Rules, t: &Trigger, c: &Captures, clause: &str) -> Option<ExtractedFact> {
    // "we run on AWS" is where the team hosts (a verb frame), not a tool it runs.
    if t.rule == FactRule::TeamTool && rest(c, clause).to_lowercase().starts_with("on ") {
        return None;
    }
    let extra = match t.kind {
        Kind::Place | Kind::Capitalised => Some(&r.place_stop),
        Kind::Team => Some(&r.team_stop),
        _ => None,
    };
    let value = cut_value(rest(c, clause), extra);
    let limit = match t.kind {
        Kind::Place | Kind::Capitalised => 6,
        Kind::Team => 8,
        Kind::Tool => 12,
        Kind::Role => 8,
        Kind::Pref => 10,
    };
    if !plausible(value, limit) {
        return None;
    }
    let team = r.team_noun.is_match(value);
    // "the Netherlands" counts as capitalised; "the office" does not.
    let capital = starts_upper(value) || claimable(value, usize::MAX) && value.to_lowercase().starts_with("the ");
    let article = value.split_whitespace().next().is_some_and(|w| matches!(w, "a" | "an" | "A" | "An"));
    let claim_value = match t.kind {
        Kind::Capitalised if !capital => return None,
        Kind::Role if !(capital || article) => return None,
        Kind::Team if !team && !capital => return None,
        Kind::Tool => tool_claim(r, value),
        Kind::Team if !team => tool_claim(r, value),
        Kind::Place => claimable(value, 5).then(|| value.to_string()),
        Kind::Pref => Some(value.to_string()),
        Kind::Role => Some(strip_leading(value, &["a", "an"]).unwrap_or(value).to_string()),
        _ => None,
    };
    // "I'm at Harwell Community College", "I'm on Pacific time": the kind of place or thing
    // says which attribute it is.
    let typed = matches!(t.rule, FactRule::LocatedAt | FactRule::OnTeam | FactRule::TeamOn)
        .then(|| attributes().kind_of(value))
        .flatten();
    let claim_value = if typed.is_some() { Some(claim_cut(value).to_string()) } else { claim_value };
    let key = typed.or(t.key.map(str::to_string));
    let claim = key.as_deref().zip(claim_value).and_then(|(k, v)| {
        // "We're on Postgres 15": versions of one tool replace each other, tools accumulate.
        let key = if k == TOOLS { version_key("", &v).unwrap_or_else(|| k.to_string()) } else { k.to_string() };
        claim(&key, &v)
    });
    let mut f = fact(&[group(c, "s"), group(c, "v"), value], claim, t.rule);
    let kinds: &'static [&'static str] =
        if t.rule == FactRule::LocatedAt { &["employment.current_employer", "attr.school", "attr.gym"] } else { &[] };
    f.link = Some(LinkHint { update: marks_update(clause), object: None, old: None, value: value.to_string(), kinds });
    Some(f)
}

/// "we moved from X to Y" keeps only "we moved to Y"; X is never emitted as current, but is
/// kept as the replaced value for linking. "bumped node to 20" is node's version, "moved our
/// hosting to Fly.io" the hosting attribute, "moved to Ghent" a new home.
pub(super) fn migration_fact(r: &Rules, c: &Captures, clause: &str) -> Option<ExtractedFact> {
    // A chain told in one sentence ends where it is now: its last step's value is the value.
    let after = rest(c, clause);
    let after = r.chain_next.find_iter(after).last().map_or(after, |m| &after[m.end()..]);
    let cut_rest = cut_value(after, None);
    let value = claim_cut(strip_leading(cut_rest, &["a", "an", "the"]).unwrap_or(cut_rest));
    if !plausible(value, 8) {
        return None;
    }
    let verb = group(c, "v");
    let moved = verb.eq_ignore_ascii_case("moved");
    // "my login email in settings" is the login email.
    let object = group(c, "o").trim();
    let object =
        object.find([' ']).and_then(|_| r.place_stop.find(object)).map_or(object, |m| object[..m.start()].trim());
    let a = attributes();
    if !object.is_empty() && a.names_person(object) {
        return None;
    }
    let tiered = verb.to_lowercase().ends_with("graded");
    let key = if object.is_empty() {
        // "upgraded to a Galaxy S22": the kind of thing says which attribute changed.
        version_key("", value).or_else(|| a.kind_of(value)).or_else(|| {
            if moved {
                looks_like_place(value).then(|| HOME.to_string())
            } else if tiered {
                // "upgraded to Premium": a plan; linked to the subject's plan if it has one.
                None
            } else {
                tool_claim(r, value).map(|_| TOOLS.to_string())
            }
        })
    } else if matches!(shape(value), Shape::Version | Shape::Number) {
        // "bumped node to 20": the object is the tool whose version changed.
        version_key(object, value).or_else(|| a.key_for(object, value))
    } else {
        // "reinstalled the dev box with Fedora 40": the object names the attribute.
        a.key_for(object, value).or_else(|| version_key(object, value))
    };
    // "moved to weekly releases", "switched to annual billing": the value's head names the
    // attribute, the words before it are the new value.
    let (key, value) = match (&key, object.is_empty()) {
        (None, true) => named_by_head(value).map_or((None, value), |(k, v)| (Some(k), v)),
        _ => (key, value),
    };
    let claim_value = if key.as_deref() == Some(TOOLS) { tool_claim(r, value) } else { Some(value.to_string()) };
    let claim = key.zip(claim_value).and_then(|(k, v)| claim(&k, &v));
    let head = format!("{}{}", verb, group(c, "o"));
    let mut f = fact(&[group(c, "s"), &head, "to", value], claim, FactRule::Migration);
    let old = c.name("from").map(|m| cut_value(m.as_str(), None).to_string()).filter(|o| !o.is_empty());
    let object = if object.is_empty() { tiered.then(|| "plan tier".to_string()) } else { Some(object.to_string()) };
    f.link = Some(LinkHint { update: true, object, old, value: value.to_string(), kinds: &[] });
    Some(f)
}

/// Splits "weekly releases" into the attribute its last words name and the value before them.
fn named_by_head(value: &str) -> Option<(String, &str)> {
    let words: Vec<&str> = value.split_whitespace().collect();
    (1..=2.min(words.len().saturating_sub(1))).rev().find_map(|n| {
        let head = words[words.len() - n..].join(" ");
        let key = attributes().group_key(&head)?.to_string();
        let cut = value.rfind(words[words.len() - n])?;
        let v = value[..cut].trim();
        plausible(v, 4).then_some((key, v))
    })
}

/// Whether a value names something ("Globex", "the Netherlands") rather than describes it.
fn claimable(value: &str, max_words: usize) -> bool {
    let words: Vec<&str> = value.split_whitespace().collect();
    let Some(first) = words.first().map(|w| w.to_lowercase()) else {
        return false;
    };
    if words.len() > max_words || in_list(NOT_CLAIMABLE, &first) {
        return false;
    }
    if matches!(first.as_str(), "a" | "an" | "the") {
        return words.get(1).is_some_and(|w| starts_upper(w));
    }
    true
}

/// The tool name before any purpose phrase, if short and unambiguous.
fn tool_claim(r: &Rules, value: &str) -> Option<String> {
    let name = r.tool_claim_stop.find(value).map_or(value, |m| &value[..m.start()]).trim();
    let single = !name.contains(',') && !name.to_lowercase().split_whitespace().any(|w| w == "and" || w == "or");
    (single && claimable(name, 4)).then(|| name.to_string())
}

/// A claim of `key = value`.
pub(super) fn claim(key: &str, value: &str) -> Option<RawClaim> {
    Some(RawClaim { key: key.to_string(), value: value.to_string() })
}

/// Joins phrase parts as the user wrote them, normalising whitespace only.
fn fact(parts: &[&str], claim: Option<RawClaim>, rule: FactRule) -> ExtractedFact {
    let content = parts.iter().flat_map(|p| p.split_whitespace()).collect::<Vec<_>>().join(" ");
    ExtractedFact { content, claim, rule, link: None }
}
