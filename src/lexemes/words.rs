//! The words Postgres' default text-search parser finds in a text, for the texts where this
//! module is sure of them.
//!
//! Postgres' parser (`wparser_def.c`) knows two dozen token types: words, numbers, hyphenated
//! words, and also hosts, URLs, e-mail addresses, file paths, versions, floats, XML tags and
//! entities, each found by its own state machine. This module reproduces the part ordinary
//! prose needs and gives up (None) on a text where any other could start, so it never guesses:
//!
//! - a run of ASCII letters and digits is one word: letters only (`asciiword`) or with a digit
//!   (`numword`, `uint`);
//! - runs joined by single hyphens, all letters (`well-known`), are a hyphenated word: the whole
//!   first, then each part (`asciihword`, `hword_asciipart`), each at its own position;
//! - everything else is a separator made of the characters below, and gives up where one of
//!   them could make another token: a `.` between two words or in a run of exactly two (hosts,
//!   floats, versions, paths), `-` before a digit (signed numbers), `/`, `~`, `+` next to
//!   anything but a separator (paths, URLs, signed numbers), `@` after a word (e-mail), `&`
//!   before a word or `#` (entities), `:` before anything but a separator (URLs), `_` next to
//!   another such character, any `<` (tags), a digit run with an exponent (`42e0x1`), and any
//!   character outside ASCII (whose class depends on the database's locale).
//!
//! `tests/api/lexemes.rs` holds these rules to Postgres: random texts built to hit every rule
//! and real conversations, compared with `to_tsvector`, must agree wherever this module answers.

/// What a word is to the `english` configuration: which dictionary it goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// ASCII letters, or a hyphenated word's whole: `english_stem` (stop words, Snowball).
    Letters,
    /// Letters and digits or digits alone: `simple` (kept as it is, lower-cased).
    Numeric,
}

/// Characters that always separate words, whatever is around them.
const NEUTRAL: &[u8] = b" \t\n\r,!?;\"()[]{}\\'*=|^`$%#>";
/// Characters that separate words in some places and start another kind of token in others.
const SPECIAL: &[u8] = b".-+/~_@&:";

fn alnum(c: Option<u8>) -> bool {
    c.is_some_and(|c| c.is_ascii_alphanumeric())
}

/// The start or end of the text, or a separator that is one everywhere.
fn neutral(c: Option<u8>) -> bool {
    c.is_none_or(|c| NEUTRAL.contains(&c))
}

fn special(c: Option<u8>) -> bool {
    c.is_some_and(|c| SPECIAL.contains(&c))
}

/// Whether the separator at `i` (one of [`SPECIAL`]) is a plain one where it stands. A run of
/// dots is judged as a whole, from its first dot.
fn plain_separator(b: &[u8], i: usize) -> bool {
    let at = |j: Option<usize>| j.and_then(|j| b.get(j).copied());
    let prev = at(i.checked_sub(1));
    let next = at(Some(i + 1));
    match b[i] {
        b'.' => {
            let end = i + b[i..].iter().take_while(|&&c| c == b'.').count();
            let (prev, next) = (prev, at(Some(end)));
            end - i != 2
                && !(alnum(prev) && alnum(next))
                && (neutral(prev) || alnum(prev))
                && (neutral(next) || alnum(next))
        }
        b'_' => (neutral(prev) || alnum(prev)) && (neutral(next) || alnum(next)),
        b'@' => neutral(prev) && (neutral(next) || alnum(next)),
        b':' => (neutral(prev) || alnum(prev)) && neutral(next),
        b'&' => next != Some(b'#') && neutral(prev) && neutral(next),
        b'-' => {
            if alnum(prev) && alnum(next) {
                // Inside a hyphenated word: judged with its parts.
                return true;
            }
            // Before a digit: a signed number; before another special: a token of its own.
            let starts_token = next.is_some_and(|c| c.is_ascii_digit() || (special(Some(c)) && c != b'-'));
            let ends_token = special(prev) && prev != Some(b'-');
            !(starts_token || ends_token)
        }
        _ => neutral(prev) && neutral(next),
    }
}

/// A run of digits and letters that starts with a digit and has an exponent inside (`42e0x1`):
/// Postgres reads a float there.
fn has_exponent(run: &[u8]) -> bool {
    run.first().is_some_and(u8::is_ascii_digit)
        && run.windows(3).any(|w| w[0].is_ascii_digit() && (w[1] | 0x20) == b'e' && w[2].is_ascii_digit())
}

/// The words of `text` in order, as Postgres' parser gives them to the dictionaries (a
/// hyphenated word is its whole, then its parts), or None when the text has anything this
/// module is not sure of.
pub(crate) fn words(text: &str) -> Option<Vec<(&str, Kind)>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphanumeric() {
            // A chain of runs joined by single hyphens.
            let start = i;
            let mut runs = Vec::new();
            loop {
                let s = i;
                while i < b.len() && b[i].is_ascii_alphanumeric() {
                    i += 1;
                }
                runs.push(s..i);
                if i + 1 < b.len() && b[i] == b'-' && b[i + 1].is_ascii_alphanumeric() {
                    i += 1;
                } else {
                    break;
                }
            }
            if runs.iter().any(|r| has_exponent(&b[r.clone()])) {
                return None;
            }
            if runs.len() == 1 {
                let kind = if b[start..i].iter().all(u8::is_ascii_alphabetic) { Kind::Letters } else { Kind::Numeric };
                out.push((&text[start..i], kind));
            } else {
                let letters = runs.iter().all(|r| b[r.clone()].iter().all(u8::is_ascii_alphabetic));
                let before = start.checked_sub(1).map(|j| b[j]);
                if !letters || before == Some(b'-') || b.get(i) == Some(&b'-') {
                    return None;
                }
                out.push((&text[start..i], Kind::Letters));
                out.extend(runs.into_iter().map(|r| (&text[r], Kind::Letters)));
            }
        } else if NEUTRAL.contains(&c) {
            i += 1;
        } else if SPECIAL.contains(&c) {
            if !plain_separator(b, i) {
                return None;
            }
            i += if c == b'.' { b[i..].iter().take_while(|&&c| c == b'.').count() } else { 1 };
        } else {
            return None;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Kind::*;

    fn w(text: &str) -> Option<Vec<(&str, Kind)>> {
        words(text)
    }

    #[test]
    fn words_numbers_and_separators() {
        assert_eq!(
            w("Hey Mel! I'm 42, and it's 10am... (really)"),
            Some(vec![
                ("Hey", Letters),
                ("Mel", Letters),
                ("I", Letters),
                ("m", Letters),
                ("42", Numeric),
                ("and", Letters),
                ("it", Letters),
                ("s", Letters),
                ("10am", Numeric),
                ("really", Letters)
            ])
        );
        assert_eq!(w(""), Some(vec![]));
        assert_eq!(w("end. Next: foo_bar @bob #tag 5% a - b"), {
            let v = ["end", "Next", "foo", "bar", "bob", "tag", "5", "a", "b"];
            Some(v.iter().map(|s| (*s, if *s == "5" { Numeric } else { Letters })).collect())
        });
    }

    #[test]
    fn a_hyphenated_word_is_its_whole_then_its_parts() {
        assert_eq!(
            w("a state-of-the-art plan"),
            Some(vec![
                ("a", Letters),
                ("state-of-the-art", Letters),
                ("state", Letters),
                ("of", Letters),
                ("the", Letters),
                ("art", Letters),
                ("plan", Letters)
            ])
        );
        assert_eq!(w("self- care"), Some(vec![("self", Letters), ("care", Letters)]));
        assert_eq!(w("x -y"), Some(vec![("x", Letters), ("y", Letters)]));
    }

    #[test]
    fn gives_up_where_another_token_could_start() {
        for text in [
            "node.js",
            "3.5 apples",
            "so.. ok",
            "x@y.com",
            "bob@",
            "a/b",
            "~/notes",
            "http://x",
            "<b>bold</b>",
            "AT&T",
            "&#39;",
            "C++",
            "+5",
            "-5 degrees",
            "covid-19",
            "mid-2020s",
            "a-b-",
            "42e0x1f",
            "café",
            "it’s",
            "._",
            "\u{7f}",
        ] {
            assert_eq!(w(text), None, "{text:?}");
        }
        assert!(w("wait... what").is_some());
        assert!(w("1e10").is_none() && w("e10").is_some());
    }
}
