//! Support sessions: a subject's episodes grouped by `session_id` with their resolutions, and
//! what is derived from them (SLA figures, the health score, the handoff brief). Pure code:
//! the services load the rows and pass `now`, so every figure is reproducible in tests.

pub mod handoff;
pub mod health;
pub mod sla;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use crate::compile::text::{episode_text, message_roles};

/// Sources whose episodes are the customer writing.
pub const CUSTOMER_SOURCES: &[&str] = &["user", "chat", "support-chat", "support_chat", "customer", "manual_input"];
/// Sources whose episodes are someone answering the customer.
pub const RESPONDER_SOURCES: &[&str] = &["assistant", "agent", "system", "tool", "support", "staff"];
const CUSTOMER_ROLES: &[&str] = &["user", "human", "customer"];
const RESPONDER_ROLES: &[&str] = &["assistant", "agent", "support", "staff", "ai", "bot"];

/// One episode as the session logic sees it.
#[derive(Debug, Clone)]
pub struct Turn {
    pub id: Uuid,
    pub session_id: Option<String>,
    pub occurred_at: DateTime<Utc>,
    /// The whole episode as text (`role: content` lines for chats).
    pub text: String,
    /// What the customer wrote in it (empty if nothing).
    pub asked: String,
    /// What was answered in it (empty if nothing).
    pub answered: String,
    /// The customer writes in this episode.
    pub asks: bool,
    /// Someone answers the customer in this episode (after the customer, when both appear).
    pub answers: bool,
    /// For evidence (an email, a document, tool output): its source label. Such a turn never
    /// states the issue or a step, and the brief shows it fenced ([`crate::model::voice`]).
    pub quoted: Option<String>,
}

impl Turn {
    /// Classifies an episode: chat roles when the payload has messages, else its source.
    pub fn from_episode(
        id: Uuid,
        session_id: Option<String>,
        source: &str,
        payload: &Value,
        occurred_at: DateTime<Utc>,
    ) -> Self {
        let roles = message_roles(payload);
        let text = episode_text(payload);
        if roles.is_empty() {
            let source = source.trim().to_lowercase();
            // Without chat roles the source tells who speaks.
            let asks = CUSTOMER_SOURCES.contains(&source.as_str());
            let answers = RESPONDER_SOURCES.contains(&source.as_str());
            let asked = if asks { text.clone() } else { String::new() };
            let answered = if answers { text.clone() } else { String::new() };
            return Turn { id, session_id, occurred_at, text, asked, answered, asks, answers, quoted: None };
        }
        let contents = |wanted: &[&str]| -> String {
            payload
                .get("messages")
                .and_then(Value::as_array)
                .map(|msgs| {
                    msgs.iter()
                        .filter(|m| {
                            m.get("role")
                                .and_then(Value::as_str)
                                .is_some_and(|r| wanted.contains(&r.trim().to_lowercase().as_str()))
                        })
                        .filter_map(|m| m.get("content").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default()
        };
        let first_ask = roles.iter().position(|r| CUSTOMER_ROLES.contains(&r.as_str()));
        let answers = roles
            .iter()
            .enumerate()
            .any(|(i, r)| RESPONDER_ROLES.contains(&r.as_str()) && first_ask.is_none_or(|a| i > a));
        Turn {
            id,
            session_id,
            occurred_at,
            text,
            asked: contents(CUSTOMER_ROLES),
            answered: contents(RESPONDER_ROLES),
            asks: first_ask.is_some(),
            answers,
            quoted: None,
        }
    }
}

/// A session's resolution row.
#[derive(Debug, Clone)]
pub struct ResolutionView {
    pub session_id: String,
    pub status: String,
    pub summary: Option<String>,
    pub resolved_at: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
}

/// One session: its turns in time order and its resolution, if any.
#[derive(Debug, Clone)]
pub struct Session {
    pub id: String,
    pub turns: Vec<Turn>,
    pub resolution: Option<ResolutionView>,
}

impl Session {
    /// Resolved sessions are closed; open and unresolved ones still need someone.
    pub fn is_resolved(&self) -> bool {
        self.resolution.as_ref().is_some_and(|r| r.status == "resolved")
    }

    /// When the session last saw activity (its last turn, else its resolution's update).
    pub fn last_activity(&self) -> Option<DateTime<Utc>> {
        self.turns.last().map(|t| t.occurred_at).or_else(|| self.resolution.as_ref().map(|r| r.updated_at))
    }

    fn first_activity(&self) -> Option<DateTime<Utc>> {
        self.turns.first().map(|t| t.occurred_at).or_else(|| self.resolution.as_ref().map(|r| r.updated_at))
    }

    /// The customer's words in this session, one string.
    pub fn customer_text(&self) -> String {
        self.turns.iter().filter(|t| t.asks).map(|t| t.asked.as_str()).collect::<Vec<_>>().join("\n")
    }
}

/// Groups turns (any order) into sessions with their resolutions, ordered by first activity,
/// then id. Turns without a session id belong to no session.
pub fn group(mut turns: Vec<Turn>, resolutions: Vec<ResolutionView>) -> Vec<Session> {
    turns.sort_by(|a, b| a.occurred_at.cmp(&b.occurred_at).then(a.id.cmp(&b.id)));
    let mut by_id: BTreeMap<String, Session> = BTreeMap::new();
    for t in turns {
        let Some(sid) = t.session_id.clone() else { continue };
        by_id
            .entry(sid.clone())
            .or_insert_with(|| Session { id: sid, turns: Vec::new(), resolution: None })
            .turns
            .push(t);
    }
    for r in resolutions {
        let sid = r.session_id.clone();
        by_id
            .entry(sid.clone())
            .or_insert_with(|| Session { id: sid, turns: Vec::new(), resolution: None })
            .resolution = Some(r);
    }
    let mut sessions: Vec<Session> = by_id.into_values().collect();
    sessions.sort_by(|a, b| a.first_activity().cmp(&b.first_activity()).then(a.id.cmp(&b.id)));
    sessions
}

const STOPWORDS: &[&str] = &[
    "about",
    "after",
    "again",
    "also",
    "been",
    "before",
    "being",
    "could",
    "does",
    "doing",
    "from",
    "have",
    "having",
    "here",
    "into",
    "just",
    "like",
    "more",
    "much",
    "need",
    "only",
    "other",
    "over",
    "please",
    "really",
    "same",
    "should",
    "since",
    "some",
    "still",
    "than",
    "thank",
    "thanks",
    "that",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "very",
    "want",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "will",
    "with",
    "would",
    "your",
    "yours",
    "assistant",
    "user",
    "hello",
];

/// Content words of a text (lower-case, 4+ letters, not stopwords, plural `s` trimmed).
pub fn content_words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 4 && w.chars().all(char::is_alphabetic) && !STOPWORDS.contains(&w.as_str()))
        .map(|w| if w.ends_with('s') && !w.ends_with("ss") { w[..w.len() - 1].to_string() } else { w })
        .collect()
}

/// Whether two texts are about the same issue: at least three shared content words that make up
/// at least 30% of the shorter text's words.
pub fn same_issue(a: &str, b: &str) -> bool {
    let (wa, wb) = (content_words(a), content_words(b));
    let shared = wa.intersection(&wb).count();
    let smaller = wa.len().min(wb.len());
    shared >= 3 && smaller > 0 && shared * 10 >= smaller * 3
}

/// Shortens a line to `max` characters on a char boundary, marking the cut.
pub fn clip(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut s: String = one_line.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;
    use chrono::TimeZone;
    use serde_json::json;

    pub fn at(day: u32, hour: u32, min: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, day, hour, min, 0).single().unwrap_or_default()
    }

    pub fn turn(n: u128, session: &str, source: &str, text: &str, when: DateTime<Utc>) -> Turn {
        Turn::from_episode(Uuid::from_u128(n), Some(session.into()), source, &json!({"text": text}), when)
    }

    pub fn resolution(session: &str, status: &str, resolved_at: Option<DateTime<Utc>>) -> ResolutionView {
        ResolutionView {
            session_id: session.into(),
            status: status.into(),
            summary: Some(format!("{session} summary")),
            resolved_at,
            updated_at: resolved_at.unwrap_or(at(1, 0, 0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;
    use serde_json::json;

    #[test]
    fn turns_are_classified_by_roles_then_source() {
        let t = |source: &str, payload: Value| Turn::from_episode(Uuid::nil(), None, source, &payload, at(1, 0, 0));
        let pair =
            t("chat", json!({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}));
        assert!(pair.asks && pair.answers);
        let reply_only = t("chat", json!({"messages": [{"role": "assistant", "content": "yo"}]}));
        assert!(!reply_only.asks && reply_only.answers);
        assert!(t("customer", json!({"text": "help"})).asks);
        assert!(t("support", json!({"text": "on it"})).answers);
        let other = t("webhook", json!({"text": "x"}));
        assert!(!other.asks && !other.answers);
    }

    #[test]
    fn grouping_orders_sessions_and_attaches_resolutions() {
        let turns = vec![
            turn(2, "b", "user", "second", at(2, 9, 0)),
            turn(1, "a", "user", "first", at(1, 9, 0)),
            Turn::from_episode(Uuid::from_u128(3), None, "user", &json!({"text": "loose"}), at(1, 8, 0)),
        ];
        let sessions =
            group(turns, vec![resolution("a", "resolved", Some(at(1, 10, 0))), resolution("z", "open", None)]);
        let ids: Vec<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["z", "a", "b"], "z's only activity is its resolution on day 1 at midnight");
        assert!(sessions[1].is_resolved());
        assert!(!sessions[2].is_resolved());
    }

    #[test]
    fn issues_match_on_shared_content_words() {
        assert!(same_issue("My invoice payment failed with the card", "Payment failed again on my invoice card"));
        assert!(!same_issue("My invoice payment failed", "How do I change my avatar picture?"));
        assert!(!same_issue("", "anything"));
    }

    #[test]
    fn clip_keeps_short_lines_and_marks_cuts() {
        assert_eq!(clip("a  b\nc", 10), "a b c");
        assert_eq!(clip("abcdefghij", 5), "abcd…");
    }
}
