//! The words of a value: where a name ends ("Acme Robotics went well" → "Acme Robotics"),
//! leading articles, first words. Shared by the heuristic triggers and the update frames.

use super::attributes::shape;

/// The first word of a value, without trailing punctuation.
pub(super) fn first_word(v: &str) -> &str {
    v.split_whitespace().next().unwrap_or_default().trim_end_matches([',', '.', ';', '!'])
}

pub(super) fn first_word_lower(v: &str) -> String {
    v.split_whitespace().next().unwrap_or_default().to_lowercase()
}

pub(super) fn strip_article(v: &str) -> &str {
    let lower = v.to_lowercase();
    for a in ["a ", "an ", "the ", "my ", "our "] {
        if lower.starts_with(a) && v.len() > a.len() {
            return v[a.len()..].trim_start();
        }
    }
    v
}

/// The name at the start of a value: capitalised words (and the small words inside names,
/// "Bank of America"), or one exact token ("10.2.3.5"): "Acme Robotics went well" → "Acme Robotics".
pub(super) fn name_run(value: &str) -> &str {
    let first = value.split_whitespace().next().unwrap_or_default();
    if shape(first).is_exact() {
        return first;
    }
    let joiners =
        ["of", "de", "la", "le", "van", "von", "der", "den", "du", "da", "del", "y", "&", "and", "the", "for", "on"];
    let words: Vec<(usize, &str)> =
        value.split_whitespace().map(|w| (w.as_ptr() as usize - value.as_ptr() as usize, w)).collect();
    let capital = |w: &str| w.chars().next().is_some_and(|c| c.is_uppercase() || c.is_ascii_digit());
    let mut end = 0;
    for (i, (at, w)) in words.iter().enumerate() {
        let joins = joiners.contains(&w.to_lowercase().as_str()) && words.get(i + 1).is_some_and(|(_, n)| capital(n));
        if i == 0 || capital(w) || (joins && i > 0) {
            end = at + w.len();
        } else {
            break;
        }
    }
    value[..end].trim_end_matches([',', '.', '!', ':', ';'])
}

/// Words that end a name written in lower case ("joined bodyworks way closer to work").
pub(super) const NAME_END: &[&str] = &[
    "to",
    "for",
    "at",
    "in",
    "on",
    "with",
    "by",
    "from",
    "near",
    "and",
    "but",
    "so",
    "because",
    "which",
    "that",
    "it",
    "is",
    "was",
    "cuz",
    "bc",
    "lol",
    "now",
    "today",
    "yesterday",
    "tho",
    "though",
    "since",
    "after",
    "before",
    "way",
    "as",
    "last",
    "this",
    "next",
    "every",
    "like",
    "just",
    "really",
    "super",
    "pretty",
    "its",
    "it's",
    "im",
    "i",
    "we",
];

/// A lower-case name: up to three words before a word that cannot be part of one.
pub(super) fn lower_name_run(value: &str) -> &str {
    let first = value.split_whitespace().next().unwrap_or_default();
    if shape(first).is_exact() {
        return first;
    }
    let mut end = 0;
    for (n, w) in value.split_whitespace().enumerate() {
        let at = w.as_ptr() as usize - value.as_ptr() as usize;
        if n >= 3 || NAME_END.contains(&w.to_lowercase().trim_matches(|c: char| !c.is_alphanumeric())) {
            break;
        }
        end = at + w.len();
    }
    value[..end].trim_end_matches([',', '.', '!', ':', ';'])
}
