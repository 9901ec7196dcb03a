//! "Forget my SSN": a user's request to stop holding something, and what it reaches.
//!
//! A request names a thing of the user's ("my social security number", "what I told you about
//! my address"). The compiler retires every memory that mentions it, and every memory that
//! holds a value the user gave for it ("my address is 42 Elm St" makes "42 elm st" part of the
//! thing), as superseded with no successor (rule `forgotten`). Nothing is rewritten: the
//! episodes stay in the append-only log, but an episode whose memories are all retired is no
//! longer shown in bundles (the context's backing rule), search only finds active memories,
//! and a replay as of an earlier instant still shows what was shown then. Erasure, which
//! deletes rows, is a separate operator action (README, "Forgetting and erasure").
//!
//! Only the user's own statements can ask ([`crate::model::voice`]); a question ("did you
//! forget my birthday?"), a negation ("don't forget my birthday") or something not the user's
//! ("forget the second paragraph") asks nothing.

use std::sync::LazyLock;

use regex::Regex;

use super::text::split_sentences;

struct Rules {
    request: Regex,
    tail: Regex,
    value: Regex,
}

static RULES: LazyLock<Rules> = LazyLock::new(|| crate::patterns::built("forget rules", build()));

fn build() -> Result<Rules, regex::Error> {
    let request = Regex::new(
        r"(?i)^\W*(?:(?:ok|okay|also|and|hey|so|actually|now)\W+)*(?:(?:please|pls|kindly)\s+|(?:can|could|would|will)\s+you\s+(?:please\s+)?|i(?:\s+(?:want|need|would\s+like)|['’]d\s+like)\s+you\s+to\s+)?(?:forget|delete|erase|remove|purge|wipe|clear|drop|stop\s+(?:remembering|storing|keeping|saving)|(?:do\s+not|don['’]t)\s+(?:remember|store|keep|save))\s+(?:about\s+)?(?:(?:what|everything|anything|all)\s+(?:that\s+)?(?:you\s+know\s+|i\s+(?:have\s+)?(?:told|said\s+to|gave|shared\s+with)\s+you\s+|i\s+(?:said|shared|mentioned)\s+)?(?:about|regarding|on)\s+|(?:any|all|every)\s+(?:record|mention|memory|memories|trace|note)s?\s+(?:of|about)\s+|the\s+(?:fact|note|detail)s?\s+about\s+)?(?:my|our)\s+(?P<thing>[\w][\w\s'’.-]{0,60}?)\s*$",
    )?;
    // Words after the thing that do not name it.
    let tail = Regex::new(
        r"(?i)(?:\s+(?:from\s+(?:your\s+)?(?:memory|records?|notes?)|for\s+good|permanently|forever|completely|entirely|as\s+well|too|anymore|any\s+more|now|please|right\s+away|thanks?|thank\s+you|that\s+i\s+(?:told|gave)\s+you|i\s+(?:told|gave)\s+you))+\s*$",
    )?;
    let value = Regex::new(r"(?i)^\s*(?:is|was|=|:|-)\s+(?P<v>[^,;!?\n]+?)\s*(?:[,;!?\n]|\.(?:\s|$)|$)")?;
    Ok(Rules { request, tail, value })
}

/// The things a statement asks to forget, lower-cased ("social security number"), in order.
pub fn requests(statement: &str) -> Vec<String> {
    let r = &*RULES;
    let mut out = Vec::new();
    for (sentence, question) in split_sentences(statement) {
        // "Can you forget my address?" asks; "Did you forget my address?" does not.
        let s = sentence.trim();
        if question
            && !s
                .to_lowercase()
                .split_whitespace()
                .next()
                .is_some_and(|w| ["can", "could", "would", "will", "please"].contains(&w))
        {
            continue;
        }
        let Some(c) = r.request.captures(s) else { continue };
        let Some(thing) = c.name("thing") else { continue };
        let thing = r.tail.replace(thing.as_str(), "");
        let thing = thing.trim_matches(|ch: char| !ch.is_alphanumeric()).to_lowercase();
        let thing = thing.split_whitespace().collect::<Vec<_>>().join(" ");
        if !thing.is_empty() && !out.contains(&thing) {
            out.push(thing);
        }
    }
    out
}

/// Words of a text, lower-cased (letters and digits).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// What a request reaches in a subject's texts: the thing's own words, its initials ("ssn" for
/// "social security number" and the reverse), and the values the user gave for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The thing as asked ("social security number").
    pub thing: String,
    phrase: Vec<String>,
    /// Values found for it, as word sequences ("42 elm st").
    values: Vec<Vec<String>>,
}

impl Target {
    /// The target of a request for `thing`.
    pub fn new(thing: &str) -> Target {
        Target { thing: thing.to_string(), phrase: words(thing), values: Vec::new() }
    }

    /// Learns values from a text that states the thing ("My SSN is 123-45-6789."): what
    /// follows "is", ":" or "=" after a mention, up to the end of the clause.
    pub fn learn_values(&mut self, text: &str) {
        let lower = text.to_lowercase();
        for (start, end) in self.mentions(&lower) {
            let _ = start;
            if let Some(c) = RULES.value.captures(&lower[end..]) {
                if let Some(v) = c.name("v") {
                    let v = words(v.as_str());
                    // A value of a single short common word ("mine", "it") names nothing.
                    if !v.is_empty()
                        && (v.len() > 1 || v[0].len() > 3 || v[0].chars().any(|c| c.is_ascii_digit()))
                        && !self.values.contains(&v)
                    {
                        self.values.push(v);
                    }
                }
            }
        }
    }

    /// Byte ranges (in `lower`, a lower-cased text) where the thing is named: its words in a
    /// row, or their initials as one word, or, for an acronym, words with those initials.
    fn mentions(&self, lower: &str) -> Vec<(usize, usize)> {
        let toks: Vec<(usize, usize, &str)> = lower
            .split(|c: char| !c.is_alphanumeric())
            .scan(0usize, |pos, w| {
                let start = lower[*pos..].find(w).map_or(*pos, |i| *pos + i);
                *pos = start + w.len();
                Some((start, start + w.len(), w))
            })
            .filter(|(_, _, w)| !w.is_empty())
            .collect();
        let n = self.phrase.len();
        let mut out = Vec::new();
        if n == 0 {
            return out;
        }
        let initials: String = self.phrase.iter().filter_map(|w| w.chars().next()).collect();
        for i in 0..toks.len() {
            if i + n <= toks.len()
                && toks[i..i + n].iter().zip(&self.phrase).all(|(t, p)| t.2 == p || t.2 == format!("{p}s"))
            {
                out.push((toks[i].0, toks[i + n - 1].1));
            } else if n > 1 && toks[i].2 == initials {
                out.push((toks[i].0, toks[i].1));
            } else if n == 1 && self.phrase[0].len() >= 2 && self.phrase[0].len() <= 5 {
                let k = self.phrase[0].len();
                if i + k <= toks.len()
                    && toks[i..i + k]
                        .iter()
                        .zip(self.phrase[0].chars())
                        .all(|(t, c)| t.2.starts_with(c) && t.2.len() > 2)
                    && k > 1
                {
                    out.push((toks[i].0, toks[i + k - 1].1));
                }
            }
        }
        out
    }

    /// Whether `text` names the thing or holds one of its values.
    pub fn reaches(&self, text: &str) -> bool {
        let lower = text.to_lowercase();
        if !self.mentions(&lower).is_empty() {
            return true;
        }
        let w = words(&lower);
        self.values.iter().any(|v| w.windows(v.len()).any(|win| win == v.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_found_in_their_everyday_shapes() {
        let cases = [
            ("Please forget my social security number.", vec!["social security number"]),
            ("forget my SSN", vec!["ssn"]),
            ("Can you delete what I told you about my address?", vec!["address"]),
            ("Ok, erase everything about my ex from your memory please.", vec!["ex"]),
            ("I'd like you to stop remembering my phone number.", vec!["phone number"]),
            ("Don't keep my credit card number.", vec!["credit card number"]),
            ("Remove any mention of our home address. Thanks!", vec!["home address"]),
        ];
        for (text, want) in cases {
            assert_eq!(requests(text), want, "{text}");
        }
    }

    #[test]
    fn look_alikes_ask_nothing() {
        for text in [
            "Don't forget my birthday next week!",
            "Did you forget my address?",
            "I forgot my password again.",
            "Forget it, let's move on.",
            "Forget the second paragraph.",
            "My sister wants to delete her account.",
            "Delete the unused imports in that file.",
        ] {
            assert!(requests(text).is_empty(), "{text}");
        }
    }

    #[test]
    fn a_target_reaches_mentions_initials_and_values() {
        let mut t = Target::new("social security number");
        assert!(t.reaches("user: my Social Security Number is 123-45-6789"));
        assert!(t.reaches("I gave them my SSN yesterday"));
        assert!(!t.reaches("I moved to Oslo"));
        t.learn_values("user: My social security number is 123-45-6789.");
        assert!(t.reaches("the number 123-45-6789 was on the form"));
        let mut a = Target::new("ssn");
        assert!(a.reaches("my social security number is on file"));
        a.learn_values("My SSN: 987-65-4321");
        assert!(a.reaches("card 987 65 4321"));
        let mut home = Target::new("address");
        home.learn_values("My address is 42 Elm Street, Springfield.");
        assert!(home.reaches("We host the party at 42 Elm Street"));
        assert!(!home.reaches("42 is my favourite number"));
    }
}
