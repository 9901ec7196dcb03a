//! Reading bundle text (YAML or JSON) into a JSON value, strictly: no duplicate keys, no NaN, bounded size.
//!
//! The schema checks live in `bundle.rs`; this file only turns text into a `serde_json::Value` the same way for both
//! syntaxes, so the hash of a bundle never depends on which one the author used.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Why text could not be read as a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum DocumentError {
    /// Longer than the caller's limit.
    TooLarge { size: usize, max: usize },
    /// Neither YAML nor JSON (the YAML parser's message), or a duplicate key, tag or non-finite number.
    Syntax(String),
}

/// Parses `text` as YAML (JSON is YAML), falling back to plain JSON for the few JSON texts libyaml refuses.
pub(super) fn read_document(text: &str, max_bytes: usize) -> Result<Value, DocumentError> {
    if text.len() > max_bytes {
        return Err(DocumentError::TooLarge { size: text.len(), max: max_bytes });
    }
    // PyYAML skips a leading byte-order mark; libyaml reading a &str does not.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match serde_yaml::from_str::<Strict>(text) {
        Ok(Strict(value)) => Ok(value),
        // E.g. JSON indented with tabs, or with a surrogate-pair escape: valid JSON that libyaml refuses.
        Err(yaml_error) => match serde_json::from_str::<Strict>(text) {
            Ok(Strict(value)) => Ok(value),
            Err(_) => Err(DocumentError::Syntax(yaml_error.to_string())),
        },
    }
}

/// A JSON value read from YAML or JSON that refuses duplicate keys, tagged values and non-finite numbers.
///
/// PyYAML and Python's json keep the last of duplicate keys; in a security policy that hides mistakes, so mnemo
/// refuses them. serde_yaml still bounds alias expansion and nesting depth while it drives this visitor.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Strict;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a plain YAML or JSON value (null, boolean, number, string, list or mapping)")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Strict, E> {
        Ok(Strict(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<Strict, E> {
        Ok(Strict(Value::Null))
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Strict, D::Error> {
        Strict::deserialize(deserializer)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Strict, E> {
        Ok(Strict(Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Strict, E> {
        Ok(Strict(Value::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Strict, E> {
        Ok(Strict(Value::from(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Strict, E> {
        // Canonical JSON has no NaN or infinity; refuse rather than let them turn into null.
        Number::from_f64(v)
            .map(|n| Strict(Value::Number(n)))
            .ok_or_else(|| E::custom("non-finite numbers are not allowed"))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Strict, E> {
        Ok(Strict(Value::String(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Strict, E> {
        Ok(Strict(Value::String(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Strict(Value::Array(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Strict, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(de::Error::custom(format!("duplicate key {key:?}")));
            }
            let Strict(value) = access.next_value()?;
            map.insert(key, value);
        }
        Ok(Strict(Value::Object(map)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const MAX: usize = 1 << 20;

    fn read(text: &str) -> Result<Value, DocumentError> {
        read_document(text, MAX)
    }

    fn syntax_message(text: &str) -> String {
        match read(text) {
            Err(DocumentError::Syntax(message)) => message,
            other => panic!("expected a syntax error for {text:?}, got {other:?}"),
        }
    }

    #[test]
    fn yaml_and_json_read_to_the_same_value() {
        let yaml = "b: [1, 2.5, true, null, x]\na: {c: 'd'}\n";
        let json_text = "{\"a\": {\"c\": \"d\"}, \"b\": [1, 2.5, true, null, \"x\"]}";
        let expected = json!({"a": {"c": "d"}, "b": [1, 2.5, true, null, "x"]});
        assert_eq!(read(yaml).unwrap(), expected);
        assert_eq!(read(json_text).unwrap(), expected);
    }

    #[test]
    fn json_that_libyaml_refuses_falls_back_to_json() {
        // A surrogate-pair escape is valid JSON but not a valid YAML escape; tab indentation is not YAML either.
        assert_eq!(read(r#"{"id": "\ud83d\ude00"}"#).unwrap(), json!({"id": "\u{1f600}"}));
        assert_eq!(read("{\n\t\"a\": [\n\t\t1\n\t]\n}").unwrap(), json!({"a": [1]}));
    }

    #[test]
    fn duplicate_keys_are_refused_in_yaml_and_json() {
        assert!(syntax_message("a: 1\na: 2\n").contains("duplicate key \"a\""));
        assert!(syntax_message("{when: {caller_type: a, caller_type: b}}").contains("duplicate key \"caller_type\""));
        assert!(syntax_message("{\"rules\": [], \"rules\": []}").contains("duplicate key \"rules\""));
        // The JSON fallback refuses them too (tabs force the fallback).
        assert!(matches!(read("{\n\t\"a\": 1,\n\t\"a\": 2\n}"), Err(DocumentError::Syntax(_))));
    }

    #[test]
    fn byte_order_mark_is_skipped() {
        assert_eq!(read("\u{feff}version: 1").unwrap(), json!({"version": 1}));
    }

    #[test]
    fn non_finite_numbers_tags_and_complex_keys_are_refused() {
        assert!(syntax_message("n: .nan").contains("non-finite numbers are not allowed"));
        assert!(syntax_message("n: -.inf").contains("non-finite numbers are not allowed"));
        assert!(syntax_message("caller_type: !custom x").contains("expected a plain YAML or JSON value"));
        syntax_message("? [k]\n: x\n");
    }

    #[test]
    fn yaml_1_2_scalars() {
        // `yes`/`on` stay strings (PyYAML, on YAML 1.1, would read booleans); core tags still apply.
        assert_eq!(
            read("a: yes\nb: on\nc: !!str 123\nd: 0x1").unwrap(),
            json!({"a": "yes", "b": "on", "c": "123", "d": 1})
        );
        assert_eq!(read("1: x").unwrap(), json!({"1": "x"}), "scalar keys read as strings");
    }

    #[test]
    fn several_documents_and_bad_syntax_are_refused() {
        syntax_message("a: 1\n---\nb: 2\n");
        syntax_message("a: [\n");
        syntax_message("{\"a\": 1,, }");
        assert_eq!(read("").unwrap(), Value::Null, "an empty text is a null document");
    }

    #[test]
    fn size_limit_is_checked_first() {
        assert_eq!(read_document("a: 1", 3), Err(DocumentError::TooLarge { size: 4, max: 3 }));
        assert_eq!(read_document("a: 1", 4).unwrap(), json!({"a": 1}));
    }

    #[test]
    fn alias_bombs_are_refused_not_expanded() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        syntax_message(&text);
    }

    #[test]
    fn deep_nesting_is_refused_without_overflowing_the_stack() {
        syntax_message(&format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)));
        syntax_message(&format!("{}1{}", "{\"a\":".repeat(10_000), "}".repeat(10_000)));
    }
}
