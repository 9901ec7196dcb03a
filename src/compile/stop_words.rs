//! The compiler's one list of function words: articles, pronouns, prepositions, conjunctions,
//! auxiliaries and modals, which say nothing about what a text is about. The lexical rule's
//! widening guard and the LLM compiler's support check leave them out. Lists with another
//! purpose stay with their users (words that are no value, no name, no topic, no attribute).
//! Postgres' own `english` stop words, which full-text lexemes must match exactly, are
//! `lexemes::english`'s.

/// Function words, lower-case, in byte order.
#[rustfmt::skip]
const STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any",
    "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both",
    "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few",
    "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers",
    "herself", "him", "himself", "his", "how", "i", "in", "into", "is", "it", "its", "itself",
    "just", "may", "me", "might", "mine", "more", "most", "much", "must", "my", "myself", "no",
    "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours",
    "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than",
    "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they",
    "this", "those", "through", "to", "too", "under", "until", "us", "very", "was", "we", "were",
    "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you",
    "your", "yours", "yourself", "yourselves",
];

/// True for a function word (given lower-case).
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_sorted_and_lower_case() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(STOP_WORDS.iter().all(|w| w.chars().all(|c| c.is_ascii_lowercase())));
        assert!(is_stop_word("the") && is_stop_word("yourselves") && !is_stop_word("berlin"));
    }
}
