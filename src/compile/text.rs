//! Plain-text views of an episode payload.
//!
//! Episodes arrive as free-form JSON; compilation only needs two views of them:
//! the whole conversation as text, and the statements the user made themselves.

use serde_json::Value;

/// Sources whose plain `text`/`content` is not the user speaking.
const NON_USER_SOURCES: [&str; 6] = ["assistant", "agent", "tool", "system", "bot", "ai"];

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

/// Returns the statements the user made, one per message, for fact extraction.
pub fn user_statements(payload: &Value, source: &str) -> Vec<String> {
    let statements: Vec<String> = match messages(payload) {
        Some(msgs) => msgs
            .iter()
            .filter(|m| is_user_role(m.get("role").and_then(Value::as_str)))
            .filter_map(|m| m.get("content").and_then(Value::as_str))
            .map(strip_nul)
            .collect(),
        None => {
            let source = source.trim().to_lowercase();
            if NON_USER_SOURCES.contains(&source.as_str()) {
                Vec::new()
            } else {
                plain_text(payload).map(strip_nul).into_iter().collect()
            }
        }
    };
    // Blank statements carry nothing to extract; dropping them keeps callers simple.
    statements.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

fn messages(payload: &Value) -> Option<&Vec<Value>> {
    payload.get("messages").and_then(Value::as_array)
}

fn plain_text(payload: &Value) -> Option<&str> {
    payload
        .get("text")
        .and_then(Value::as_str)
        .or_else(|| payload.get("content").and_then(Value::as_str))
}

fn is_user_role(role: Option<&str>) -> bool {
    role.is_some_and(|r| {
        let r = r.trim();
        r.eq_ignore_ascii_case("user") || r.eq_ignore_ascii_case("human")
    })
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
            user_statements(&p, "chat"),
            vec!["I work at Globex.".to_string(), "I live in Lisbon.".to_string()]
        );
    }

    #[test]
    fn user_statements_messages_ignore_source() {
        let p = json!({"messages": [{"role": "user", "content": "hello"}]});
        assert_eq!(user_statements(&p, "assistant"), vec!["hello".to_string()]);
    }

    #[test]
    fn user_statements_plain_text_depends_on_source() {
        let p = json!({"text": "I use Rust."});
        assert_eq!(user_statements(&p, "chat"), vec!["I use Rust.".to_string()]);
        assert_eq!(user_statements(&p, ""), vec!["I use Rust.".to_string()]);
        for src in ["assistant", "Agent", "TOOL", "system", "bot", "AI", " ai "] {
            assert!(user_statements(&p, src).is_empty(), "source {src}");
        }
        let c = json!({"content": "I use Go."});
        assert_eq!(user_statements(&c, "user"), vec!["I use Go.".to_string()]);
    }

    #[test]
    fn user_statements_strips_nul_and_drops_blank() {
        let p = json!({"messages": [
            {"role": "user", "content": "a\u{0}b"},
            {"role": "user", "content": "  "},
            {"role": "user", "content": "\u{0}"}
        ]});
        assert_eq!(user_statements(&p, "chat"), vec!["ab".to_string()]);
        assert!(user_statements(&json!({"other": 1}), "chat").is_empty());
    }
}
