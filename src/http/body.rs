//! Typed request bodies: one serde struct per body, which is also its OpenAPI schema, read
//! with the failing field's location in the 422 (`serde_path_to_error`).

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{ApiError, FieldError};

/// Deserializes `body` into `T`; a mismatch is a 422 `validation_error` naming where it is.
pub fn typed<T: DeserializeOwned>(body: Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(body).map_err(|e| {
        let mut loc = vec!["body".to_string()];
        loc.extend(e.path().iter().map(|s| match s {
            serde_path_to_error::Segment::Seq { index } => index.to_string(),
            serde_path_to_error::Segment::Map { key } => key.clone(),
            serde_path_to_error::Segment::Enum { variant } => variant.clone(),
            serde_path_to_error::Segment::Unknown => "?".to_string(),
        }));
        let msg = e.inner().to_string();
        let kind = classify(&msg, &mut loc);
        ApiError::validation(vec![FieldError { loc, msg, kind }])
    })
}

/// The error kind of a serde message; a missing or unknown field's name joins the location.
fn classify(msg: &str, loc: &mut Vec<String>) -> &'static str {
    let named = |prefix: &str| msg.strip_prefix(prefix).and_then(|rest| rest.split('`').next()).map(str::to_string);
    let mut join = |field: String| {
        if loc.last() != Some(&field) {
            loc.push(field);
        }
    };
    if let Some(field) = named("missing field `") {
        join(field);
        "missing"
    } else if let Some(field) = named("unknown field `") {
        join(field);
        "extra_forbidden"
    } else if msg.starts_with("invalid type") {
        "type_error"
    } else {
        "value_error"
    }
}

/// A field that must be present but may be null (`#[serde(deserialize_with = "nullable")]`).
pub fn nullable<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    serde::Deserialize::deserialize(d)
}

/// A string of `min..=max` characters without NUL, or the field error saying why not.
pub fn check_str(field: &str, value: &str, min: usize, max: usize) -> Option<FieldError> {
    let n = value.chars().count();
    let problem = if value.contains('\0') {
        "must not contain NUL characters".to_string()
    } else if n < min || n > max {
        format!("must be {min}-{max} characters (got {n})")
    } else {
        return None;
    };
    Some(FieldError { loc: vec!["body".into(), field.into()], msg: problem, kind: "string_length" })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Body {
        name: String,
        #[serde(deserialize_with = "nullable")]
        prev: Option<u32>,
        #[serde(default)]
        tags: Vec<String>,
    }

    fn error_of(v: Value) -> Value {
        match typed::<Body>(v) {
            Err(ApiError::Client { details: Some(d), .. }) => d[0].clone(),
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn reads_and_locates_errors() {
        let ok: Body = typed(json!({"name": "a", "prev": null})).unwrap();
        assert_eq!((ok.name.as_str(), ok.prev, ok.tags.len()), ("a", None, 0));
        let e = error_of(json!({"name": "a"}));
        assert_eq!((e["loc"].clone(), e["type"].clone()), (json!(["body", "prev"]), json!("missing")));
        let e = error_of(json!({"name": "a", "prev": 1, "extra": 2}));
        assert_eq!((e["loc"].clone(), e["type"].clone()), (json!(["body", "extra"]), json!("extra_forbidden")));
        let e = error_of(json!({"name": "a", "prev": 1, "tags": ["x", 3]}));
        assert_eq!((e["loc"].clone(), e["type"].clone()), (json!(["body", "tags", 1]), json!("type_error")));
        let e = error_of(json!("not an object"));
        assert_eq!(e["loc"], json!(["body"]));
    }

    #[test]
    fn strings_are_bounded() {
        assert!(check_str("s", "abc", 1, 3).is_none());
        assert!(check_str("s", "", 1, 3).is_some());
        assert!(check_str("s", "abcd", 1, 3).is_some());
        assert!(check_str("s", "a\0", 1, 3).is_some());
    }
}
