//! Attribute phrases as the registry compares them: lower-cased, possessives split, determiners
//! and "which one" markers dropped, the head noun singular.

/// Words dropped from an attribute phrase: determiners, possessives and "which one" markers
/// that do not change which attribute is meant ("my new primary email" is "email").
#[rustfmt::skip]
const DROPPED_FROM_PHRASES: &[&str] = &[
    "the", "a", "an", "my", "our", "your", "new", "current", "currently", "updated", "latest",
    "present", "actual", "own", "main", "primary", "usual", "official", "brand", "shiny", "old", "its",
    "this", "that", "all", "every", "both",
];

/// Words that name the same part of an attribute ("VAT ID" and "VAT number").
const SAME_WORD: &[(&str, &str)] = &[
    ("e-mail", "email"),
    ("id", "number"),
    ("no", "number"),
    ("num", "number"),
    ("nr", "number"),
    ("url", "url"),
    ("addr", "address"),
];

/// Lower-cases an attribute phrase, splits possessives, drops determiners and turns a plural
/// head into its singular ("the cache node's IP addresses" → ["cache", "node", "ip", "address"]).
pub fn phrase_words(phrase: &str) -> Vec<String> {
    let lowered = phrase.to_lowercase().replace(['’', '`'], "'").replace("'s ", " ").replace("s' ", "s ");
    let mut words: Vec<String> = lowered
        .split(|c: char| c.is_whitespace() || c == '_' || c == '/')
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).trim_end_matches("'s").to_string())
        .map(|w| SAME_WORD.iter().find(|(a, _)| *a == w).map_or(w.clone(), |(_, b)| (*b).to_string()))
        .filter(|w| !w.is_empty() && !DROPPED_FROM_PHRASES.contains(&w.as_str()))
        .collect();
    if let Some(last) = words.last_mut() {
        *last = singular(last);
    }
    // "IP address" and "IP" are one attribute.
    if words.len() >= 2 && words[words.len() - 1] == "address" && words[words.len() - 2] == "ip" {
        words.pop();
    }
    words
}

/// A plural noun's singular ("addresses" → "address", "policies" → "policy").
pub(super) fn singular(w: &str) -> String {
    let keep = ["ss", "us", "is", "os", "ys"];
    if w.len() > 3 && w.ends_with('s') && !keep.iter().any(|k| w.ends_with(k)) {
        if let Some(stem) = w.strip_suffix("ies") {
            return format!("{stem}y");
        }
        return w[..w.len() - 1].to_string();
    }
    w.to_string()
}

/// Words that tell two things of one kind apart ("the staging host", "my work email").
#[rustfmt::skip]
pub(super) const INSTANCE_WORDS: &[&str] = &[
    "work", "personal", "home", "office", "test", "testing", "staging", "stage", "prod", "production",
    "dev", "development", "backup", "secondary", "spare", "second", "partner", "wife", "husband", "kid",
    "son", "daughter", "mom", "dad", "sandbox", "demo", "qa", "local", "remote", "private", "public",
    "internal", "external", "old", "legacy", "shared", "team", "school", "business", "company",
    "family",
];
