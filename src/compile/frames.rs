//! Verb frames: phrasings that state an attribute's value without "my X is V" ("I bank with
//! Monzo", "we host on Fly.io", "Sam runs my team", "first day at Acme went well").
//!
//! Frames are data: the built-ins come from `attributes.json`, a tenant adds its own under
//! `attribute_frames` in its config. A pattern is a phrase in a small language:
//! - words and punctuation match themselves, case-insensitively; a space matches any run of
//!   white space (or a comma); ` ?` makes the space optional;
//! - `(a|an|the)` is a choice, `(now )?` an optional part;
//! - `{i}` is the speaker ("I", "we", with an optional "just/now/finally…"), `{im}` the speaker
//!   with a verb "to be" ("I'm", "we are", "I've been");
//! - exactly one value slot: `{value}` (any short value), `{name}` (a capitalised name or an
//!   exact value such as an address or a version), `{place}` (a capitalised place), `{role}` (a
//!   job title ending in a role noun), `{cadence}` (a schedule: "every two weeks", "weekly"),
//!   `{diet}`;
//! - `{old}`: the thing being replaced (for frames whose key is `link`: the key is then found
//!   from the subject's current facts, by the old value or the attribute it names).
//!
//! A frame not starting with `{i}`/`{im}` must match at the start of its clause (after fillers
//! like "so", "well", "big news:"), so "my brother's first day at Google" never reads as the
//! user's. `key` may contain `{slot}`: the text of the frame's first choice, slugged.

use regex::{Regex, RegexSet};

use super::attributes::{attributes, is_open_key, phrase_words, FrameSpec};

/// Longest pattern accepted.
const MAX_PATTERN_LEN: usize = 500;

/// Which value a frame's slot accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    Value,
    Name,
    Place,
    Role,
    Cadence,
    Diet,
}

/// A compiled frame.
#[derive(Debug, Clone)]
pub struct Frame {
    re: Regex,
    /// Canonical key (may contain `{slot}`), or `link`.
    pub key: String,
    /// True for events ("first day at…"): stated in the past, they still give the current value.
    pub event: bool,
    pub slot: Slot,
    /// Whether the value slot ends the pattern (then it runs to the end of the clause and is cut).
    trailing: bool,
    /// Words every match contains, by group (one of each): see [`literals`].
    literals: Vec<Vec<String>>,
}

/// What a frame found in a clause.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameMatch {
    /// Resolved key, or `link` when the key must come from the subject's current facts.
    pub key: String,
    /// Byte range of the value in the clause (before trimming by the caller).
    pub value: (usize, usize),
    /// Byte range of the whole statement in the clause.
    pub span: (usize, usize),
    pub slot: Slot,
    pub event: bool,
    pub trailing: bool,
    /// The replaced thing, for `link` frames.
    pub old: Option<String>,
}

const SPEAKER_ADV: &str = r"(?:\s+(?:just|finally|recently|also|now|currently|officially|actually|still))?";
/// Fillers and a short lead-in ("so yeah,", "big news:", "after the reorg,") at a clause start.
pub const LEAD: &str = r"^(?:[\s\p{P}]*(?:ok|okay|so|well|yeah|yes|um+|uh+|erm|hmm|like|and|but|also|btw|anyway|oh|hey|hi|news|update|quick\s+update|big\s+news|good\s+news|guess\s+what|fyi|finally|just|officially|today|yesterday|this\s+week|last\s+week|this\s+morning|on\s+monday|as\s+of\s+\w+|after\s+the\s+\w+|since\s+\w+)\b)*[\s\p{P}]*(?:[^,:;—–\p{So}]{1,40}(?:[,:;—–\p{So}]|\s-)+\s*)?";
/// `LEAD`, then "today was", "my", "we're just": what may precede a clause-anchored frame.
const ANCHOR_TAIL: &str = r"(?:(?:today|yesterday|this\s+\w+|last\s+\w+)\s+(?:was|is)\s+)?(?:(?:my|our)\s+)?(?:(?:i|we)(?:['’]re|['’]ve|['’]m|\s+are|\s+have|\s+am)?\s+(?:(?:just|finally|recently|also|officially|now|all|been)\s+)*)?";

/// Compiles a frame pattern; Err(message) names what is wrong.
pub fn compile(spec: &FrameSpec, diets: &[String]) -> Result<Frame, String> {
    let p = spec.pattern.trim();
    if p.is_empty() || p.len() > MAX_PATTERN_LEN {
        return Err(format!("pattern must be 1-{MAX_PATTERN_LEN} characters"));
    }
    let mut out = String::new();
    let mut slot: Option<Slot> = None;
    let mut slot_count = 0;
    let mut trailing = false;
    let mut depth = 0i32;
    let starts_with_speaker = p.starts_with("{i}") || p.starts_with("{im}");
    let chars: Vec<char> = p.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '{' => {
                let end = chars[i..].iter().position(|&ch| ch == '}').ok_or("unclosed '{'")? + i;
                let name: String = chars[i + 1..end].iter().collect();
                let at_end = chars[end + 1..].iter().all(|c| c.is_whitespace());
                let value = |s: Slot| -> String {
                    match (s, at_end) {
                        (Slot::Name, false) if i == 0 => {
                            r"(?P<v>(?-i:\p{Lu}[\p{L}\p{N}'’.&-]*(?:\s+\p{Lu}[\p{L}\p{N}'’.&-]*){0,3}))".into()
                        }
                        (Slot::Diet, _) => {
                            format!("(?P<v>{})", diets.iter().map(|d| regex::escape(d)).collect::<Vec<_>>().join("|"))
                        }
                        (_, true) => r"(?P<v>\S.*)".into(),
                        (_, false) => r"(?P<v>[^\s,;:!?]+(?:\s+[^\s,;:!?]+){0,5}?)".into(),
                    }
                };
                let piece = match name.as_str() {
                    "i" => format!(r"\b(?P<s>i|we){SPEAKER_ADV}"),
                    "im" => format!(
                        r"\b(?P<s>i'm|im|i\s+am|we're|we\s+are|i've\s+been|we've\s+been|i\s+have\s+been|we\s+have\s+been){SPEAKER_ADV}"
                    ),
                    "old" => r"(?P<o>[\w'.-]+(?:\s+[\w'.-]+){0,3}?)".into(),
                    other => {
                        let s = match other {
                            "value" => Slot::Value,
                            "name" => Slot::Name,
                            "place" => Slot::Place,
                            "role" => Slot::Role,
                            "cadence" => Slot::Cadence,
                            "diet" => Slot::Diet,
                            _ => return Err(format!("unknown slot '{{{other}}}'")),
                        };
                        slot = Some(s);
                        slot_count += 1;
                        trailing = at_end && s != Slot::Diet;
                        value(s)
                    }
                };
                out.push_str(&piece);
                i = end + 1;
                continue;
            }
            '(' => {
                depth += 1;
                out.push_str("(?:");
            }
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err("unbalanced ')'".into());
                }
                out.push(')');
            }
            '|' if depth > 0 => out.push('|'),
            '?' if i > 0 && chars[i - 1] == ')' => out.push('?'),
            ' ' => {
                if chars.get(i + 1) == Some(&'?') {
                    out.push_str(r"[\s,]*");
                    i += 2;
                    continue;
                }
                out.push_str(r"(?:\s*,\s*|\s+)");
            }
            '\'' | '’' => out.push_str("['’]"),
            other => out.push_str(&regex::escape(&other.to_string())),
        }
        i += 1;
    }
    if depth != 0 {
        return Err("unbalanced '('".into());
    }
    if slot_count != 1 {
        return Err(
            "a pattern needs exactly one value slot: {value}, {name}, {place}, {role}, {cadence} or {diet}".into()
        );
    }
    let key = spec.key.trim().to_string();
    let key_ok =
        key == "link" || (key.contains("{slot}") && is_open_key(&key.replace("{slot}", "x"))) || !key.is_empty();
    if !key_ok {
        return Err("key must be a claim key, an attr.* key (may contain {slot}) or 'link'".into());
    }
    let body =
        if starts_with_speaker { format!("(?P<body>{out})") } else { format!("{LEAD}{ANCHOR_TAIL}(?P<body>{out})") };
    let re = Regex::new(&format!("(?i){body}")).map_err(|e| format!("pattern does not compile: {e}"))?;
    Ok(Frame { re, key, event: spec.event, slot: slot.unwrap_or(Slot::Value), trailing, literals: literals(p) })
}

/// What every match of a pattern contains, as groups of which at least one word must appear
/// (matched case-insensitively): a plain word outside choices is a group of one; a choice that
/// is not optional gives one word per alternative (its longest plain word), unless one of its
/// alternatives has none. Slots match anything and add nothing. Characters the pattern language
/// gives a meaning (space, apostrophe, `?`, `|`) end a word; leaving a character or a group out
/// only makes the test weaker, never wrong.
fn literals(pattern: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut word = String::new();
    // Per alternative of the choice being read: its longest plain word so far.
    let mut choice: Vec<Option<String>> = Vec::new();
    let (mut depth, mut in_slot) = (0i32, false);
    for (i, &c) in chars.iter().enumerate() {
        if in_slot {
            in_slot = c != '}';
            continue;
        }
        if !matches!(c, '(' | ')' | '{' | '}' | '|' | '?' | '\'' | '’') && !c.is_whitespace() {
            if depth <= 1 {
                word.push(c);
            }
            continue;
        }
        let w = std::mem::take(&mut word);
        if !w.is_empty() {
            match (depth, choice.last_mut()) {
                (0, _) => out.push(vec![w]),
                (1, Some(best)) if best.as_ref().is_none_or(|b| b.len() < w.len()) => *best = Some(w),
                _ => {}
            }
        }
        match c {
            '{' => in_slot = true,
            '(' => {
                depth += 1;
                if depth == 1 {
                    choice = vec![None];
                }
            }
            '|' if depth == 1 => choice.push(None),
            ')' => {
                let optional = chars.get(i + 1) == Some(&'?');
                if depth == 1 && !optional && choice.iter().all(Option::is_some) {
                    out.push(choice.drain(..).flatten().collect());
                }
                depth -= 1;
            }
            _ => {}
        }
    }
    if !word.is_empty() {
        out.push(vec![word]);
    }
    out
}

impl Frame {
    /// The first match of this frame in a clause (apostrophes already straightened).
    pub fn find(&self, clause: &str) -> Option<FrameMatch> {
        let c = self.re.captures(clause)?;
        let v = c.name("v")?;
        let body = c.name("body")?;
        let mut key = self.key.clone();
        if key.contains("{slot}") {
            // The first choice in the pattern is the one that names the thing.
            let text = &clause[body.start()..v.start()];
            let words = phrase_words(text);
            let noun = words.iter().find(|w| !["our", "my", "is", "are"].contains(&w.as_str()))?;
            key = key.replace("{slot}", &noun.replace('-', "_"));
            if !is_open_key(&key) {
                return None;
            }
        }
        Some(FrameMatch {
            key,
            value: (v.start(), v.end()),
            span: (body.start(), if self.trailing { v.end() } else { body.end() }),
            slot: self.slot,
            event: self.event,
            trailing: self.trailing,
            old: c.name("o").map(|o| o.as_str().to_string()),
        })
    }
}

/// The built-in frames, compiled once.
pub fn builtin() -> &'static [Frame] {
    static FRAMES: std::sync::LazyLock<Vec<Frame>> = std::sync::LazyLock::new(|| {
        let a = attributes();
        a.frames.iter().filter_map(|f| compile(f, &a.diets).ok()).collect()
    });
    &FRAMES
}

/// Which built-in frames can match a clause at all: each frame's [`literals`], looked for
/// together in one pass. A frame can only match a clause that contains one word of each of its
/// groups, so skipping the others changes nothing but the time (most clauses hold the words of
/// few frames).
pub fn builtin_candidates<'a>(clause: &str) -> impl Iterator<Item = &'a Frame> {
    struct Prefilter {
        /// One case-insensitive pattern per distinct word (the frames' own case rules).
        words: RegexSet,
        /// Per built-in frame, per group, the indexes of its words in `words`.
        needs: Vec<Vec<Vec<usize>>>,
    }
    static PREFILTER: std::sync::LazyLock<Prefilter> = std::sync::LazyLock::new(|| {
        let mut distinct: Vec<&str> = Vec::new();
        let mut index = |w: &'static str| match distinct.iter().position(|d| *d == w) {
            Some(i) => i,
            None => {
                distinct.push(w);
                distinct.len() - 1
            }
        };
        let needs = builtin()
            .iter()
            .map(|f| f.literals.iter().map(|group| group.iter().map(|w| index(w.as_str())).collect()).collect())
            .collect();
        let words = RegexSet::new(distinct.iter().map(|w| format!("(?i){}", regex::escape(w))));
        Prefilter { words: crate::patterns::built("frame prefilter", words), needs }
    });
    let found = PREFILTER.words.matches(clause);
    builtin()
        .iter()
        .enumerate()
        .filter(move |(i, _)| PREFILTER.needs[*i].iter().all(|group| group.iter().any(|&w| found.matched(w))))
        .map(|(_, f)| -> &'a Frame { f })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(pattern: &str, key: &str) -> FrameSpec {
        FrameSpec { pattern: pattern.into(), key: key.into(), event: false, slot: None }
    }

    fn hit(f: &Frame, s: &str) -> Option<(String, String)> {
        f.find(s).map(|m| (m.key, s[m.value.0..m.value.1].to_string()))
    }

    #[test]
    fn every_builtin_frame_compiles() {
        let a = attributes();
        for f in &a.frames {
            compile(f, &a.diets).unwrap_or_else(|e| panic!("{}: {e}", f.pattern));
        }
        assert_eq!(builtin().len(), a.frames.len());
    }

    #[test]
    fn speaker_frames_match_anywhere_others_at_clause_start() {
        let bank = compile(&spec("{i} bank with {name}", "attr.bank"), &[]).expect("compiles");
        assert_eq!(
            hit(&bank, "honestly I bank with Monzo these days"),
            Some(("attr.bank".into(), "Monzo these days".into()))
        );
        let first = compile(&spec("first day at {name}", "employment.current_employer"), &[]).expect("compiles");
        assert!(hit(&first, "so yeah, first day at Acme Robotics went well").is_some());
        assert!(hit(&first, "today was my first day at Acme").is_some());
        assert_eq!(hit(&first, "my brother's first day at Google was great"), None);
    }

    #[test]
    fn leading_name_slot_and_slot_keys() {
        let runs = compile(&spec("{name} (runs|leads) (my|our) team", "attr.manager"), &[]).expect("compiles");
        assert_eq!(
            hit(&runs, "after the reorg, Sam Lee runs my team"),
            Some(("attr.manager".into(), "Sam Lee".into()))
        );
        let stack = compile(&spec("our (frontend|backend) is built with {name}", "attr.{slot}_stack"), &[]).expect("c");
        assert_eq!(
            hit(&stack, "our frontend is built with Svelte"),
            Some(("attr.frontend_stack".into(), "Svelte".into()))
        );
    }

    /// A clause the pattern reads: the first choice of each group, a plain value per slot.
    fn example(pattern: &str, diet: &str) -> String {
        let mut out = String::new();
        let mut skip = Vec::new(); // per open group: whether its first choice has ended
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            match c {
                '(' => skip.push(false),
                ')' => {
                    skip.pop();
                }
                '|' if !skip.is_empty() => {
                    if let Some(last) = skip.last_mut() {
                        *last = true;
                    }
                }
                _ if skip.iter().any(|s| *s) => {}
                '?' if out.ends_with(' ') || pattern.contains(")?") => {}
                '{' => {
                    let name: String = chars.by_ref().take_while(|&ch| ch != '}').collect();
                    out.push_str(match name.as_str() {
                        "i" => "I",
                        "im" => "I'm",
                        "role" => "software engineer",
                        "cadence" => "every week",
                        "diet" => diet,
                        "old" => "old thing",
                        _ => "Acme",
                    });
                }
                _ => out.push(c),
            }
        }
        out
    }

    #[test]
    fn literals_are_the_words_outside_choices_and_slots() {
        let g = |ws: &[&str]| -> Vec<String> { ws.iter().map(|w| w.to_string()).collect() };
        assert_eq!(literals("{i} bank (with|at) {name}"), vec![g(&["bank"]), g(&["with", "at"])]);
        assert_eq!(literals("{i} switched banks to {name}"), vec![g(&["switched"]), g(&["banks"]), g(&["to"])]);
        assert_eq!(
            literals("{name} (runs|leads) (my|our) team"),
            vec![g(&["runs", "leads"]), g(&["my", "our"]), g(&["team"])]
        );
        assert_eq!(literals("I'm (now )?at {name}"), vec![g(&["I"]), g(&["m"]), g(&["at"])]);
        assert_eq!(literals("(got|'ve been|just got) promoted"), vec![g(&["got", "been", "just"]), g(&["promoted"])]);
        // An alternative without a plain word (a nested choice, a slot) leaves its choice out.
        assert_eq!(literals("(a|(b|c)) x (y|{value}) z"), vec![g(&["x"]), g(&["z"])]);
    }

    #[test]
    fn the_prefilter_keeps_every_frame_that_matches() {
        let a = attributes();
        let diet = a.diets.first().map_or("vegan", String::as_str);
        let mut matched = 0;
        for (i, f) in builtin().iter().enumerate() {
            let text = example(&a.frames[i].pattern, diet);
            for clause in [text.clone(), text.to_uppercase(), format!("so yeah, {text} these days")] {
                if f.find(&clause).is_some() {
                    matched += 1;
                    let kept = builtin_candidates(&clause).any(|c| std::ptr::eq(c, f));
                    assert!(kept, "{} dropped for {clause:?}", a.frames[i].pattern);
                }
            }
        }
        assert!(matched >= builtin().len() / 2, "only {matched} examples matched their frame");
        assert!(builtin_candidates("the weather has been awful all week").count() < builtin().len() / 2);
    }

    #[test]
    fn bad_patterns_are_refused_with_a_reason() {
        assert!(compile(&spec("{i} bank with", "attr.bank"), &[]).unwrap_err().contains("exactly one value slot"));
        assert!(compile(&spec("(a|b {value}", "attr.x"), &[]).unwrap_err().contains("unbalanced"));
        assert!(compile(&spec("{nope} x {value}", "attr.x"), &[]).unwrap_err().contains("unknown slot"));
    }
}
