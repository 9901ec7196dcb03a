//! Statements that give an attribute a (new) value: verb frames ("I bank with Monzo", "first
//! day at Acme"), changes of a named thing ("the cache node moved to 10.2.3.5", "we bumped node
//! to 20"), terse forms ("new address: 12 Main St") and replacements ("sold my old car and got
//! a Model 3"). This module reads the verb frames; `forms` the named-thing changes and terse
//! forms, `lists` lists and disposals, `marks` which clauses mark a change.

mod forms;
pub(crate) mod lists;
pub(crate) mod marks;

use std::sync::LazyLock;

use regex::Regex;

use super::attributes::{attributes, shape};
use super::fact::{ExtractedFact, FactRule, LinkHint, RawClaim};
use super::frames::{builtin_candidates, Frame, FrameMatch, Slot};
use super::values::{
    claim_cut, cut_value, first_word_lower, looks_like_place, lower_name_run, name_run, plausible, strip_article,
};
use marks::marks_update;

/// A schedule ("every two weeks", "weekly"): what a `{cadence}` slot accepts.
static CADENCE: LazyLock<Regex> = LazyLock::new(|| {
    crate::patterns::regex(
        r"(?i)\b(?:every|each|daily|weekly|biweekly|bi-weekly|fortnightly|monthly|quarterly|nightly|hourly|yearly|annually|per\s+(?:day|week|month|sprint)|a\s+(?:day|week|month)|twice|once|continuously|on\s+(?:mondays|tuesdays|wednesdays|thursdays|fridays|demand))\b",
    )
});

/// Facts from frames, named-thing changes and terse forms, with their byte position.
/// `present_ok` is false when the clause failed the present-tense screen: only events then.
pub(super) fn update_facts(clause: &str, present_ok: bool, extra: &[Frame]) -> Vec<(usize, ExtractedFact)> {
    let straight = clause.replace('’', "'");
    let update = marks_update(&straight);
    let mut out = Vec::new();
    for f in extra.iter().chain(builtin_candidates(&straight)) {
        if !present_ok && !f.event {
            continue;
        }
        if let Some(m) = f.find(&straight) {
            if let Some(fact) = frame_fact(&straight, &m, update) {
                out.push((m.span.0, fact));
            }
        }
    }
    out.extend(forms::form_facts(&straight, present_ok, update));
    out
}

fn frame_fact(clause: &str, m: &FrameMatch, update: bool) -> Option<ExtractedFact> {
    let raw = &clause[m.value.0..m.value.1];
    let value = strip_article(if m.trailing { cut_value(raw, None) } else { raw.trim() });
    // Someone who writes without capitals gives no capitals to names either.
    let lower = !clause.chars().any(char::is_uppercase);
    let value = match m.slot {
        Slot::Name | Slot::Place if lower => lower_name_run(value),
        Slot::Name | Slot::Place if m.trailing => name_run(value),
        Slot::Value | Slot::Role if m.trailing => claim_cut(value),
        _ => value,
    };
    if !plausible(value, 6) || !slot_accepts(m.slot, value, lower) {
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
        // "got a list of expenses", "got two options": no kind, nothing named as replaced and
        // no word of change says nothing about the subject (the episode keeps the words).
        let names_old = value.split_whitespace().any(|w| w.eq_ignore_ascii_case("old"));
        if claim.is_none() && m.slot == Slot::Value && m.old.is_none() && !update && !names_old {
            return None;
        }
        return Some(ExtractedFact { content, claim, rule: FactRule::Replacement, link: Some(hint) });
    }
    let claim = Some(RawClaim { key: m.key.clone(), value: value.to_string() });
    Some(ExtractedFact {
        content,
        claim,
        rule: if m.event { FactRule::UpdateEvent } else { FactRule::Frame },
        link: Some(hint),
    })
}

fn slot_accepts(slot: Slot, value: &str, lower: bool) -> bool {
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
        Slot::Cadence => CADENCE.is_match(value),
    }
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
    fn a_bare_got_is_no_fact() {
        for s in ["I've got a list of expenses with categories", "got two options here", "I got the tracking ID"] {
            assert!(facts(s).is_empty(), "{s}");
        }
        assert_eq!(facts("just got a new Pixel 8").len(), 1, "a word of change keeps the replacement");
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
}
