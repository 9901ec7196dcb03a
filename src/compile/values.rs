//! The words of a value: where a captured value ends, where a name ends ("Acme Robotics went
//! well" → "Acme Robotics"), whether it is plausible, leading articles, first words, and the
//! version key a tool's value gives. Shared by the heuristic triggers and the update frames.

use std::sync::LazyLock;

use regex::Regex;

use super::attributes::{attributes, phrase_words, shape, Shape};
use super::text::PASTE_MARK;

/// Where a captured value ends.
struct Bounds {
    /// A clause-joining word or a sentence end.
    stop: Regex,
    /// Time words and fillers trimmed from a value's end.
    trailing: Regex,
    /// A preposition or time word after which a claim's value ends.
    claim_stop: Regex,
    /// A tool name and its version ("Postgres 16").
    version_tail: Regex,
}

static BOUNDS: LazyLock<Bounds> = LazyLock::new(|| Bounds {
    stop: crate::patterns::regex(
        r"(?i)\s+(?:and\s+(?:i|my|we|our|she|he|they|it|you|this|that)\b|(?:but|because|since|so|which|who|whom|whose|where|when|while|though|although|unless|except|until|whereas|whilst)\b)|(?-i:\s+and\s+\p{Ll})|\s+[-–—]\s|[.!?:](?:\s|$)",
    ),
    trailing: crate::patterns::regex(
        r"(?i)\s+(?:right\s+now|now|currently|these\s+days|nowadays|at\s+the\s+moment|at\s+present|today|too|also|as\s+well|anyway|btw|lol|haha|finally|officially|yesterday|this\s+(?:week|month|year|morning|quarter|spring|summer|autumn|fall|winter)|last\s+(?:week|month|year|quarter|night|weekend|spring|summer|autumn|fall|winter|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|(?:a|one|two|three|four|five|six|a\s+few|few|several|\d+)\s+(?:days?|weeks?|months?|years?)\s+ago|(?:in|since|as\s+of|from)\s+(?:january|february|march|april|may|june|july|august|september|october|november|december|spring|summer|autumn|fall|winter|monday|tuesday|wednesday|thursday|friday|\d{4})|on\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday))$",
    ),
    claim_stop: crate::patterns::regex(
        r"(?i)\s+(?:with|near|for|in|on|at|by|during|via|instead|over|after|before|because|since|yesterday|today|tonight|this|last|so|which|who|but|from|until|through|thru|going\s+forward|from\s+now|as\s+of|as\s+(?:the|a|my|our)|these\s+days)\b|(?-i:\s+and\s+[\p{Ll}\d])",
    ),
    version_tail: crate::patterns::regex(
        r"^(?P<name>[A-Za-z][\w.+#-]*(?:\s+[A-Za-z][\w+#-]*)?)\s+(?P<ver>v?\d+(?:\.\d+){0,3}(?:\.x)?)$",
    ),
});

/// The first word of a value, without trailing punctuation.
pub(super) fn first_word(v: &str) -> &str {
    v.split_whitespace().next().unwrap_or_default().trim_end_matches([',', '.', ';', '!'])
}

/// The first word of a value, lower-cased.
pub(super) fn first_word_lower(v: &str) -> String {
    v.split_whitespace().next().unwrap_or_default().to_lowercase()
}

/// The value without a leading article or "my"/"our".
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
#[rustfmt::skip]
pub(super) const NAME_END: &[&str] = &[
    "to", "for", "at", "in", "on", "with", "by", "from", "near", "and", "but", "so", "because",
    "which", "that", "it", "is", "was", "cuz", "bc", "lol", "now", "today", "yesterday", "tho",
    "though", "since", "after", "before", "way", "as", "last", "this", "next", "every", "like",
    "just", "really", "super", "pretty", "its", "it's", "im", "i", "we",
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

/// First words that make a value too vague (or not a value at all) to keep.
const VAGUE: &str = "i'm im it's its i've i'd it this that these those there here them him her me us you she he they we i mine yours hers \
    his theirs ours myself yourself ourselves something anything everything nothing stuff things \
    what which who whatever how why where when if like to now currently it's that's one both \
    same such";
/// Titles that never end a value ("Dr").
pub(super) const TITLES: &str = "mr mrs ms dr prof";

/// Words that end the names of software and services rather than of places.
const TECH_NOUNS: &str = "actions ci cd cloud services service server servers platform api apis db database engine \
    stack framework os app apps repo pipelines pipeline cluster kubernetes k8s lambda functions pages workers \
    compute storage hosting code studio suite workspace teams drive sheets docs";

/// Whether a capitalised value reads as a place ("Ghent", "Porto, Portugal") rather than a
/// product ("GitHub Actions", "Fly.io", "Postgres 16").
pub(super) fn looks_like_place(value: &str) -> bool {
    let words: Vec<&str> = value.split_whitespace().collect();
    let camel = |w: &str| {
        w.chars().skip(1).any(char::is_uppercase) && !w.chars().all(|c| c.is_uppercase() || !c.is_alphabetic())
    };
    !words.is_empty()
        && words.len() <= 4
        && starts_upper(value)
        && !value.contains(['.', '/', '@', '_'])
        && !value.chars().any(|c| c.is_ascii_digit())
        && !words.iter().any(|w| camel(w))
        && !words.iter().any(|w| in_list(TECH_NOUNS, &w.to_lowercase()))
}

/// Cuts a value at punctuation, a clause-joining word or a match of `extra`, then trims time words.
pub(super) fn cut_value<'a>(rest: &'a str, extra: Option<&Regex>) -> &'a str {
    let b = &*BOUNDS;
    let mut end =
        rest.find(|ch| matches!(ch, ',' | ';' | '(' | ')' | '[' | '{' | '\n' | PASTE_MARK)).unwrap_or(rest.len());
    for re in std::iter::once(&b.stop).chain(extra) {
        if let Some(m) = re.find(&rest[..end]) {
            end = m.start();
        }
    }
    let mut v = rest[..end].trim();
    loop {
        let trimmed = v.trim_end_matches(['.', ',', ' ']);
        let next = b.trailing.find(trimmed).map_or(trimmed, |m| &trimmed[..m.start()]);
        if next == v {
            return v;
        }
        v = next;
    }
}

/// Rejects empty, over-long or vague values (pronouns, "that…", "to …").
pub(super) fn plausible(value: &str, max_words: usize) -> bool {
    let words: Vec<&str> = value.split_whitespace().collect();
    let (Some(first), Some(last)) = (words.first(), words.last()) else {
        return false;
    };
    let first = first.to_lowercase();
    let last = last.trim_end_matches('.').to_lowercase();
    words.len() <= max_words
        && value.chars().any(char::is_alphanumeric)
        && !in_list(VAGUE, &first)
        && !in_list(TITLES, &last)
}

/// Whether `word` is one of the space-separated words in `list`.
pub(super) fn in_list(list: &str, word: &str) -> bool {
    list.split_whitespace().any(|w| w == word)
}

/// Whether a text starts with a capital.
pub(super) fn starts_upper(s: &str) -> bool {
    s.chars().next().is_some_and(char::is_uppercase)
}

/// The value after its first word, when that word is one of `words`.
pub(super) fn strip_leading<'a>(value: &'a str, words: &[&str]) -> Option<&'a str> {
    let (first, rest) = value.split_once(char::is_whitespace)?;
    words.contains(&first.to_lowercase().as_str()).then(|| rest.trim_start())
}

/// The part of a value a claim holds: one exact token ("10.0.7.40"), else the words before a
/// preposition or a time word ("Postgres 13 on a managed instance" → "Postgres 13").
pub(super) fn claim_cut(value: &str) -> &str {
    let first = first_word(value);
    if shape(first).is_exact() {
        return first;
    }
    match BOUNDS.claim_stop.find(value) {
        Some(m) if m.start() > 0 => value[..m.start()].trim_end_matches([',', '.', ';', ':', '!']),
        _ => value,
    }
}

/// "Postgres 16" as the value of a thing named "the database" is still a version of Postgres;
/// "node to 20" is node's version. Versions of one tool supersede each other, tools accumulate.
pub(super) fn version_key(object: &str, value: &str) -> Option<String> {
    if let Some(c) = BOUNDS.version_tail.captures(value.trim()) {
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

    #[test]
    fn values_end_at_joining_words_and_time_words() {
        assert_eq!(cut_value("Acme Robotics now, and I love it", None), "Acme Robotics");
        assert_eq!(cut_value("Ghent since March. Loving it", None), "Ghent");
        assert_eq!(claim_cut("Postgres 13 on a managed instance"), "Postgres 13");
        assert_eq!(claim_cut("10.0.7.40 for now"), "10.0.7.40");
        assert!(plausible("Acme Robotics", 2) && !plausible("that one", 4) && !plausible("Dr", 4));
    }

    #[test]
    fn versions() {
        assert_eq!(version_key("", "Postgres 16").as_deref(), Some("attr.postgres_version"));
        assert_eq!(version_key("node", "20").as_deref(), Some("attr.node_version"));
        assert_eq!(version_key("cache node", "10.2.3.5"), None);
    }
}
