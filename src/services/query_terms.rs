//! Turning a task into a full-text query: its content words, OR-ed, for Postgres' english
//! configuration (which stems them, so "working" finds "works").

use std::collections::BTreeSet;

/// Words too common to say what a task is about.
const STOPWORDS: &[&str] = &[
    "a", "about", "all", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did",
    "do", "does", "for", "from", "get", "had", "has", "have", "he", "her", "him", "his", "how", "i", "if", "in",
    "into", "is", "it", "its", "just", "know", "me", "my", "need", "of", "on", "or", "our", "please", "she", "should",
    "so", "tell", "that", "the", "their", "them", "then", "there", "they", "this", "to", "us", "user", "user's",
    "users", "was", "we", "were", "what", "when", "where", "which", "who", "whom", "why", "will", "with", "would",
    "you", "your", "help", "want", "think",
];

/// The content words of a task, lower-cased, de-duplicated, in sorted order.
pub fn content_words(task: &str) -> Vec<String> {
    let words: BTreeSet<String> = task
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 2 && !STOPWORDS.contains(&w.as_str()))
        .collect();
    words.into_iter().collect()
}

/// A `to_tsquery` expression OR-ing the task's content words, or None when it has none.
/// Only alphanumeric words reach the expression, so it cannot be malformed.
pub fn tsquery_for(task: &str) -> Option<String> {
    let words = content_words(task);
    (!words.is_empty()).then(|| words.join(" | "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_an_or_query_of_content_words() {
        assert_eq!(tsquery_for("Where does the user work?").as_deref(), Some("work"));
        assert_eq!(tsquery_for("What is the name of the user's dog?").as_deref(), Some("dog | name"));
        assert_eq!(tsquery_for("what is it?"), None);
        assert_eq!(tsquery_for("a&b | c:* ! (x)"), None, "operators never reach the query");
        assert_eq!(tsquery_for("Paris 2026"), Some("2026 | paris".into()));
    }
}
