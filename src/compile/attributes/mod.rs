//! Open attributes: the subject's own settings and facts that have no built-in claim key.
//!
//! An attribute phrase as the user wrote it ("home router's IP", "build cache path", "team
//! lead") is normalised into a claim key: a known phrase maps to its group's key (`team lead` and
//! `boss` are both `attr.manager`, `employer` is `employment.current_employer`), anything else
//! becomes `attr.<words>` in its own namespace. The phrases, the attributes that accumulate, and
//! the nouns that name other people or job roles are data (`attributes.json`), not code.
//!
//! Values keep their exact form in the memory text; `shape` tells addresses, paths, URLs,
//! e-mails, versions and names apart, so an update is only linked to a value of a compatible kind.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use serde::Deserialize;

mod phrase;
mod shape;

pub use phrase::phrase_words;
use phrase::{singular, INSTANCE_WORDS};
pub use shape::{shape, Shape};

/// Namespace of open-attribute keys.
pub const ATTR_PREFIX: &str = "attr.";
/// Longest open-attribute key accepted.
const MAX_KEY_LEN: usize = 64;
/// Most words an attribute phrase may have after normalisation.
const MAX_PHRASE_WORDS: usize = 5;

#[derive(Debug, Deserialize)]
struct Group {
    key: String,
    phrases: Vec<String>,
    #[serde(default)]
    cardinality: Option<String>,
    #[serde(default)]
    person: bool,
    #[serde(default)]
    by_shape: BTreeMap<String, String>,
    /// The only shape of value the attribute takes ("email" for an e-mail address).
    #[serde(default)]
    expects: Option<String>,
}

/// One verb frame as written in the data file (see `frames.rs`).
#[derive(Debug, Clone, Deserialize)]
pub struct FrameSpec {
    pub pattern: String,
    pub key: String,
    #[serde(default)]
    pub event: bool,
    #[serde(default)]
    pub slot: Option<usize>,
}

#[derive(Debug, Deserialize)]
struct Data {
    groups: Vec<Group>,
    people: Vec<String>,
    roles: Vec<String>,
    diets: Vec<String>,
    #[serde(default)]
    value_heads: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    switchable: Vec<String>,
    frames: Vec<FrameSpec>,
}

/// The attribute registry, loaded once from `attributes.json`.
pub struct Attributes {
    /// Normalised phrase → canonical key.
    phrase_key: BTreeMap<String, String>,
    /// Canonical key → (accumulates values, names a person, value shape → other key).
    keys: BTreeMap<String, (bool, bool, BTreeMap<String, String>)>,
    /// Canonical key → the one value shape it takes, if it has one.
    expects: BTreeMap<String, String>,
    /// Canonical key → every word of its phrases (for linking an update by its head noun).
    key_words: BTreeMap<String, BTreeSet<String>>,
    people: BTreeSet<String>,
    roles: BTreeSet<String>,
    /// Head noun of a value → the attributes such a thing can be the value of.
    value_heads: BTreeMap<String, BTreeSet<String>>,
    /// Attributes whose value is a product or provider one switches between ("switched to X").
    switchable: BTreeSet<String>,
    /// Diet words (a frame's `{diet}` slot).
    pub diets: Vec<String>,
    /// The built-in verb frames.
    pub frames: Vec<FrameSpec>,
}

static DATA: LazyLock<Attributes> = LazyLock::new(load);

/// The built-in attribute registry.
pub fn attributes() -> &'static Attributes {
    &DATA
}

fn load() -> Attributes {
    // The file ships inside the binary; a unit test proves it parses.
    let data: Data = serde_json::from_str(include_str!("attributes.json")).unwrap_or(Data {
        groups: vec![],
        people: vec![],
        roles: vec![],
        diets: vec![],
        value_heads: BTreeMap::new(),
        switchable: vec![],
        frames: vec![],
    });
    let mut phrase_key = BTreeMap::new();
    let mut keys = BTreeMap::new();
    let mut key_words: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut expects = BTreeMap::new();
    for g in data.groups {
        if let Some(e) = &g.expects {
            expects.insert(g.key.clone(), e.clone());
        }
        let multi = g.cardinality.as_deref() == Some("multi");
        keys.insert(g.key.clone(), (multi, g.person, g.by_shape.clone()));
        let words = key_words.entry(g.key.clone()).or_default();
        for p in &g.phrases {
            let norm = phrase_words(p).join(" ");
            words.extend(norm.split(' ').filter(|w| !w.is_empty()).map(str::to_string));
            phrase_key.entry(norm).or_insert_with(|| g.key.clone());
        }
    }
    let lower = |v: Vec<String>| v.into_iter().map(|w| w.to_lowercase()).collect::<BTreeSet<_>>();
    let mut value_heads: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (key, heads) in data.value_heads {
        for h in heads {
            value_heads.entry(h.to_lowercase()).or_default().insert(key.clone());
        }
    }
    Attributes {
        phrase_key,
        keys,
        expects,
        key_words,
        people: lower(data.people),
        roles: lower(data.roles),
        value_heads,
        switchable: data.switchable.into_iter().collect(),
        diets: data.diets,
        frames: data.frames,
    }
}

impl Attributes {
    /// The claim key for an attribute phrase and a value, or None when the phrase is empty,
    /// too long, or not ASCII-sluggable.
    pub fn key_for(&self, phrase: &str, value: &str) -> Option<String> {
        let words = phrase_words(phrase);
        if words.is_empty() || words.len() > MAX_PHRASE_WORDS {
            return None;
        }
        let joined = words.join(" ");
        if let Some(key) = self.phrase_key.get(&joined) {
            let shape = shape(value).as_str();
            let by_shape = self.keys.get(key).and_then(|(_, _, m)| m.get(shape));
            let key = by_shape.cloned().unwrap_or_else(|| key.clone());
            // "ported my number to Pebble Mobile" gives no phone number.
            if self.expects.get(&key).is_some_and(|e| e != shape) {
                return None;
            }
            return Some(key);
        }
        if words.iter().any(|w| !w.is_ascii()) {
            return None;
        }
        let slug: Vec<String> = words
            .iter()
            .map(|w| w.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>())
            .filter(|w| !w.is_empty())
            .collect();
        if slug.len() != words.len() {
            return None;
        }
        let key = format!("{ATTR_PREFIX}{}", slug.join("_"));
        (key.len() <= MAX_KEY_LEN).then_some(key)
    }

    /// The group key of a phrase the registry knows ("team lead" → `attr.manager`), if any.
    pub fn group_key(&self, phrase: &str) -> Option<&str> {
        self.phrase_key.get(&phrase_words(phrase).join(" ")).map(String::as_str)
    }

    /// True when the phrase is one the registry knows (not a made-up `attr.` slug).
    pub fn knows(&self, phrase: &str) -> bool {
        self.group_key(phrase).is_some()
    }

    /// The one attribute a thing's kind names ("Harwell Community College" → school), if unique.
    pub fn kind_of(&self, value: &str) -> Option<String> {
        let kinds = self.keys_for_thing(value);
        (kinds.len() == 1).then(|| kinds.into_iter().next()).flatten()
    }

    /// True for an attribute one switches between products or providers of ("we moved to X"),
    /// as the data lists them: an attribute made up from a phrase never counts, since nothing says
    /// what kind of value it holds.
    pub fn is_switchable(&self, key: &str) -> bool {
        self.switchable.contains(key)
    }

    /// True for a key that a group of phrases defines (already canonical).
    pub fn is_group_key(&self, key: &str) -> bool {
        self.keys.contains_key(key)
    }

    /// The attributes a thing named by these words can be the value of ("e-scooter" → commute).
    pub fn keys_for_thing(&self, words: &str) -> BTreeSet<String> {
        words
            .to_lowercase()
            .split(|c: char| c.is_whitespace() || c == '/')
            .map(|w| singular(w.trim_matches(|c: char| !c.is_alphanumeric() && c != '-')))
            .filter_map(|w| self.value_heads.get(&w))
            .flatten()
            .cloned()
            .collect()
    }

    /// True when the data says the key accumulates values (an open attribute is single otherwise).
    pub fn accumulates(&self, key: &str) -> bool {
        self.keys.get(key).is_some_and(|(multi, _, _)| *multi)
    }

    /// The phrases that name a key: its group's, or the words of an `attr.` slug as one.
    pub fn phrases_of(&self, key: &str) -> Vec<String> {
        let grouped: Vec<String> = self.phrase_key.iter().filter(|(_, k)| *k == key).map(|(p, _)| p.clone()).collect();
        if !grouped.is_empty() {
            return grouped;
        }
        let tail = key.strip_prefix(ATTR_PREFIX).unwrap_or(key);
        vec![tail.split(['_', '.']).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")]
    }

    /// The words that name a key: its group's phrases, or the words of an `attr.` slug.
    pub fn words_of(&self, key: &str) -> BTreeSet<String> {
        if let Some(words) = self.key_words.get(key) {
            return words.clone();
        }
        let tail = key.strip_prefix(ATTR_PREFIX).unwrap_or(key);
        tail.split(['_', '.']).filter(|w| !w.is_empty()).map(str::to_string).collect()
    }

    /// True when the phrase names or belongs to another person ("my sister's phone", "my
    /// manager"): such a phrase is never the subject of a change the user made.
    pub fn names_person(&self, phrase: &str) -> bool {
        let words = phrase_words(phrase);
        let known_person = self.phrase_key.get(&words.join(" ")).and_then(|k| self.keys.get(k)).is_some_and(|k| k.1);
        known_person || words.iter().any(|w| self.people.contains(w))
    }

    /// True when `named` carries an instance word ("work", "staging", "backup") that `theirs`
    /// lacks: the two phrases are about different things of the same kind.
    pub fn other_instance(&self, named: &BTreeSet<String>, theirs: &BTreeSet<String>) -> bool {
        named.iter().any(|w| INSTANCE_WORDS.contains(&w.as_str()) && !theirs.contains(w))
            || theirs.iter().any(|w| INSTANCE_WORDS.contains(&w.as_str()) && !named.contains(w))
    }

    /// True for a noun that heads a job title ("engineer", "analyst").
    pub fn is_role(&self, word: &str) -> bool {
        self.roles.contains(&word.to_lowercase())
    }
}

/// True for a key in the open-attribute namespace that is well formed.
pub fn is_open_key(key: &str) -> bool {
    key.len() <= MAX_KEY_LEN
        && key.strip_prefix(ATTR_PREFIX).is_some_and(|tail| {
            !tail.is_empty()
                && tail.split('.').all(|seg| {
                    !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_file_parses_and_is_consistent() {
        let data: Data = serde_json::from_str(include_str!("attributes.json")).expect("attributes.json parses");
        assert!(data.groups.len() > 20 && data.frames.len() > 20);
        assert!(!attributes().frames.is_empty());
    }

    #[test]
    fn phrases_normalise_into_keys() {
        let a = attributes();
        assert_eq!(a.key_for("home router's IP", "192.168.1.1").as_deref(), Some("attr.home_router_ip"));
        assert_eq!(a.key_for("home router's IP address", "x").as_deref(), Some("attr.home_router_ip"));
        assert_eq!(a.key_for("build cache path", "/tmp").as_deref(), Some("attr.build_cache_path"));
        assert_eq!(a.key_for("team lead", "Sam").as_deref(), Some("attr.manager"));
        assert_eq!(a.key_for("new boss", "Sam").as_deref(), Some("attr.manager"));
        assert_eq!(a.key_for("E-mail address", "a@b.co").as_deref(), Some("attr.email"));
        assert_eq!(a.key_for("subscription tier", "Pro").as_deref(), Some("attr.plan"));
        assert_eq!(a.key_for("employer", "Acme").as_deref(), Some("employment.current_employer"));
        assert_eq!(a.key_for("partner's email", "a@b.co").as_deref(), Some("attr.partner_email"));
        assert_eq!(a.key_for("cell", "+1 555 123 4567").as_deref(), Some("attr.phone_number"));
        assert_eq!(a.key_for("phone", "Pixel 8").as_deref(), Some("attr.phone"));
        assert_eq!(a.key_for("webhook endpoints", "x").as_deref(), Some("attr.webhook_endpoint"));
        assert_eq!(a.key_for("the", "x"), None);
        assert_eq!(a.key_for("café wifi", "x"), None);
        assert_eq!(a.key_for("a b c d e f g", "x"), None);
    }

    #[test]
    fn cardinality_and_people() {
        let a = attributes();
        assert!(a.accumulates("attr.pets"));
        assert!(!a.accumulates("attr.manager"));
        assert!(!a.accumulates("attr.anything_else"));
        assert!(a.names_person("brother"));
        assert!(a.names_person("my sister's phone"));
        assert!(!a.names_person("cache node"));
        assert!(a.is_role("Engineer"));
    }

    #[test]
    fn open_keys() {
        assert!(is_open_key("attr.home_router_ip"));
        assert!(!is_open_key("attr."));
        assert!(!is_open_key("attr.Home"));
        assert!(!is_open_key("employer"));
        assert!(!is_open_key(&format!("attr.{}", "x".repeat(80))));
    }
}
