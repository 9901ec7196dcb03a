//! `mnemo eval`: the retrieval recall protocol run on a user's own conversations.
//!
//! Each conversation becomes one subject, each turn one episode (in order, in batches); the
//! subject is compiled the way a client does (synchronous calls until `has_more` is false);
//! then every question is asked once per budget as a context call. A question is a hit when
//! every evidence turn is in the bundle: an included episode, or a source of an included fact,
//! procedure or summary. Questions may also name stale turns (an earlier value of what they
//! ask): a bundle showing a stale turn and no turn of the current value is counted
//! "stale-only", the agent then sees only the old value. No LLM, no judge: the figures say what
//! the agent was shown, not what it answered.
//!
//! Datasets: [`formats`] reads mnemo's own JSONL and the LoCoMo and BEAM files; [`run`] talks
//! to a server over HTTP; [`report`] tallies and writes text, JSON and a self-contained HTML page.

pub mod formats;
pub mod report;
pub mod run;

use chrono::{DateTime, Utc};

/// One turn of a conversation, as an episode will carry it.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The dataset's id of the turn (what questions name as evidence).
    pub id: String,
    /// `user`, `assistant`, or a speaker's name (LoCoMo).
    pub role: String,
    pub content: String,
    pub session: Option<String>,
    pub at: Option<DateTime<Utc>>,
}

/// One scored question.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub text: String,
    pub category: String,
    /// Turns that must all be in the bundle.
    pub evidence: Vec<String>,
    /// Turns holding an earlier value of what the question asks (may be empty).
    pub stale: Vec<String>,
    /// Turns holding the current value, when the question names stale ones: a bundle showing a
    /// stale turn and none of these is "stale-only" (by default the evidence that is not stale).
    pub current: Vec<String>,
}

impl Question {
    /// A question whose current turns are its evidence that is not stale.
    pub fn new(text: String, category: String, evidence: Vec<String>, stale: Vec<String>) -> Question {
        let current = evidence.iter().filter(|e| !stale.contains(e)).cloned().collect();
        Question { text, category, evidence, stale, current }
    }
}

/// One conversation: its turns in order and its questions.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    pub id: String,
    pub turns: Vec<Turn>,
    pub questions: Vec<Question>,
}
