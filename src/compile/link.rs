//! Linking an update to the fact it replaces.
//!
//! Extraction sees one statement; whether "the cache node moved to 10.2.3.5" changes the
//! subject's `attr.cache_node_address`, or "got an e-scooter" their commute, depends on what the
//! subject already has. Each update draft is tied to the subject's current claims, in order:
//! 1. by key: its key is already one of the subject's, nothing to do;
//! 2. by the replaced value ("sold my old Civic and…" → the claim whose value is the Civic);
//! 3. by the attribute named ("my old car", "the webhook endpoint") and its aliases: a current
//!    key whose words contain every word of the named attribute;
//! 4. by the kind of thing ("an e-scooter" can be a commute or a car).
//!
//! A tier links only when it finds exactly one current key, and only to a value of a compatible
//! shape (an address never replaces a name): an ambiguous update stays a plain fact. Drafts are
//! linked in order, each also against the claims of the drafts before it.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::attributes::{attributes, phrase_words, shape};
use super::claims::{claim_from_parts, normalize_value, Cardinality, Claim, Registry};
use super::fact::LinkHint;
use super::pipeline::MemoryDraft;

/// One of the subject's current claims, as the linker sees it.
#[derive(Debug, Clone)]
pub struct Current {
    pub key: String,
    /// Normalised value.
    pub value: String,
    pub cardinality: Cardinality,
}

impl Current {
    /// The linker's view of a parsed claim.
    pub fn of(claim: &Claim) -> Current {
        Current { key: claim.key.clone(), value: claim.value.clone(), cardinality: claim.cardinality }
    }
}

/// Words too generic to identify the replaced thing.
const GENERIC_THING_WORDS: &[&str] =
    &["old", "trusty", "beloved", "previous", "former", "current", "existing", "one", "thing", "stuff"];

/// Ties the batch's update drafts to the subject's current claims. Returns the indexes of the
/// updates left unlinked (a change with no key, or with a key the subject does not have), for
/// [`link_by_similarity`].
pub fn link_drafts(drafts: &mut [MemoryDraft], current: &mut Vec<Current>, registry: &Registry) -> Vec<usize> {
    let a = attributes();
    let mut unlinked = Vec::new();
    for (i, d) in drafts.iter_mut().enumerate() {
        if let Some(hint) = d.link.clone() {
            if let Some((key, replaces)) = choose(d.claim.as_ref(), &hint, current) {
                set_claim(d, &key, &hint.value, registry);
                if let Some(old) = replaces {
                    d.metadata.insert("replaces".into(), json!(old));
                }
            } else if hint.update {
                let open = |c: &Claim| c.key.starts_with("attr.") && !a.is_group_key(&c.key);
                let unknown = d.claim.as_ref().is_none_or(|c| open(c) && !current.iter().any(|o| o.key == c.key));
                if unknown {
                    unlinked.push(i);
                }
            }
        }
        if let Some(c) = &d.claim {
            current.push(Current::of(c));
        }
    }
    unlinked
}

/// Cosine at or above which an unlinked update is tied to the current fact it is most similar
/// to (semantic embedders only), calibrated on the update eval (see the README).
pub const SIMILARITY_THRESHOLD: f32 = 0.6;
/// How much closer the best current fact must be than the best fact of another attribute.
const SIMILARITY_MARGIN: f32 = 0.05;

/// Ties each unlinked update to the current single-valued fact whose text is most similar to it,
/// when that similarity clears [`SIMILARITY_THRESHOLD`] by a margin over every other attribute
/// and the values are of compatible shapes. `vectors` are the drafts' own (same order);
/// `current` the subject's current claims with their memories' vectors. Returns how many linked.
pub fn link_by_similarity(
    drafts: &mut [MemoryDraft],
    unlinked: &[usize],
    vectors: &[Vec<f32>],
    current: &[(Current, Vec<f32>)],
    registry: &Registry,
    threshold: f32,
) -> usize {
    let mut linked = 0;
    for &i in unlinked {
        let (Some(d), Some(v)) = (drafts.get(i), vectors.get(i)) else { continue };
        let Some(hint) = d.link.clone() else { continue };
        let new_shape = shape(&hint.value);
        // The batch's earlier claims compete too.
        let earlier = drafts[..i]
            .iter()
            .zip(vectors)
            .filter_map(|(e, ev)| e.claim.as_ref().map(|c| (Current::of(c), ev.clone())));
        let mut best: BTreeMap<String, f32> = BTreeMap::new();
        for (c, cv) in current.iter().cloned().chain(earlier) {
            if c.cardinality != Cardinality::Single || !shape(&c.value).compatible(new_shape) {
                continue;
            }
            let sim = cosine(v, &cv);
            let e = best.entry(c.key.clone()).or_insert(f32::MIN);
            *e = e.max(sim);
        }
        let mut ranked: Vec<(String, f32)> = best.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let Some((key, top)) = ranked.first().cloned() else { continue };
        let second = ranked.get(1).map_or(f32::MIN, |r| r.1);
        if top >= threshold
            && top - second >= SIMILARITY_MARGIN
            && set_claim(&mut drafts[i], &key, &hint.value, registry)
        {
            drafts[i].metadata.insert("linked_by".into(), json!("similarity"));
            linked += 1;
        }
    }
    linked
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0f32, 0f32, 0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    dot / (na.sqrt() * nb.sqrt())
}

/// The key an update belongs to, and (for accumulating keys) the value it replaces.
fn choose(claim: Option<&Claim>, hint: &LinkHint, current: &[Current]) -> Option<(String, Option<String>)> {
    let a = attributes();
    let new_shape = shape(&hint.value);
    let fits = |c: &Current| shape(&c.value).compatible(new_shape) || c.cardinality == Cardinality::Multi;
    let words_of = |s: Option<&str>| -> BTreeSet<String> {
        s.map(|o| phrase_words(o).into_iter().filter(|w| !GENERIC_THING_WORDS.contains(&w.as_str())).collect())
            .unwrap_or_default()
    };
    let old_words = words_of(hint.old.as_deref());
    let single = |c: &&Current| c.cardinality == Cardinality::Single && fits(c);
    if let Some(claim) = claim {
        // A named old value of an accumulating key is replaced, not joined ("from Vim to Helix").
        let replaced = current.iter().find(|c| {
            c.key == claim.key
                && c.cardinality == Cardinality::Multi
                && !old_words.is_empty()
                && value_has(&c.value, &old_words)
        });
        if let Some(c) = replaced {
            return Some((claim.key.clone(), Some(c.value.clone())));
        }
        // "we're fully on GitHub Actions now, the old CI box is gone": a generic tools claim
        // that names what it replaces continues that attribute.
        if claim.key == "tools.used" && hint.update && !old_words.is_empty() {
            let named = |c: &&Current| !a.words_of(&c.key).is_disjoint(&old_words) || value_has(&c.value, &old_words);
            if let Some(k) = unique(current.iter().filter(single).filter(named)) {
                return Some((k, None));
            }
        }
        // "Migrated to Render": a switch that names nothing continues the subject's one
        // product-valued attribute, if it has exactly one.
        if claim.key == "tools.used" && hint.update && old_words.is_empty() && hint.object.is_none() {
            if let Some(k) = sole_switchable(current, new_shape) {
                return Some((k, None));
            }
        }
        if !hint.update || current.iter().any(|c| c.key == claim.key) {
            return None;
        }
        let named = a.words_of(&claim.key);
        // Group keys are canonical; only made-up `attr.` keys are matched by their words.
        if claim.key.starts_with("attr.") && !a.is_group_key(&claim.key) {
            // "upgraded to Postgres 16" continues whichever attribute holds "Postgres 15".
            if let Some(tool) = claim.key.strip_prefix("attr.").and_then(|k| k.strip_suffix("_version")) {
                let tool = tool.replace('_', " ");
                let holds = |c: &&Current| {
                    phrase_words(&c.value).first().is_some_and(|w| *w == tool) || c.value.starts_with(&tool)
                };
                if let Some(k) = unique(current.iter().filter(single).filter(holds)) {
                    return Some((k, None));
                }
            }
            if let Some(k) = unique(current.iter().filter(single).filter(|c| covers(&c.key, &named))) {
                return Some((k, None));
            }
        }
        // A known attribute continues a made-up one it covers: "my current account is with
        // Granary Bank" (`attr.account`) is the bank once "I bank with Corvid" says so.
        if a.is_group_key(&claim.key) {
            let covered = |c: &&Current| {
                c.key.starts_with("attr.") && !a.is_group_key(&c.key) && a.words_of(&c.key).is_subset(&named)
            };
            if let Some(k) = unique(current.iter().filter(single).filter(covered)) {
                return Some((k, None));
            }
        }
        // An exact value ("/srv/logs/orion") replaces the one value of that form whose
        // attribute shares a word with the one named ("log dir" and "app logs"), unless the
        // update names another instance ("work email" is not "email").
        if new_shape.is_exact() {
            let shares = |c: &&Current| {
                let theirs = a.words_of(&c.key);
                shape(&c.value) == new_shape && !theirs.is_disjoint(&named) && !a.other_instance(&named, &theirs)
            };
            return unique(current.iter().filter(single).filter(shares)).map(|k| (k, None));
        }
        return None;
    }
    let named: BTreeSet<String> = old_words.union(&words_of(hint.object.as_deref())).cloned().collect();
    // The replaced value itself, then the attribute it names, then the kind of thing it is.
    if !old_words.is_empty() {
        if let Some(c) = unique_claim(current.iter().filter(|c| fits(c) && value_has(&c.value, &old_words))) {
            let replaces = (c.cardinality == Cardinality::Multi).then(|| c.value.clone());
            return Some((c.key.clone(), replaces));
        }
    }
    if !named.is_empty() {
        if let Some(k) = unique(current.iter().filter(single).filter(|c| covers(&c.key, &named))) {
            return Some((k, None));
        }
        // "the old CI box" names the CI even with a word the attribute does not use.
        if let Some(k) = unique(current.iter().filter(single).filter(|c| !a.words_of(&c.key).is_disjoint(&named))) {
            return Some((k, None));
        }
    }
    if !hint.update && old_words.is_empty() {
        return None;
    }
    if old_words.is_empty() && hint.object.is_none() {
        if let Some(k) = sole_switchable(current, new_shape) {
            return Some((k, None));
        }
    }
    let old = hint.old.as_deref().unwrap_or_default();
    let kinds: BTreeSet<String> = a
        .keys_for_thing(old)
        .into_iter()
        .chain(a.keys_for_thing(&hint.value))
        .chain(hint.kinds.iter().map(|k| k.to_string()))
        .collect();
    // "got a second car" is another car, not the one the user drives.
    let value_words: BTreeSet<String> = phrase_words(&hint.value).into_iter().collect();
    let same_instance = |c: &&Current| !a.other_instance(&value_words, &a.words_of(&c.key));
    unique(current.iter().filter(single).filter(|c| kinds.contains(&c.key)).filter(same_instance)).map(|k| (k, None))
}

/// The subject's only current single-valued attribute that holds a product or provider name,
/// for a switch that names nothing ("these days it's Ghostty"); None when there are several.
fn sole_switchable(current: &[Current], new_shape: super::attributes::Shape) -> Option<String> {
    use super::attributes::Shape;
    if new_shape != Shape::Name {
        return None;
    }
    let a = attributes();
    // Values are stored lower-cased, so "a name" is judged by the attribute, not the capitals.
    unique(
        current
            .iter()
            .filter(|c| c.cardinality == Cardinality::Single && a.is_switchable(&c.key) && !shape(&c.value).is_exact()),
    )
}

/// Whether every one of `words` names the key (its phrases, or its `attr.` slug).
fn covers(key: &str, words: &BTreeSet<String>) -> bool {
    !words.is_empty() && words.is_subset(&attributes().words_of(key))
}

fn value_has(value: &str, words: &BTreeSet<String>) -> bool {
    let have: BTreeSet<String> = phrase_words(value).into_iter().collect();
    words.iter().all(|w| have.contains(w))
}

fn unique<'a>(mut it: impl Iterator<Item = &'a Current>) -> Option<String> {
    let first = it.next()?.key.clone();
    it.all(|c| c.key == first).then_some(first)
}

fn unique_claim<'a>(it: impl Iterator<Item = &'a Current>) -> Option<&'a Current> {
    let all: Vec<&Current> = it.collect();
    let first = *all.first()?;
    all.iter().all(|c| c.key == first.key).then_some(first)
}

/// Gives a draft the claim `key = value` (and its envelope); false when the registry refuses it.
pub(crate) fn set_claim(d: &mut MemoryDraft, key: &str, value: &str, registry: &Registry) -> bool {
    if d.claim.as_ref().is_some_and(|c| c.key == key) {
        return false;
    }
    // An LLM draft's claim stays attributed to the LLM compiler.
    let source = if d.metadata.get("compiler").and_then(|c| c.as_str()) == Some("llm") { "llm" } else { "heuristic" };
    let Some(claim) = claim_from_parts(key, value, registry, source) else {
        return false;
    };
    d.metadata.insert("claim".into(), claim.to_envelope());
    d.metadata.insert("linked".into(), json!(true));
    d.claim = Some(claim);
    true
}

/// The normalised form a claim value is compared in.
pub fn normalized(value: &str) -> String {
    normalize_value(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::pipeline::{compile_episode, EpisodeInput};

    fn drafts(text: &str) -> Vec<MemoryDraft> {
        let ep = EpisodeInput::user_chat(1, json!({"messages": [{"role": "user", "content": text}]}));
        compile_episode(&ep, &Registry::builtin())
    }

    fn cur(key: &str, value: &str) -> Current {
        let cardinality = Registry::builtin().resolve(key).map_or(Cardinality::Single, |(_, c)| c);
        Current { key: key.into(), value: normalized(value), cardinality }
    }

    fn linked(text: &str, current: &[Current]) -> Vec<(String, String)> {
        let mut ds = drafts(text);
        let mut cur = current.to_vec();
        link_drafts(&mut ds, &mut cur, &Registry::builtin());
        ds.iter().filter_map(|d| d.claim.as_ref().map(|c| (c.key.clone(), c.value.clone()))).collect()
    }

    #[test]
    fn replacement_links_by_kind_of_thing_and_by_old_value() {
        let commute = [cur("attr.commute", "Brompton")];
        assert_eq!(
            linked("gave my old bike away and got an e-scooter", &commute),
            vec![("attr.commute".into(), "e-scooter".into())]
        );
        let car = [cur("attr.car", "Honda Civic"), cur("attr.commute", "train")];
        assert_eq!(linked("sold my old Civic and bought a Model 3", &car), vec![("attr.car".into(), "model 3".into())]);
        // Nothing current to replace: the kind of thing acquired still names its attribute.
        assert_eq!(
            linked("gave my old bike away and got an e-scooter", &[]),
            vec![("attr.commute".into(), "e-scooter".into())]
        );
        assert!(linked("gave my old stuff away and got a new one", &[]).is_empty());
        // Another instance of the kind is no replacement of the one the user has.
        let fit = [cur("attr.car", "Honda Fit")];
        assert!(linked("we got a second car, a minivan, for the family trips", &fit).is_empty());
    }

    #[test]
    fn named_attribute_links_to_the_one_current_key_it_names() {
        let cache = [cur("attr.cache_node_address", "10.2.3.4"), cur("attr.email", "a@b.co")];
        assert_eq!(
            linked("the cache node moved to 10.2.3.5", &cache),
            vec![("attr.cache_node_address".into(), "10.2.3.5".into())]
        );
        // Two databases: which one changed is not said, so nothing is linked.
        let two = [cur("attr.main_database_host", "db1.internal"), cur("attr.test_database_host", "db2.internal")];
        assert_eq!(
            linked("our database host is now db3.internal", &two),
            vec![("attr.database_host".into(), "db3.internal".into())]
        );
        // A value of another shape never replaces an address.
        let ip = [cur("attr.cache_node_address", "10.2.3.4")];
        assert_eq!(linked("the cache node is now Redis 7", &ip), Vec::<(String, String)>::new());
    }

    #[test]
    fn a_switch_that_names_nothing_needs_a_sole_candidate() {
        let one = [cur("attr.hosting", "Linode"), cur("attr.manager", "Sam")];
        assert_eq!(linked("Migrated to Render last week", &one), vec![("attr.hosting".into(), "render".into())]);
        // A made-up attribute says nothing about what kind of value it holds.
        let pet = [cur("attr.dog_name", "Biscuit")];
        assert_eq!(linked("Migrated to Render last week", &pet), vec![("tools.used".into(), "render".into())]);
        let two = [cur("attr.hosting", "Linode"), cur("attr.ci", "Travis")];
        assert_eq!(linked("Migrated to Render last week", &two), vec![("tools.used".into(), "render".into())]);
    }

    #[test]
    fn named_old_value_of_a_multi_key_is_replaced() {
        let mut ds = drafts("I switched from Jenkins to Buildkite");
        let mut cur = vec![cur("tools.used", "Jenkins"), cur("tools.used", "Docker")];
        link_drafts(&mut ds, &mut cur, &Registry::builtin());
        let d = ds.iter().find(|d| d.claim.is_some()).expect("claimed");
        assert_eq!(d.metadata.get("replaces"), Some(&json!("jenkins")));
    }
}
