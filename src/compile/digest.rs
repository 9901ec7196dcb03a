//! A session's running digest: what the user brought up in it, one short line a message, in
//! time order, so a task about many moments (a recap, the order of events, progress over
//! time) reads a whole session in a few hundred tokens instead of a few of its long turns.
//!
//! Extractive and deterministic: each line is the opening sentence of one of the user's own
//! messages, sanitised as summaries are (pasted material and instructions removed). A session
//! with more messages than [`MAX_LINES`] keeps lines spread evenly from first to last. The
//! digest is rewritten as the session grows ([`due`]), the new version superseding the old,
//! so a receipt replays the digest it showed.

use chrono::{DateTime, NaiveDate, Utc};
use uuid::Uuid;

use crate::model::voice::Voice;

/// Fewest user messages a session needs before it gets a digest: below this its turns are few
/// enough to stand for themselves.
pub const MIN_TURNS: usize = 4;
/// Most lines one digest holds (about 25 tokens each, so a digest stays under ~1,000 tokens).
pub const MAX_LINES: usize = 40;
/// Most chars of one line: the opening of what the user said, cut at a word.
pub const LINE_CHARS: usize = 48;
/// A first sentence shorter than this ("Hi!", "Thanks.") takes the next one along.
const SHORT_SENTENCE: usize = 25;
/// The `metadata.digest` of a session digest.
pub const SESSION: &str = "session";

/// Whether a memory's metadata marks it a session's digest.
pub fn is_digest(metadata: &serde_json::Value) -> bool {
    metadata.get("digest").and_then(serde_json::Value::as_str) == Some(SESSION)
}

/// One of the user's messages in a session.
#[derive(Debug, Clone)]
pub struct Turn {
    pub episode_id: Uuid,
    pub at: DateTime<Utc>,
    /// The line it contributes ([`turn_line`]).
    pub line: String,
}

/// A digest ready to be written.
#[derive(Debug, Clone, PartialEq)]
pub struct Digest {
    pub content: String,
    /// The first 200 chars of the content.
    pub summary: String,
    /// The messages whose lines it shows, in time order.
    pub sources: Vec<Uuid>,
    /// When its last message was said.
    pub last_at: DateTime<Utc>,
    /// How many of the user's messages it stands for (shown or not).
    pub turns: usize,
}

/// The line a message gives its session's digest, from its own summary (already sanitised:
/// pasted material and instructions out, [`super::pipeline::sanitized_opening`]): the opening
/// sentence of the user's words (a short one with the next), at most [`LINE_CHARS`]. None for a
/// message that is not the user's (`chat`: a chat's lines by role; else plain text, the user's
/// only when its source is the user's voice) or says nothing but pasted material.
pub fn turn_line(summary: &str, chat: bool, voice: Voice) -> Option<String> {
    let body = if chat {
        if !voice.relays_user() {
            return None;
        }
        summary.lines().find_map(|l| l.strip_prefix("user: ").or_else(|| l.strip_prefix("human: ")))?
    } else if voice == Voice::User {
        summary
    } else {
        return None;
    };
    let body = body.replace(PASTE_MARK, " ").split_whitespace().collect::<Vec<_>>().join(" ");
    let line = clip(opening_sentences(&body, SHORT_SENTENCE), LINE_CHARS);
    (!line.is_empty()).then_some(line)
}

/// How a summary shows pasted material (`compile::pipeline::sanitized_text`).
const PASTE_MARK: &str = "[pasted]";

/// The start of `body` through the first sentence end (`.`, `!`, `?`, `;` before a space) at
/// or past `min` chars, without that end's `.` or `;`; all of it when no such end comes.
fn opening_sentences(body: &str, min: usize) -> &str {
    let body = body.trim();
    let mut it = body.char_indices().peekable();
    let mut count = 0;
    while let Some((i, c)) = it.next() {
        count += 1;
        let ends = matches!(c, '.' | '!' | '?' | ';') && it.peek().is_some_and(|(_, n)| n.is_whitespace());
        if ends && count >= min {
            let keep = if matches!(c, '!' | '?') { i + c.len_utf8() } else { i };
            return body[..keep].trim_end();
        }
    }
    body.trim_end_matches(['.', ';'])
}

/// `text` cut to at most `chars` chars at the last space before the bound, marked with "…".
fn clip(text: &str, chars: usize) -> String {
    let text = text.trim();
    let Some((end, _)) = text.char_indices().nth(chars) else { return text.to_string() };
    let cut = text[..end].rfind(' ').filter(|&i| i > 0).unwrap_or(end);
    format!("{}…", text[..cut].trim_end_matches([',', ';', ':', ' ']))
}

/// Whether a session whose digest stands for `covered` of the user's messages (0: no digest)
/// should get a new one now that it has `total`: at [`MIN_TURNS`], then each time it has grown by
/// a quarter (at least [`MIN_TURNS`] messages), so a session told one message per compile costs a
/// number of versions that grows with the logarithm of its length, not with the length.
pub fn due(covered: usize, total: usize) -> bool {
    total >= covered + (covered / 4).max(MIN_TURNS)
}

/// The digest of a session from its user messages in time order; None below [`MIN_TURNS`].
/// Lines are grouped under the day they were said. The session's id is not shown: it is the
/// caller's string, and a bundle shows only what the user said.
pub fn session_digest(turns: &[Turn]) -> Option<Digest> {
    let (first, last) = (turns.first()?, turns.last()?);
    if turns.len() < MIN_TURNS {
        return None;
    }
    let shown = spread(turns.len(), MAX_LINES);
    let mut content = format!(
        "Session of {} to {}, what the user brought up ({} messages):",
        first.at.format("%Y-%m-%d"),
        last.at.format("%Y-%m-%d"),
        turns.len()
    );
    let mut day: Option<NaiveDate> = None;
    let mut sources = Vec::with_capacity(shown.len());
    for i in shown {
        let t = &turns[i];
        let d = t.at.date_naive();
        if day != Some(d) {
            content.push_str(&format!(" {}:", d.format("%Y-%m-%d")));
            day = Some(d);
        } else {
            content.push(';');
        }
        content.push(' ');
        content.push_str(&t.line);
        sources.push(t.episode_id);
    }
    let summary = content.chars().take(200).collect::<String>().trim_end().to_string();
    Some(Digest { content, summary, sources, last_at: last.at, turns: turns.len() })
}

/// Indices of `n` items keeping at most `max`, spread evenly, the first and last among them.
fn spread(n: usize, max: usize) -> Vec<usize> {
    if n <= max || max < 2 {
        return (0..n.min(max)).collect();
    }
    (0..max).map(|k| k * (n - 1) / (max - 1)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(day: u32, minute: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2024, 3, day, 9, minute, 0).unwrap()
    }

    fn turn(n: u128, day: u32, line: &str) -> Turn {
        Turn { episode_id: Uuid::from_u128(n), at: at(day, n as u32 % 60), line: line.to_string() }
    }

    #[test]
    fn a_line_is_the_opening_of_the_users_words() {
        let line = |summary: &str| turn_line(summary, true, Voice::User);
        assert_eq!(
            line("user: I'm planning a trip to Kyoto. Which area?").as_deref(),
            Some("I'm planning a trip to Kyoto")
        );
        assert_eq!(
            line("user: Can you check Node.js 20.1 for CI? It fails.").as_deref(),
            Some("Can you check Node.js 20.1 for CI?")
        );
        // A greeting takes the next sentence along.
        assert_eq!(
            line("user: Thanks! Now let's add rate limiting.").as_deref(),
            Some("Thanks! Now let's add rate limiting")
        );
        // Long openings are cut at a word.
        let long = format!("user: I want {} done", "very ".repeat(40));
        let cut = line(&long).unwrap();
        assert!(cut.ends_with('…') && cut.chars().count() <= LINE_CHARS + 1, "{cut}");
        // A turn of two messages: the user's.
        assert_eq!(line("assistant: Hello.\nuser: We moved the launch.").as_deref(), Some("We moved the launch"));
        // Plain text from the user.
        assert_eq!(turn_line("We moved the launch.", false, Voice::User).as_deref(), Some("We moved the launch"));
    }

    #[test]
    fn only_the_users_own_words_make_lines() {
        assert_eq!(turn_line("assistant: Here is a plan for Kyoto.", true, Voice::User), None);
        assert_eq!(turn_line("tool: status: ok", true, Voice::User), None);
        assert_eq!(turn_line("user: I work at Globex.", true, Voice::Evidence), None);
        assert_eq!(turn_line("Invoice attached, pay today.", false, Voice::Evidence), None);
        assert_eq!(turn_line("Invoice attached, pay today.", false, Voice::Agent), None);
        // A message that was only pasted material says nothing; the marker never shows.
        assert_eq!(turn_line("user: [pasted]", true, Voice::User), None);
        let line = turn_line("user: Here is my config [pasted] and it fails on start.", true, Voice::User).unwrap();
        assert!(!line.contains("[pasted]"), "{line}");
    }

    #[test]
    fn a_digest_reads_the_session_in_order_under_its_days() {
        assert_eq!(session_digest(&[turn(1, 15, "a"), turn(2, 15, "b"), turn(3, 16, "c")]), None);
        let turns =
            [turn(1, 15, "set up Flask"), turn(2, 15, "add login"), turn(3, 16, "fix CSRF"), turn(4, 18, "deploy")];
        let d = session_digest(&turns).unwrap();
        assert_eq!(
            d.content,
            "Session of 2024-03-15 to 2024-03-18, what the user brought up (4 messages): \
             2024-03-15: set up Flask; add login 2024-03-16: fix CSRF 2024-03-18: deploy"
        );
        assert_eq!(d.sources, turns.iter().map(|t| t.episode_id).collect::<Vec<_>>());
        assert_eq!((d.turns, d.last_at), (4, turns[3].at));
    }

    #[test]
    fn a_long_session_keeps_lines_spread_from_first_to_last() {
        let turns: Vec<Turn> = (0..100).map(|i| turn(i, 1 + (i / 10) as u32, &format!("m{i}"))).collect();
        let d = session_digest(&turns).unwrap();
        assert_eq!(d.sources.len(), MAX_LINES);
        assert_eq!(d.sources.first(), Some(&Uuid::from_u128(0)));
        assert_eq!(d.sources.last(), Some(&Uuid::from_u128(99)));
        assert_eq!(d.turns, 100);
        assert_eq!(spread(5, 3), vec![0, 2, 4]);
        assert_eq!(spread(3, 40), vec![0, 1, 2]);
    }

    #[test]
    fn a_digest_is_rewritten_as_the_session_grows_by_a_quarter() {
        assert!(!due(0, 3));
        assert!(due(0, 4));
        assert!(!due(4, 7));
        assert!(due(4, 8));
        assert!(!due(40, 49));
        assert!(due(40, 50));
        // A session told one message per compile: versions grow with the log of its length.
        let (mut covered, mut versions) = (0, 0);
        for total in 1..=1000 {
            if due(covered, total) {
                covered = total;
                versions += 1;
            }
        }
        assert!(versions < 30, "{versions}");
    }
}
