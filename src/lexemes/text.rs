//! An episode's searchable text as `mnemo_episode_text(payload)` builds it, in
//! process: the `content`, `name` and `speaker` of every message, each list rendered as the JSON
//! text of a `jsonb` array, then the payload's own `text`, `content`, `speaker` and `author`,
//! joined by spaces and cut at 250,000 characters.
//!
//! Only the shapes whose rendering is certain are built: `messages` absent or an array of
//! objects, and every value read a string (a message's or the payload's `text`, `content`,
//! `speaker`, `author` may also be absent or null for the payload's own). Anything else (an
//! array of content parts, a number, a `messages` object that a lax JSON path would wrap) is
//! left to Postgres (None).

use serde_json::{Map, Value};

/// Postgres cuts the text at this many characters (`left(…, 250000)`).
const MAX_CHARS: usize = 250_000;

/// Appends `s` as `jsonb`'s text output writes a string: quoted, with `"`, `\` and control
/// characters escaped (`escape_json`).
fn push_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `jsonb_path_query_array(payload, '$.messages[*].<key>')::text` for string values.
fn push_message_values(out: &mut String, messages: Option<&Vec<Value>>, key: &str) -> Option<()> {
    out.push('[');
    let mut first = true;
    for m in messages.into_iter().flatten() {
        match m.as_object()?.get(key) {
            None => {}
            Some(Value::String(s)) => {
                if !first {
                    out.push_str(", ");
                }
                first = false;
                push_json_string(out, s);
            }
            Some(_) => return None,
        }
    }
    out.push(']');
    Some(())
}

/// `coalesce(payload->>'<key>', '')` for a string, null or absent value.
fn push_field(out: &mut String, payload: &Map<String, Value>, key: &str) -> Option<()> {
    match payload.get(key) {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => out.push_str(s),
        Some(_) => return None,
    }
    Some(())
}

/// The text `mnemo_episode_text(payload)` makes, or None when its rendering is not certain here.
pub(crate) fn episode_text(payload: &Map<String, Value>) -> Option<String> {
    let messages = match payload.get("messages") {
        None => None,
        Some(Value::Array(items)) => Some(items),
        Some(_) => return None,
    };
    let mut out = String::new();
    push_message_values(&mut out, messages, "content")?;
    out.push(' ');
    push_message_values(&mut out, messages, "name")?;
    out.push(' ');
    push_message_values(&mut out, messages, "speaker")?;
    for key in ["text", "content", "speaker", "author"] {
        out.push(' ');
        push_field(&mut out, payload, key)?;
    }
    // Cutting would need Postgres' character count; a text that long is left to it.
    (out.len() <= MAX_CHARS || out.chars().count() <= MAX_CHARS).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(v: Value) -> Option<String> {
        episode_text(v.as_object().unwrap())
    }

    #[test]
    fn messages_render_as_jsonb_arrays_then_the_payload_fields() {
        let got = text(json!({
            "messages": [
                {"role": "user", "content": "Say \"hi\"\n\tnow\\", "name": "Ann"},
                {"role": "assistant", "content": "ok\u{1}"}
            ],
            "text": "plain", "author": null
        }));
        assert_eq!(got.as_deref(), Some(r#"["Say \"hi\"\n\tnow\\", "ok\u0001"] ["Ann"] [] plain   "#));
        assert_eq!(text(json!({})).as_deref(), Some("[] [] []    "));
    }

    #[test]
    fn shapes_it_cannot_render_for_sure_are_left_to_postgres() {
        assert_eq!(text(json!({"messages": {"content": "x"}})), None);
        assert_eq!(text(json!({"messages": ["x"]})), None);
        assert_eq!(text(json!({"messages": [{"content": [{"type": "text", "text": "x"}]}]})), None);
        assert_eq!(text(json!({"messages": [{"content": 5}]})), None);
        assert_eq!(text(json!({"text": {"a": 1}})), None);
        assert_eq!(text(json!({"text": "x".repeat(MAX_CHARS)})), None);
        assert!(text(json!({"text": "é".repeat(MAX_CHARS / 2)})).is_some());
    }
}
