//! Plain-text views of an episode payload.
//!
//! Episodes arrive as free-form JSON; compilation only needs two views of them:
//! the whole conversation as text, and the statements the user made themselves.

use regex::{Captures, Regex};
use serde_json::Value;
use std::sync::LazyLock;

use crate::model::voice::Voice;

/// Replaces inline pasted material (code spans, JSON, quotations); its sentence is not the user's.
pub const PASTE_MARK: char = '\u{1A}';
/// Replaces each removed log line; what follows it in the paragraph is likely more log.
pub const LOG_MARK: &str = "\u{1B}";
const SENT: &str = " \u{1A} ";

/// Flattens a payload to text: `role: content` per message, else `text`, else `content`.
pub fn episode_text(payload: &Value) -> String {
    let text = match messages(payload) {
        Some(msgs) => msgs
            .iter()
            .filter_map(|m| {
                let content = m.get("content")?.as_str()?;
                let role = m.get("role").and_then(Value::as_str).unwrap_or("unknown");
                Some(format!("{role}: {content}"))
            })
            .collect::<Vec<_>>()
            .join("\n"),
        None => plain_text(payload).unwrap_or_default().to_string(),
    };
    strip_nul(&text)
}

/// Chars of an episode's text that its vector is made of. A sentence embedder reads a bounded
/// window anyway (MiniLM: 256 tokens, trained on 128), so the vector of a long message is the
/// vector of its opening: this bound makes the cost of one message's vector independent of its
/// length (a 4 KB answer costs what a 300-char one does). Shorter texts are embedded whole.
/// 400 rather than 600: on BEAM's long chats compile went from 12.1 to 22.2 messages/s (MiniLM's
/// cost grows faster than the text) with recall equal or better at every budget, and LoCoMo's
/// figures unchanged (bench/results/2026-12-06-short-tails.md). 300 rather than 400: 15.9 to
/// 25.1 messages/s, BEAM recall up at every budget on both halves of the dev chats, LoCoMo's dev
/// down by one to two questions of 760 (bench/results/2026-12-07-context-time-and-spans.md).
pub const EMBEDDED_CHARS: usize = 300;

/// The part of `text` an episode's vector is made of: all of it up to [`EMBEDDED_CHARS`],
/// else its opening cut at the last whitespace before the bound (at the bound in a long word).
pub fn embedded_text(text: &str) -> &str {
    let Some((end, _)) = text.char_indices().nth(EMBEDDED_CHARS) else { return text };
    let head = &text[..end];
    match head.rfind(char::is_whitespace) {
        Some(i) if i > EMBEDDED_CHARS / 2 => head[..i].trim_end(),
        _ => head,
    }
}

/// Texts longer than this many chars get passages beyond their opening: shorter ones are read
/// well enough by the opening's vector (LoCoMo's turns, under 450 chars, have none).
pub const PASSAGES_FROM: usize = 2 * EMBEDDED_CHARS;
/// Chars of one passage, cut at whitespace like the opening.
pub const PASSAGE_CHARS: usize = 300;
/// At most this many passages an episode, spread over the text after the opening, so a
/// message's cost stays bounded whatever its length (a 350 KB answer costs what a 3 KB one does).
pub const MAX_PASSAGES: usize = 4;

/// The passages of a long text that get vectors of their own, as char ranges (start, end):
/// consecutive windows of about [`PASSAGE_CHARS`] after the opening ([`embedded_text`]); when
/// there are more than [`MAX_PASSAGES`], that many spread evenly from the first to the last.
/// Empty for a text of at most [`PASSAGES_FROM`] chars.
pub fn passages(text: &str) -> Vec<(usize, usize)> {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= PASSAGES_FROM {
        return Vec::new();
    }
    let mut windows = Vec::new();
    let mut start = embedded_text(text).chars().count();
    loop {
        while start < chars.len() && chars[start].is_whitespace() {
            start += 1;
        }
        if start >= chars.len() {
            break;
        }
        let bound = (start + PASSAGE_CHARS).min(chars.len());
        let end = if bound == chars.len() {
            bound - chars[start..bound].iter().rev().take_while(|c| c.is_whitespace()).count()
        } else {
            // the last whitespace in the window's second half, else the bound (a long word)
            (start + PASSAGE_CHARS / 2..bound).rev().find(|&i| chars[i].is_whitespace()).unwrap_or(bound)
        };
        // A short remainder says too little to find on its own.
        if chars[start..end].iter().filter(|c| !c.is_whitespace()).count() >= PASSAGE_CHARS / 8 {
            windows.push((start, end));
        }
        start = end;
    }
    if windows.len() <= MAX_PASSAGES {
        return windows;
    }
    let n = windows.len();
    (0..MAX_PASSAGES).map(|i| windows[i * (n - 1) / (MAX_PASSAGES - 1)]).collect()
}

/// The chars `range` of `text`.
pub fn char_range(text: &str, (start, end): (usize, usize)) -> String {
    text.chars().skip(start).take(end.saturating_sub(start)).collect()
}

/// Returns the statements the user made, one per message, for fact extraction: the `user`
/// messages of a chat payload in a user's or agent's episode, the plain text of a user's
/// episode, nothing of evidence (see [`crate::model::voice`]).
pub fn user_statements(payload: &Value, voice: Voice) -> Vec<String> {
    if !voice.relays_user() {
        return Vec::new();
    }
    let statements: Vec<String> = match messages(payload) {
        Some(msgs) => msgs
            .iter()
            .filter(|m| is_user_role(m.get("role").and_then(Value::as_str)))
            .filter_map(|m| m.get("content").and_then(Value::as_str))
            .map(strip_nul)
            .collect(),
        None if voice == Voice::User => plain_text(payload).map(strip_nul).into_iter().collect(),
        None => Vec::new(),
    };
    // Blank statements carry nothing to extract; dropping them keeps callers simple.
    statements.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

/// The roles of a chat payload's messages in order, lower-cased (empty for non-chat payloads).
pub fn message_roles(payload: &Value) -> Vec<String> {
    messages(payload)
        .map(|msgs| {
            msgs.iter().filter_map(|m| m.get("role").and_then(Value::as_str)).map(|r| r.trim().to_lowercase()).collect()
        })
        .unwrap_or_default()
}

fn messages(payload: &Value) -> Option<&Vec<Value>> {
    payload.get("messages").and_then(Value::as_array)
}

fn plain_text(payload: &Value) -> Option<&str> {
    payload.get("text").and_then(Value::as_str).or_else(|| payload.get("content").and_then(Value::as_str))
}

fn is_user_role(role: Option<&str>) -> bool {
    role.is_some_and(|r| {
        let r = r.trim();
        r.eq_ignore_ascii_case("user") || r.eq_ignore_ascii_case("human")
    })
}

struct Paste {
    fence: Regex,
    inline_code: Regex,
    json_key: Regex,
    log_line: Regex,
    quote_line: Regex,
    dquote: Regex,
    squote: Regex,
}

static PASTE: LazyLock<Paste> = LazyLock::new(|| crate::patterns::built("pasted-text rules", build_paste()));

fn build_paste() -> Result<Paste, regex::Error> {
    let re = Regex::new;
    Ok(Paste {
        // Unterminated fences run to the end: the rest is pasted too.
        fence: re(r"(?s)```.*?(?:```|\z)|~~~.*?(?:~~~|\z)")?,
        inline_code: re(r"`[^`\n]+`")?,
        json_key: re(r#"["']\s*:"#)?,
        log_line: re(
            r#"(?m)^[ \t]*(?:\[?\d{4}-\d{2}-\d{2}|\[?\d{1,2}:\d{2}(?::\d{2})?\b|\[?(?:ERROR|WARN|WARNING|INFO|DEBUG|TRACE|FATAL|CRITICAL|PANIC|NOTICE)\b|(?i:(?:error|warn|warning|info|debug|trace|fatal|critical|panic|exception)\s*[\[\]:|(])|Traceback\b|at\s+\S+.*(?:\(|:\d)|File\s+".*",\s+line\s+\d|thread\s+'.*'\s+panicked|[$#]\s)[^\n]*"#,
        )?,
        quote_line: re(r"(?m)^[ \t]*>[^\n]*\n?")?,
        dquote: re(r#""[^"\n]*"|“[^”\n]*”|„[^“”\n]*[“”]|«[^»\n]*»"#)?,
        // Single quotes double as apostrophes, so a quote must open and close at word edges.
        squote: re(r"(^|[^\w'’])['‘]((?:[^'’‘\n]|['’]\w)+?)['’]($|[^\w])")?,
    })
}

/// Whether quotations inside a line count as pasted material.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quotes {
    /// Quoted words are someone else's: never the user's statement (fact extraction).
    Strip,
    /// Quoted words are part of what was said ("I loved \"The Night Circus\""): summaries.
    Keep,
}

/// Removes pasted material (code, JSON, logs, quotes), leaving markers where it was.
pub fn strip_pasted(text: &str) -> String {
    strip_pasted_with(text, Quotes::Strip)
}

/// Removes pasted material, leaving markers where it was; quotations inside a line go only
/// with [`Quotes::Strip`] (quoted lines, `> …`, always go).
pub fn strip_pasted_with(text: &str, quotes: Quotes) -> String {
    // Without the patterns nothing can be told apart, so everything counts as pasted.
    let r = &*PASTE;
    let s = text.replace('\0', "");
    let s = r.fence.replace_all(&s, "\n");
    let s = r.inline_code.replace_all(&s, SENT);
    let s = strip_json(&s, &r.json_key);
    let s = r.log_line.replace_all(&s, LOG_MARK);
    let s = r.quote_line.replace_all(&s, "");
    if quotes == Quotes::Keep {
        return s.into_owned();
    }
    let s = r.dquote.replace_all(&s, SENT);
    let s = r.squote.replace_all(&s, |c: &Captures| {
        let inner = c.get(2).map_or("", |m| m.as_str());
        if inner.split_whitespace().count() >= 3 {
            format!("{}{SENT}{}", &c[1], &c[3])
        } else {
            c[0].to_string()
        }
    });
    s.into_owned()
}

/// Replaces `{…}`/`[…]` spans that contain a `"key":` with the sentinel.
///
/// Brackets are paired in one pass and key positions looked up by binary search, so
/// hostile input (thousands of unbalanced brackets) stays near-linear.
fn strip_json(s: &str, key: &Regex) -> String {
    let keys: Vec<usize> = key.find_iter(s).map(|m| m.start()).collect();
    let newlines: Vec<usize> = s.match_indices('\n').map(|(i, _)| i).collect();
    let mut closes = std::collections::HashMap::new();
    let mut open = Vec::new();
    for (i, c) in s.char_indices() {
        match c {
            '{' | '[' => open.push(i),
            '}' | ']' => {
                if let Some(o) = open.pop() {
                    closes.insert(o, i + 1);
                }
            }
            _ => {}
        }
    }
    let mut out = String::with_capacity(s.len());
    let mut skip_to = 0;
    for (i, c) in s.char_indices() {
        if i < skip_to {
            continue;
        }
        if c == '{' || c == '[' {
            // Unbalanced: the span runs to the end of its line.
            let end = closes.get(&i).copied().unwrap_or_else(|| {
                let n = newlines.partition_point(|&p| p < i);
                newlines.get(n).copied().unwrap_or(s.len())
            });
            let k = keys.partition_point(|&p| p < i);
            if keys.get(k).is_some_and(|&p| p < end) {
                out.push_str(SENT);
                skip_to = end;
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// Splits a line into sentences, flagging those that end with a question mark.
pub fn split_sentences(line: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if !matches!(c, '.' | '!' | '?' | ';') {
            cur.push(c);
            continue;
        }
        // Inside a token ("Node.js", "15.2", "a@b.c", "x.com/?q=1") these do not end a sentence.
        if c != ';' && chars.peek().is_some_and(|n| !n.is_whitespace() && !matches!(n, '.' | '!' | '?' | ';')) {
            cur.push(c);
            continue;
        }
        let mut question = c == '?';
        while let Some(&n) = chars.peek() {
            if !matches!(n, '.' | '!' | '?' | ';') {
                break;
            }
            question |= n == '?';
            chars.next();
        }
        out.push((std::mem::take(&mut cur), question));
    }
    out.push((cur, false));
    out.retain(|(s, _)| !s.trim().is_empty());
    out
}

// NUL bytes are rejected by Postgres text columns, so they never leave this module.
fn strip_nul(s: &str) -> String {
    s.replace('\0', "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn embedded_text_is_a_bounded_opening() {
        assert_eq!(embedded_text("short text"), "short text");
        let long = "word ".repeat(500);
        let e = embedded_text(&long);
        assert!(e.len() <= EMBEDDED_CHARS && e.len() > EMBEDDED_CHARS - 10 && long.starts_with(e), "{}", e.len());
        assert!(!e.ends_with(' '));
        let one = "é".repeat(2000);
        assert_eq!(embedded_text(&one).chars().count(), EMBEDDED_CHARS);
    }

    #[test]
    fn passages_cover_a_long_text_after_its_opening_within_a_bound() {
        assert!(passages(&"word ".repeat(100)).is_empty(), "500 chars: the opening is enough");
        let text: String = (0..130).map(|i| format!("w{i:03} ")).collect(); // 650 chars
        let opening = embedded_text(&text).chars().count();
        let p = passages(&text);
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!(p[0].0, opening + 1, "starts after the opening's cut and its space");
        assert!(p.windows(2).all(|w| w[0].1 <= w[1].0));
        assert!(char_range(&text, p[0]).starts_with('w') && !char_range(&text, p[0]).ends_with(' '));
        assert_eq!(p.last().unwrap().1, text.chars().count() - 1, "up to the end (the trailing space is not read)");
        // A long text: four passages from the first window to the last.
        let long: String = (0..2000).map(|i| format!("w{i:04} ")).collect();
        let p = passages(&long);
        assert_eq!(p.len(), MAX_PASSAGES);
        assert_eq!(p[0].0, embedded_text(&long).chars().count() + 1);
        assert!(p[3].1 >= long.chars().count() - PASSAGE_CHARS);
        assert!(p.iter().all(|&(s, e)| e > s && e - s <= PASSAGE_CHARS));
        // Multi-byte text is cut at chars.
        let wide = "é ".repeat(700);
        assert!(passages(&wide).iter().all(|&r| char_range(&wide, r).chars().all(|c| c == 'é' || c == ' ')));
    }

    #[test]
    fn episode_text_joins_messages_with_roles() {
        let p = json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"}
        ]});
        assert_eq!(episode_text(&p), "user: hi\nassistant: hello");
    }

    #[test]
    fn episode_text_missing_role_is_unknown() {
        let p = json!({"messages": [{"content": "x"}, {"role": 5, "content": "y"}]});
        assert_eq!(episode_text(&p), "unknown: x\nunknown: y");
    }

    #[test]
    fn episode_text_skips_non_string_content() {
        let p = json!({"messages": [
            {"role": "user", "content": {"a": 1}},
            {"role": "user"},
            "not an object",
            {"role": "tool", "content": "ok"}
        ]});
        assert_eq!(episode_text(&p), "tool: ok");
    }

    #[test]
    fn episode_text_empty_messages_array_gives_empty() {
        let p = json!({"messages": [], "text": "ignored"});
        assert_eq!(episode_text(&p), "");
    }

    #[test]
    fn episode_text_falls_back_to_text_then_content() {
        assert_eq!(episode_text(&json!({"text": "t", "content": "c"})), "t");
        assert_eq!(episode_text(&json!({"content": "c"})), "c");
        assert_eq!(episode_text(&json!({"text": 3, "content": "c"})), "c");
        assert_eq!(episode_text(&json!({"messages": "nope", "text": "t"})), "t");
        assert_eq!(episode_text(&json!({"other": 1})), "");
        assert_eq!(episode_text(&json!("bare string")), "");
        assert_eq!(episode_text(&json!(null)), "");
    }

    #[test]
    fn episode_text_strips_nul() {
        assert_eq!(episode_text(&json!({"text": "a\u{0}b"})), "ab");
        let p = json!({"messages": [{"role": "u\u{0}ser", "content": "x\u{0}"}]});
        assert_eq!(episode_text(&p), "user: x");
    }

    #[test]
    fn user_statements_picks_user_and_human_roles() {
        let p = json!({"messages": [
            {"role": "User", "content": "I work at Globex."},
            {"role": "assistant", "content": "I work at OpenCorp."},
            {"role": "HUMAN", "content": "I live in Lisbon."},
            {"role": "system", "content": "be nice"},
            {"content": "no role"},
            {"role": "user", "content": 42}
        ]});
        assert_eq!(
            user_statements(&p, Voice::User),
            vec!["I work at Globex.".to_string(), "I live in Lisbon.".to_string()]
        );
    }

    #[test]
    fn user_statements_of_chat_messages_follow_the_voice() {
        let p = json!({"messages": [{"role": "user", "content": "hello"}]});
        assert_eq!(user_statements(&p, Voice::Agent), vec!["hello".to_string()]);
        assert!(user_statements(&p, Voice::Evidence).is_empty());
    }

    #[test]
    fn user_statements_plain_text_only_from_the_user() {
        let p = json!({"text": "I use Rust."});
        assert_eq!(user_statements(&p, Voice::User), vec!["I use Rust.".to_string()]);
        assert!(user_statements(&p, Voice::Agent).is_empty());
        assert!(user_statements(&p, Voice::Evidence).is_empty());
        let c = json!({"content": "I use Go."});
        assert_eq!(user_statements(&c, Voice::User), vec!["I use Go.".to_string()]);
    }

    #[test]
    fn user_statements_strips_nul_and_drops_blank() {
        let p = json!({"messages": [
            {"role": "user", "content": "a\u{0}b"},
            {"role": "user", "content": "  "},
            {"role": "user", "content": "\u{0}"}
        ]});
        assert_eq!(user_statements(&p, Voice::User), vec!["ab".to_string()]);
        assert!(user_statements(&json!({"other": 1}), Voice::User).is_empty());
    }

    fn marks(s: &str) -> usize {
        s.matches(PASTE_MARK).count()
    }

    #[test]
    fn paste_patterns_compile() {
        if let Err(e) = build_paste() {
            panic!("paste regexes must compile: {e}");
        }
    }

    #[test]
    fn strip_pasted_removes_fences() {
        let out = strip_pasted("before\n```rust\nsecret code\n```\nafter ~~~\nmore\n~~~ end");
        assert!(!out.contains("secret") && !out.contains("more"), "{out:?}");
        assert!(out.contains("before") && out.contains("after") && out.contains("end"));
        // Unterminated fence runs to the end.
        let out = strip_pasted("keep\n```\nI work at Acme\nstill code");
        assert_eq!(out.trim(), "keep");
    }

    #[test]
    fn strip_pasted_marks_inline_code_and_quotes() {
        let out = strip_pasted("run `cargo test` now");
        assert!(!out.contains("cargo") && marks(&out) == 1, "{out:?}");
        let out = strip_pasted("she said \"hi there\" and “bye now”");
        assert!(!out.contains("hi there") && !out.contains("bye") && marks(&out) == 2, "{out:?}");
        let out = strip_pasted("he goes 'I am the boss' daily");
        assert!(!out.contains("boss") && marks(&out) == 1, "{out:?}");
        // Short single-quoted terms and apostrophes are left alone.
        assert_eq!(strip_pasted("the 'platform' team isn't mine"), "the 'platform' team isn't mine");
        assert_eq!(strip_pasted("I'm here and it's 'fine' ok"), "I'm here and it's 'fine' ok");
    }

    #[test]
    fn strip_pasted_removes_json_spans() {
        let out = strip_pasted(r#"x {"a": {"b": [1, 2]}, "c": "d"} y"#);
        assert_eq!(out.split_whitespace().collect::<Vec<_>>(), vec!["x", "\u{1A}", "y"]);
        let out = strip_pasted("x [{'k': 1}] y");
        assert!(!out.contains('k') && marks(&out) == 1, "{out:?}");
        // Unbalanced: removed to the end of the line only.
        let out = strip_pasted("x {\"a\": 1, \"b\nnext line");
        assert!(out.contains("next line") && !out.contains("\"a\""), "{out:?}");
        // Prose brackets are kept.
        assert_eq!(strip_pasted("see [1] and {braces}"), "see [1] and {braces}");
    }

    #[test]
    fn strip_pasted_is_linear_on_hostile_brackets() {
        let hostile = format!("{}\"k\": 1", "[".repeat(200_000));
        let out = strip_pasted(&hostile);
        assert_eq!(marks(&out), 1);
    }

    #[test]
    fn strip_pasted_marks_log_lines_and_drops_quotes() {
        let out = strip_pasted("ok\n2026-03-02 10:00 boot\nERROR x\nwarn: y\n  at a.b(C.java:1)\n$ ls\n> quoted\nend");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines, vec!["ok", LOG_MARK, LOG_MARK, LOG_MARK, LOG_MARK, LOG_MARK, "end"]);
        assert_eq!(strip_pasted("a\u{0}b"), "ab");
    }

    #[test]
    fn split_sentences_keeps_internal_dots() {
        let got = split_sentences("I use Node.js. Is it ok?! Yes;sure... a@b.c x.com/?q=1 Yahoo!");
        let got: Vec<(&str, bool)> = got.iter().map(|(t, q)| (t.trim(), *q)).collect();
        assert_eq!(
            got,
            vec![
                ("I use Node.js", false),
                ("Is it ok", true),
                ("Yes", false),
                ("sure", false),
                ("a@b.c x.com/?q=1 Yahoo", false)
            ]
        );
        assert!(split_sentences("  ").is_empty());
    }
}
