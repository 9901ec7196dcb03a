//! Checks on text that arrives from outside (bodies, headers, backup files), shared by every
//! transport and by the services that read documents themselves.

use serde_json::Value;

use crate::model::limits::MAX_ID_CHARS;

/// The tenant used when a request names none.
pub const DEFAULT_TENANT: &str = "default";

/// A tenant id is 1-256 bytes without control characters (header or path alike).
pub fn valid_tenant_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 256 && !id.chars().any(char::is_control)
}

/// A text id (subject, session, ...) is 1-256 characters (not bytes) without NUL: the one rule
/// for ids in API paths and the console's pages alike. Any other character, a tab or a
/// non-ASCII letter included, is part of the id.
pub fn valid_text_id(id: &str) -> bool {
    !id.is_empty() && id.chars().count() <= MAX_ID_CHARS && !id.contains('\0')
}

/// True if any string or key inside `v` contains U+0000 (Postgres rejects it in jsonb).
pub fn contains_nul(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains('\0'),
        Value::Array(a) => a.iter().any(contains_nul),
        Value::Object(m) => m.iter().any(|(k, v)| k.contains('\0') || contains_nul(v)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_ids_count_characters_and_refuse_only_nul() {
        assert!(valid_text_id(&"ü".repeat(256)), "512 bytes, 256 characters");
        assert!(!valid_text_id(&"ü".repeat(257)));
        assert!(valid_text_id("a\tb") && valid_text_id("line\nbreak"));
        assert!(!valid_text_id("") && !valid_text_id("a\0b"));
    }

    #[test]
    fn nul_is_found_in_nested_keys_and_values() {
        assert!(contains_nul(&json!({"a": [{"b": "x\u{0000}"}]})));
        assert!(contains_nul(&json!({"a\u{0000}": 1})));
        assert!(!contains_nul(&json!({"a": "fine"})));
    }

    #[test]
    fn tenant_ids_are_printable_and_bounded() {
        assert!(valid_tenant_id("acme"));
        assert!(!valid_tenant_id(""));
        assert!(!valid_tenant_id("a\nb"));
        assert!(!valid_tenant_id(&"x".repeat(257)));
    }
}
