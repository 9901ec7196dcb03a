//! Who said it: the one place that decides whose voice an episode's `source` carries.
//!
//! Every episode names a free-form `source`. Its voice decides what the text may become:
//!
//! - [`Voice::User`]: the user's own words. Only these create or supersede the user's facts and
//!   procedures (from plain text, or from the `user` messages of a chat payload).
//! - [`Voice::Agent`]: the assistant or the application. Its `user` chat messages are relayed
//!   user words, and its structured `memory_candidates` are accepted; its own plain text is
//!   never the user's.
//! - [`Voice::Evidence`]: documents, emails, web pages, tool and retrieval output, and **any
//!   source not named here or by the tenant**. Stored, searchable and summarised for its own
//!   questions, shown in bundles inside the fenced "quoted material" block, never the user's
//!   voice and never able to create or supersede a fact.
//!
//! A tenant names its own sources in its config (`source_trust`, e.g. `{"slack": "user"}`);
//! names are compared trimmed and lower-cased. The heuristic and LLM compilers, the context
//! bundle and the import paths all ask [`Trust::voice`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// The trust level of an episode source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Voice {
    /// The user speaking.
    User,
    /// The assistant or application speaking (relays user messages, supplies candidates).
    Agent,
    /// Third-party material: data about the world, never the user's voice.
    Evidence,
}

impl Voice {
    /// The name used in configs and memory metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            Voice::User => "user",
            Voice::Agent => "agent",
            Voice::Evidence => "evidence",
        }
    }

    /// Parses a config or metadata name.
    pub fn parse(s: &str) -> Option<Voice> {
        match s {
            "user" => Some(Voice::User),
            "agent" => Some(Voice::Agent),
            "evidence" => Some(Voice::Evidence),
            _ => None,
        }
    }

    /// Whether chat messages with role `user` in this voice's episodes are the user's words.
    pub fn relays_user(self) -> bool {
        matches!(self, Voice::User | Voice::Agent)
    }
}

/// Sources that are the user speaking, unless the tenant says otherwise (the Statewave spec's
/// first-user-message sources plus a few common names of a chat turn).
pub const USER_SOURCES: [&str; 10] = [
    "user",
    "chat",
    "human",
    "conversation",
    "message",
    "customer",
    "support-chat",
    "support_chat",
    "manual_input",
    "voice",
];
/// Sources that are the assistant or the application speaking (`memory-template`: episodes the
/// application records through `POST /v1/memory-templates/{id}/apply`; `mcp`: the MCP
/// `remember` tool's default, the user's words relayed by the agent).
pub const AGENT_SOURCES: [&str; 9] =
    ["assistant", "agent", "bot", "ai", "system", "support", "staff", "memory-template", "mcp"];

/// Longest source name a tenant can configure (the episode column's limit).
pub const MAX_SOURCE_CHARS: usize = 256;
/// Most sources a tenant can name.
pub const MAX_TENANT_SOURCES: usize = 64;

/// The voices of sources for one tenant: the built-in names plus the tenant's own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trust {
    /// The tenant's names (trimmed, lower-cased), which win over the built-in ones.
    overrides: BTreeMap<String, Voice>,
}

impl Trust {
    /// The built-in names only.
    pub fn builtin() -> Trust {
        Trust::default()
    }

    /// The tenant's `source_trust` map read from its config document (entries that are not a
    /// known voice are ignored; the config's validation refuses them before they are stored).
    pub fn from_config(config: &Value) -> Trust {
        let overrides = config
            .get("source_trust")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((normalise(k), Voice::parse(v.as_str()?)?)))
                    .filter(|(k, _)| !k.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        Trust { overrides }
    }

    /// The voice of `source`. Unknown sources are evidence.
    pub fn voice(&self, source: &str) -> Voice {
        let s = normalise(source);
        if let Some(v) = self.overrides.get(&s) {
            return *v;
        }
        if USER_SOURCES.contains(&s.as_str()) {
            Voice::User
        } else if AGENT_SOURCES.contains(&s.as_str()) {
            Voice::Agent
        } else {
            Voice::Evidence
        }
    }

    /// The tenant's own names (empty for the built-ins), for receipts and replays.
    pub fn overrides(&self) -> &BTreeMap<String, Voice> {
        &self.overrides
    }

    /// The tenant's names as a JSON object (`{}` when none), as receipts record them.
    pub fn to_json(&self) -> Value {
        Value::Object(self.overrides.iter().map(|(k, v)| (k.clone(), Value::String(v.as_str().into()))).collect())
    }
}

fn normalise(source: &str) -> String {
    source.trim().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn built_in_sources_and_unknown_ones() {
        let t = Trust::builtin();
        for s in ["chat", "user", " Chat ", "support-chat", "manual_input"] {
            assert_eq!(t.voice(s), Voice::User, "{s}");
        }
        for s in ["assistant", "agent", "SYSTEM", "bot"] {
            assert_eq!(t.voice(s), Voice::Agent, "{s}");
        }
        for s in ["email", "document", "web", "tool", "tool_result", "function", "retrieval", "rag", "slack", "", "x"] {
            assert_eq!(t.voice(s), Voice::Evidence, "{s}");
        }
    }

    #[test]
    fn tenant_names_win_and_bad_entries_are_ignored() {
        let t =
            Trust::from_config(&json!({"source_trust": {"Slack": "user", "chat": "evidence", "x": "boss", "y": 3}}));
        assert_eq!(t.voice("slack"), Voice::User);
        assert_eq!(t.voice("chat"), Voice::Evidence);
        assert_eq!(t.voice("x"), Voice::Evidence);
        assert_eq!(t.overrides().len(), 2);
        assert_eq!(t.to_json(), json!({"chat": "evidence", "slack": "user"}));
        assert_eq!(Trust::from_config(&json!({})), Trust::builtin());
    }

    #[test]
    fn only_user_and_agent_relay_user_messages() {
        assert!(Voice::User.relays_user());
        assert!(Voice::Agent.relays_user());
        assert!(!Voice::Evidence.relays_user());
    }
}
