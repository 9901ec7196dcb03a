//! Lists and disposals: the items of a list-like sentence ("Contact details: email a@b.co,
//! phone 0412 555 018"), each read as a clause of its own, and the thing a statement says is
//! gone ("sold the old car").

use std::sync::LazyLock;

use regex::Regex;

use super::marks::marks_update;
use crate::compile::attributes::{attributes, shape};
use crate::compile::fact::{ExtractedFact, FactRule};
use crate::compile::values::{claim_cut, first_word, plausible, NAME_END};

struct Lists {
    list_head: Regex,
    disposal: Regex,
}

static LISTS: LazyLock<Lists> = LazyLock::new(|| Lists {
    list_head: crate::patterns::regex(r"^\W*[\p{L}][\p{L}\p{N} '’-]{0,30}:\s+"),
    // "my old bike", "the previous host": what a statement says is gone.
    disposal: crate::patterns::regex(
        r"(?i)\b(?:my|our|the)\s+(?:old|previous|former|last|existing)\s+(?P<n>[\w-]+(?:\s+[\w-]+)?)|\b(?:my|our|the)\s+(?P<d>[\w-]+(?:\s+[\w-]+)?)\s+(?:died|broke|is\s+dead|was\s+stolen|got\s+stolen|is\s+gone|quit\s+on\s+me|gave\s+out|got\s+cancelled|was\s+cancelled|closed)\b",
    ),
});

/// The items of a list-like sentence ("Contact details: email a@b.co, phone 0412 555 018"),
/// each to be read as a clause of its own; empty for other sentences.
pub(crate) fn list_items(sentence: &str) -> Vec<&str> {
    let r = &*LISTS;
    let body = r.list_head.find(sentence).map_or(sentence, |m| &sentence[m.end()..]);
    let headed = body.len() < sentence.len();
    let items: Vec<&str> = body.split([',', ';']).map(str::trim).filter(|i| !i.is_empty()).collect();
    if !(headed && !items.is_empty() || items.len() >= 3) {
        return Vec::new();
    }
    items
}

/// One list item: "email hana@softloop.example", "billing contact Joy Park", "18 seats",
/// "Team plan", "role: dispatcher".
pub(crate) fn item_fact(item: &str) -> Option<ExtractedFact> {
    let a = attributes();
    let item = item.trim().trim_end_matches(['.', '!']);
    let words: Vec<&str> = item.split_whitespace().collect();
    if words.len() < 2 || words.len() > 8 {
        return None;
    }
    let fact = |np: &str, value: &str, content: String| -> Option<ExtractedFact> {
        let value = claim_cut(value.trim().trim_start_matches(':').trim());
        if !plausible(value, 5) || a.names_person(np) && !a.knows(np) {
            return None;
        }
        let key = a.key_for(np, value)?;
        Some(ExtractedFact::claimed(content, key, value, FactRule::ListItem, marks_update(item), Some(np.to_string())))
    };
    // "np: value" and "np value": the longest known phrase first.
    for n in (1..=3.min(words.len() - 1)).rev() {
        let np = words[..n].join(" ");
        let np = np.trim_end_matches(':');
        let value = words[n..].join(" ");
        let colon = words[n - 1].ends_with(':');
        let value_ok = colon
            || shape(first_word(&value)).is_exact()
            || value.chars().next().is_some_and(|c| c.is_uppercase() || c.is_ascii_digit());
        if a.knows(np) && value_ok {
            return fact(np, &value, item.to_string());
        }
    }
    // "value np": "18 seats", "Team plan", "weekly rotation".
    for n in (1..=2.min(words.len() - 1)).rev() {
        let np = words[words.len() - n..].join(" ");
        let value = words[..words.len() - n].join(" ");
        let named = value.chars().next().is_some_and(|c| c.is_uppercase() || c.is_ascii_digit());
        if a.knows(&np) && words.len() - n <= 3 && named {
            return fact(&np, &value, item.to_string());
        }
    }
    None
}

/// The thing a statement says is gone ("sold the old car", "the previous host"), if any.
pub(crate) fn disposed_thing(statement: &str) -> Option<String> {
    let r = &*LISTS;
    let c = r.disposal.captures(statement)?;
    let words: Vec<&str> = c.name("n").or_else(|| c.name("d"))?.as_str().split_whitespace().collect();
    let keep: Vec<&str> = words
        .iter()
        .take_while(|w| {
            let w = w.to_lowercase();
            !NAME_END.contains(&w.as_str())
                && !["away", "off", "got", "was", "were", "has", "had", "one", "is"].contains(&w.as_str())
        })
        .copied()
        .collect();
    (!keep.is_empty()).then(|| keep.join(" "))
}
