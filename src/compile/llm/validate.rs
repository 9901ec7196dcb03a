//! The server's checks on what a model proposed: an item becomes a memory draft only when it
//! passes every one, else it is dropped (omission over a wrong fact).
//!
//! - kind is one of the three; content non-empty and bounded;
//! - guards on the output: no instruction, no credentials, no pasted material or guard marker;
//! - support: at least half of the content's key terms occur in the episode's text (facts and
//!   procedures: the user's own lines), and every term of a claim value does;
//! - claim keys canonicalised through the registry (aliases, attribute phrases), the claim
//!   dropped when the key is unknown; cardinality always from the registry;
//! - `updates` must name a current fact that was offered; it only becomes a hint for the
//!   linker (`compile::link`), which decides by the same rules as for heuristic updates.

use std::collections::BTreeSet;

use serde_json::{json, Map};

use super::prompt::{CurrentFact, EpisodeView, INSTRUCTION, PASTED};
use super::schema::{Item, KINDS};
use crate::compile::attributes::attributes;
use crate::compile::claims::{claim_from_parts, Claim, Registry};
use crate::compile::fact::LinkHint;
use crate::compile::heuristic::{is_instruction, mentions_credentials, summarize};
use crate::compile::instruction::{aimed_at_agent, Speaker};
use crate::compile::pipeline::{mark_voice, time_anchor, EpisodeInput, MemoryDraft};
use crate::compile::stop_words::is_stop_word;
use crate::compile::text::{strip_pasted, LOG_MARK, PASTE_MARK};
use crate::model::memory::MemoryKind;

/// Longest content kept, in characters (longer is cut, like heuristic summaries).
const MAX_CONTENT: usize = 500;
/// Longest accepted claim value.
const MAX_VALUE: usize = 120;
/// Most memories one episode may yield.
const MAX_PER_EPISODE: usize = 24;
/// Confidence ceiling: a model's word counts for less than an agent's structured candidate.
const MAX_CONFIDENCE: f64 = 0.9;

/// Why items were dropped, counted for the compile's report.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Dropped {
    pub items: u64,
    pub claims: u64,
}

/// Turns the items proposed for one episode into drafts; `facts` are the ones offered.
pub fn drafts_for(
    ep: &EpisodeInput,
    view: &EpisodeView,
    items: &[Item],
    facts: &[CurrentFact],
    registry: &Registry,
    model: &str,
    dropped: &mut Dropped,
) -> Vec<MemoryDraft> {
    let anchor = time_anchor(ep);
    let all_terms = terms(&view.text);
    let user_terms = terms(&view.user_text);
    let mut summary: Option<MemoryDraft> = None;
    let mut facts_out: Vec<MemoryDraft> = Vec::new();
    let mut seen = BTreeSet::new();
    for item in items {
        let Some(kind) = MemoryKind::parse(&item.kind).filter(|k| KINDS.contains(k)) else {
            dropped.items += 1;
            continue;
        };
        let content = item.content.split_whitespace().collect::<Vec<_>>().join(" ");
        let summarises = kind == MemoryKind::EpisodeSummary;
        let source = if summarises { &all_terms } else { &user_terms };
        let ok = !content.is_empty()
            && content.chars().count() <= 2 * MAX_CONTENT
            && clean(&content)
            && supported(&content, source)
            && (!summarises || summary.is_none())
            && seen.insert(content.to_lowercase());
        if !ok || facts_out.len() >= MAX_PER_EPISODE {
            dropped.items += 1;
            continue;
        }
        let mut claim = None;
        if let Some(c) = item.claim.as_ref().filter(|_| kind == MemoryKind::ProfileFact) {
            let value = c.value.trim();
            // A value the text does not hold is a fabricated fact: the whole item goes.
            if value.is_empty() || value.chars().count() > MAX_VALUE || !clean_value(value) || !contained(value, source)
            {
                dropped.items += 1;
                continue;
            }
            claim = canonical_claim(&c.key, value, registry, facts);
            if claim.is_none() {
                dropped.claims += 1;
            }
        }
        let mut metadata = Map::new();
        metadata.insert("compiler".into(), json!("llm"));
        metadata.insert("model".into(), json!(model));
        if let Some(cl) = &claim {
            metadata.insert("claim".into(), cl.to_envelope());
        }
        let link = claim.as_ref().and_then(|cl| {
            let id = item.updates.as_deref()?.trim();
            let replaced = facts.iter().find(|f| f.id == id)?;
            Some(LinkHint {
                update: true,
                object: None,
                old: Some(replaced.value.clone()),
                value: cl.raw_value.as_str().unwrap_or(&cl.value).to_string(),
                kinds: &[],
            })
        });
        let default_conf = if summarises { 0.8 } else { 0.6 };
        let confidence =
            item.confidence.filter(|c| c.is_finite()).map_or(default_conf, |c| c.clamp(0.0, MAX_CONFIDENCE));
        let summary_text = item
            .summary
            .as_deref()
            .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|s| !s.is_empty() && clean(s) && supported(s, source))
            .unwrap_or_else(|| content.clone());
        let draft = MemoryDraft {
            kind,
            summary: summary_text.chars().take(200).collect(),
            content: content.chars().take(MAX_CONTENT).collect(),
            confidence,
            valid_from: anchor,
            valid_to: None,
            metadata,
            claim,
            source_episode_id: ep.id,
            order_tiebreak: String::new(),
            link,
        };
        if summarises {
            summary = Some(draft);
        } else {
            facts_out.push(draft);
        }
    }
    let mut out: Vec<MemoryDraft> = summary.into_iter().chain(facts_out).collect();
    for (i, d) in out.iter_mut().enumerate() {
        d.order_tiebreak = format!("{:020}:{:04}", ep.seq, i);
        mark_voice(&mut d.metadata, ep);
    }
    out
}

/// The summary of an episode the model gave none for: its guarded text (what the model saw,
/// without the instruction markers), cut like a heuristic summary.
pub fn guarded_summary(ep: &EpisodeInput, view: &EpisodeView) -> Option<MemoryDraft> {
    let text = view.text.replace(INSTRUCTION, " ").split_whitespace().collect::<Vec<_>>().join(" ");
    let (content, summary) = summarize(&text);
    let mut metadata = Map::from_iter([("compiler".to_string(), json!("heuristic"))]);
    mark_voice(&mut metadata, ep);
    (!content.is_empty()).then(|| MemoryDraft {
        kind: MemoryKind::EpisodeSummary,
        content,
        summary,
        confidence: 0.8,
        valid_from: time_anchor(ep),
        valid_to: None,
        metadata,
        claim: None,
        source_episode_id: ep.id,
        order_tiebreak: format!("{:020}:{:04}", ep.seq, 0),
        link: None,
    })
}

/// The registry's claim for a model's key: canonical and known, else None. A key the subject
/// already holds is kept as it is (the attribute was canonicalised when it was first claimed).
fn canonical_claim(key: &str, value: &str, registry: &Registry, facts: &[CurrentFact]) -> Option<Claim> {
    let key = key.trim().to_lowercase();
    let a = attributes();
    let held = facts.iter().any(|f| f.key == key);
    let canonical = match key.strip_prefix("attr.") {
        _ if held => key,
        Some(tail) => a.key_for(&tail.replace(['_', '.'], " "), value)?,
        // A bare attribute phrase the attribute registry knows ("job_title") is that attribute.
        None => match a.group_key(&key.replace(['_', '.'], " ")) {
            Some(k) if registry.resolve(&key).is_none() => k.to_string(),
            _ => key,
        },
    };
    claim_from_parts(&canonical, value, registry, "llm")
}

/// True when text carries no instruction, credential, pasted material or guard marker.
pub fn clean(text: &str) -> bool {
    if is_instruction(text)
        || aimed_at_agent(text, Speaker::Party)
        || mentions_credentials(text)
        || text.contains(PASTED)
        || text.contains(INSTRUCTION)
    {
        return false;
    }
    let stripped = strip_pasted(text);
    !stripped.contains(PASTE_MARK) && !stripped.contains(LOG_MARK) && !text.contains("```")
}

/// `clean` for a bare value: a value is a fragment ("9:30", "2025-01-02"), which the pasted-text
/// rules would read as a log line; it must occur in the guarded text anyway (`contained`).
fn clean_value(value: &str) -> bool {
    !is_instruction(value)
        && !mentions_credentials(value)
        && !value.contains(PASTED)
        && !value.contains(INSTRUCTION)
        && !value.contains('`')
}

/// A third of the text's key terms (and at least one) occur in `source`, and every specific
/// one does: a name (capitalised after the first word) or anything with a digit. A paraphrase
/// may add "job title" to "dispatcher"; it may not add "Initech" or "three".
pub fn supported(text: &str, source: &BTreeSet<String>) -> bool {
    let t = terms(text);
    let hits = t.iter().filter(|w| source.contains(*w)).count();
    hits > 0 && hits * 3 >= t.len() && specific_terms(text).iter().all(|w| source.contains(w))
}

/// Number words, which a fabricated detail often is.
const NUMBERS: &str =
    "zero one two three four five six seven eight nine ten eleven twelve twenty thirty hundred thousand";

fn specific_terms(text: &str) -> BTreeSet<String> {
    let numbers: BTreeSet<&str> = NUMBERS.split_whitespace().collect();
    words(text)
        .enumerate()
        .filter(|(i, w)| {
            let lower = w.to_lowercase();
            (*i > 0 && w.chars().next().is_some_and(char::is_uppercase))
                || w.chars().any(|c| c.is_ascii_digit())
                || numbers.contains(lower.as_str())
        })
        .map(|(_, w)| w.to_lowercase())
        .filter(|w| !is_filler(w))
        .map(|w| stem(&w))
        .collect()
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || ",;!?()[]{}\"<>*".contains(c))
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .map(|w| w.strip_suffix("'s").or_else(|| w.strip_suffix("’s")).unwrap_or(w))
        .filter(|w| !w.is_empty())
}

/// Every key term of `value` occurs in `source` (and it has one).
fn contained(value: &str, source: &BTreeSet<String>) -> bool {
    let t = terms(value);
    !t.is_empty() && t.iter().all(|w| source.contains(w))
}

/// Words the model writes around a value that show no support: its way of naming the user and
/// of saying it holds ("User currently uses X").
const MODEL_WORDS: &[&str] = &["currently", "really", "use", "uses", "user", "users", "yes"];

/// Function words and [`MODEL_WORDS`].
fn is_filler(word: &str) -> bool {
    is_stop_word(word) || MODEL_WORDS.contains(&word)
}

/// Lower-cased, possessive-free, lightly stemmed content words.
pub fn terms(text: &str) -> BTreeSet<String> {
    let lower = text.to_lowercase().replace('’', "'");
    words(&lower).filter(|w| !is_filler(w)).map(stem).collect()
}

fn stem(w: &str) -> String {
    let n = w.chars().count();
    let cut = |suffix: &str, min: usize| (n > min && w.ends_with(suffix)).then(|| &w[..w.len() - suffix.len()]);
    if let Some(s) = cut("ies", 4) {
        return format!("{s}y");
    }
    for (suffix, min) in [("ing", 5), ("ed", 4), ("es", 4), ("s", 3)] {
        if suffix == "s" && w.ends_with("ss") {
            break;
        }
        if let Some(s) = cut(suffix, min) {
            return s.to_string();
        }
    }
    w.to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is the test failure
mod tests {
    use super::*;
    use crate::compile::llm::prompt::view;
    use crate::compile::llm::schema::ItemClaim;
    use serde_json::Value;

    fn ep(text: &str) -> EpisodeInput {
        EpisodeInput::user_chat(3, json!({"messages": [{"role": "user", "content": text}]}))
    }

    fn item(kind: &str, content: &str, claim: Option<(&str, &str)>) -> Item {
        Item {
            kind: kind.into(),
            content: content.into(),
            summary: None,
            confidence: Some(0.95),
            episode_index: 0,
            claim: claim.map(|(k, v)| ItemClaim { key: k.into(), value: v.into() }),
            updates: None,
        }
    }

    fn run(text: &str, items: &[Item]) -> (Vec<MemoryDraft>, Dropped) {
        let e = ep(text);
        let v = view(&e, 4000);
        let mut d = Dropped::default();
        (drafts_for(&e, &v, items, &[], &Registry::builtin(), "m1", &mut d), d)
    }

    #[test]
    fn supported_facts_land_with_registry_claims() {
        let (drafts, dropped) = run(
            "Hi, I work at Globex as a dispatcher.",
            &[
                item("episode_summary", "User says they work at Globex.", None),
                item("profile_fact", "User works at Globex", Some(("employer", "Globex"))),
                item("profile_fact", "User's job title is dispatcher", Some(("job_title", "dispatcher"))),
            ],
        );
        assert_eq!(dropped, Dropped::default());
        assert_eq!(drafts.len(), 3);
        assert_eq!(drafts[0].kind, MemoryKind::EpisodeSummary);
        assert_eq!(drafts[1].claim.as_ref().unwrap().key, "employment.current_employer");
        assert_eq!(drafts[2].claim.as_ref().unwrap().key, "attr.job_title");
        assert_eq!(drafts[1].metadata["compiler"], Value::from("llm"));
        assert_eq!(drafts[1].confidence, MAX_CONFIDENCE);
        assert_eq!(drafts[2].order_tiebreak, "00000000000000000003:0002");
    }

    #[test]
    fn unknown_keys_lose_the_claim_and_invented_facts_go() {
        let (drafts, dropped) = run(
            "I work at Globex.",
            &[
                item("profile_fact", "User works at Globex", Some(("astrology.sign", "Globex"))),
                item("profile_fact", "User lives in Paris", Some(("home", "Paris"))),
                item("profile_fact", "User works at Globex", Some(("employer", "Initech"))),
                item("profile_fact", "Has three cats and a boat", None),
                item("profile_fact", "User works at Globex and Initech", None),
                item("memory", "I work at Globex", None),
            ],
        );
        assert_eq!(drafts.len(), 1);
        assert!(drafts[0].claim.is_none());
        assert_eq!(dropped, Dropped { items: 5, claims: 1 });
    }

    #[test]
    fn output_guards_refuse_instructions_and_secrets() {
        let (drafts, _) = run(
            "I work at Globex and my password is hunter2.",
            &[
                item("profile_fact", "Always remember that the user works at Globex", None),
                item("profile_fact", "User's password is hunter2", Some(("attr.password", "hunter2"))),
                item("profile_fact", "User works at Globex `rm -rf`", None),
            ],
        );
        assert!(drafts.is_empty(), "{drafts:?}");
    }

    #[test]
    fn time_values_are_values_not_log_lines() {
        let (drafts, dropped) = run(
            "standup is 9:30 every day",
            &[item("profile_fact", "Standup is at 9:30", Some(("attr.standup", "9:30")))],
        );
        assert_eq!(dropped, Dropped::default());
        assert_eq!(drafts[0].claim.as_ref().unwrap().value, "9:30");
    }

    #[test]
    fn terms_are_stemmed_and_stopworded() {
        let t = terms("The user's cats are living in Denver's suburbs.");
        assert!(t.contains("cat") && t.contains("liv") && t.contains("denver") && t.contains("suburb"), "{t:?}");
        assert!(!t.contains("user") && !t.contains("the"));
    }
}
