//! The answer the model is asked for, as a JSON schema, and its tolerant parse.
//!
//! Parsing keeps what is well-formed and drops the rest item by item: a reply that is not an
//! `{"items": [...]}` object at all is malformed (the batch is retried, then split); a single
//! bad item only loses that item.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::model::memory::MemoryKind;

/// The kinds a model may propose.
pub const KINDS: [MemoryKind; 3] = [MemoryKind::ProfileFact, MemoryKind::Procedure, MemoryKind::EpisodeSummary];

/// The JSON schema of an answer (strict mode: every field present, optional ones nullable).
pub fn answer_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["items"],
        "properties": {"items": {"type": "array", "items": {
            "type": "object",
            "additionalProperties": false,
            "required": ["kind", "content", "summary", "confidence", "episode_index", "claim", "updates"],
            "properties": {
                "kind": {"type": "string", "enum": KINDS},
                "content": {"type": "string"},
                "summary": {"type": "string"},
                "confidence": {"type": "number"},
                "episode_index": {"type": "integer"},
                "claim": {"anyOf": [{"type": "null"}, {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["key", "value"],
                    "properties": {"key": {"type": "string"}, "value": {"type": "string"}}
                }]},
                "updates": {"anyOf": [{"type": "null"}, {"type": "string"}]}
            }
        }}}
    })
}

/// One proposed memory, as the model wrote it (nothing here is trusted yet).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Item {
    /// Text, not a [`MemoryKind`]: an unknown kind drops the item and is counted
    /// (`validate::drafts_for`), where a failed parse would lose it uncounted.
    pub kind: String,
    pub content: String,
    #[serde(default)]
    pub summary: Option<String>,
    #[serde(default)]
    pub confidence: Option<f64>,
    pub episode_index: usize,
    #[serde(default)]
    pub claim: Option<ItemClaim>,
    #[serde(default)]
    pub updates: Option<String>,
}

/// A proposed claim.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ItemClaim {
    pub key: String,
    pub value: String,
}

/// The items of a reply; Err when the reply is not an answer object at all.
pub fn parse_answer(content: &str) -> Result<Vec<Item>, String> {
    let body = unfence(content);
    let value: Value = serde_json::from_str(body).map_err(|_| "the model's answer is not JSON".to_string())?;
    let items = value.get("items").and_then(Value::as_array).ok_or("the model's answer has no items array")?;
    Ok(items.iter().filter_map(|i| serde_json::from_value::<Item>(i.clone()).ok()).collect())
}

/// Servers without a JSON mode often wrap the object in a code fence or a sentence.
fn unfence(content: &str) -> &str {
    let t = content.trim();
    match (t.find('{'), t.rfind('}')) {
        (Some(a), Some(b)) if a < b => &t[a..=b],
        _ => t,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is the test failure
mod tests {
    use super::*;

    #[test]
    fn answers_parse_item_by_item() {
        let reply = r#"```json
        {"items": [
          {"kind": "profile_fact", "content": "Works at Globex", "summary": "Works at Globex", "confidence": 0.9,
           "episode_index": 0, "claim": {"key": "employer", "value": "Globex"}, "updates": null},
          {"kind": "profile_fact", "content": 7, "episode_index": 0},
          {"kind": "episode_summary", "content": "Greeting", "episode_index": 1}
        ]}
        ```"#;
        let items = parse_answer(reply).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].claim.as_ref().unwrap().key, "employer");
        assert_eq!(items[1].summary, None);
        assert!(parse_answer("Sorry, I cannot help with that.").is_err());
        assert!(parse_answer(r#"{"memories": []}"#).is_err());
    }

    #[test]
    fn schema_requires_every_field() {
        let s = answer_schema();
        let item = &s["properties"]["items"]["items"];
        assert_eq!(item["required"].as_array().unwrap().len(), item["properties"].as_object().unwrap().len());
    }
}
