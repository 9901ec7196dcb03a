//! Typed request bodies: one serde struct per body, which is also its OpenAPI schema, read
//! with the failing field's location in the 422 (`serde_path_to_error`), then checked against
//! the limits its `garde` attributes declare (every limit error of the body in one 422).

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

/// Deserializes `body` into `T` and checks its limits; every limit error is reported at once.
pub fn valid<T: DeserializeOwned + garde::Validate<Context = ()>>(body: Value) -> Result<T, ApiError> {
    if !body.is_object() {
        // serde would also read a struct from an array of its fields
        let loc = vec!["body".to_string()];
        return Err(ApiError::validation(vec![FieldError { loc, msg: "must be a JSON object".into(), kind: "dict_type" }]));
    }
    let value: T = typed(body)?;
    value.validate().map_err(|report| ApiError::validation(limit_errors(&report, "body")))?;
    Ok(value)
}

/// garde's report as field errors located under `root` (`body`, `query`, `arguments`).
pub fn limit_errors(report: &garde::Report, root: &str) -> Vec<FieldError> {
    report
        .iter()
        .map(|(path, e)| {
            let mut loc = vec![root.to_string()];
            // outermost component first (garde keeps them innermost first); a raw identifier
            // (`r#type`) is the wire name without its prefix
            loc.extend(path.__iter().rev().map(|(_, c)| c.trim_start_matches("r#").to_string()));
            let msg = e.message().to_string();
            FieldError { loc, kind: limit_kind(&msg), msg }
        })
        .collect()
}

/// The error kind of a garde message (its default English wording) or of one of ours.
fn limit_kind(msg: &str) -> &'static str {
    if msg.starts_with("length is lower than") {
        "too_short"
    } else if msg.starts_with("length is greater than") {
        "too_long"
    } else if msg.starts_with("lower than") || msg.starts_with("greater than") {
        "int_range"
    } else if msg.starts_with(ONE_OF) {
        "enum"
    } else if msg == NUL_REFUSED {
        "string_nul"
    } else {
        "value_error"
    }
}

const NUL_REFUSED: &str = "must not contain NUL bytes";
/// How a custom rule's message for a value outside a fixed set starts (kind `enum`).
pub const ONE_OF: &str = "must be one of:";

/// Text that may not carry U+0000 (Postgres refuses it in text and jsonb).
pub trait Text {
    /// True when a NUL is inside (in a JSON value: in any key or string).
    fn has_nul(&self) -> bool;
}

impl Text for String {
    fn has_nul(&self) -> bool {
        self.contains('\0')
    }
}

impl Text for Value {
    fn has_nul(&self) -> bool {
        crate::model::text::contains_nul(self)
    }
}

impl Text for serde_json::Map<String, Value> {
    fn has_nul(&self) -> bool {
        self.iter().any(|(k, v)| k.contains('\0') || v.has_nul())
    }
}

impl<T: Text> Text for Option<T> {
    fn has_nul(&self) -> bool {
        self.as_ref().is_some_and(Text::has_nul)
    }
}

/// garde rule `custom(no_nul)`: refuses NUL characters anywhere in the field.
pub fn no_nul<T: Text>(value: &T, _: &()) -> garde::Result {
    if value.has_nul() {
        Err(garde::Error::new(NUL_REFUSED))
    } else {
        Ok(())
    }
}

/// An optional ISO-8601 datetime (`#[serde(default, deserialize_with = "datetime")]`);
/// values without an offset are UTC, null is absent.
pub fn datetime<'de, D>(d: D) -> Result<Option<chrono::DateTime<chrono::Utc>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let raw: Option<String> = serde::Deserialize::deserialize(d)?;
    match raw {
        None => Ok(None),
        Some(s) => crate::model::time::parse_datetime(&s)
            .map(Some)
            .ok_or_else(|| serde::de::Error::custom(DATETIME_REFUSED)),
    }
}

const DATETIME_REFUSED: &str = "must be an ISO-8601 datetime";

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
    } else if msg.starts_with(DATETIME_REFUSED) {
        "datetime_parsing"
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

    #[derive(Debug, Deserialize, garde::Validate)]
    struct Limited {
        #[garde(length(chars, min = 1, max = 3), custom(no_nul))]
        name: String,
        #[garde(range(min = 1, max = 10))]
        n: Option<i64>,
        #[garde(length(max = 2), dive)]
        #[serde(default)]
        items: Vec<Item>,
        #[garde(skip)]
        #[serde(default, deserialize_with = "datetime")]
        at: Option<chrono::DateTime<chrono::Utc>>,
    }

    #[derive(Debug, Deserialize, garde::Validate)]
    struct Item {
        #[garde(length(chars, max = 2))]
        s: String,
    }

    fn errors_of(v: Value) -> Vec<(Value, Value)> {
        match valid::<Limited>(v) {
            Err(ApiError::Client { details: Some(d), .. }) => {
                d.as_array().unwrap().iter().map(|e| (e["loc"].clone(), e["type"].clone())).collect()
            }
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn every_limit_error_is_reported_with_its_location() {
        let ok: Limited = valid(json!({"name": "ab", "n": null, "at": "2026-03-02T10:00:00"})).unwrap();
        assert!(ok.n.is_none() && ok.at.is_some());
        let mut got = errors_of(json!({"name": "a\u{0000}", "n": 11, "items": [{"s": "abc"}]}));
        got.sort_by_key(|(l, _)| l.to_string());
        assert_eq!(
            got,
            vec![
                (json!(["body", "items", 0, "s"]), json!("too_long")),
                (json!(["body", "n"]), json!("int_range")),
                (json!(["body", "name"]), json!("string_nul")),
            ]
        );
        assert_eq!(errors_of(json!({"name": ""})), vec![(json!(["body", "name"]), json!("too_short"))]);
        assert_eq!(errors_of(json!(["ab"])), vec![(json!(["body"]), json!("dict_type"))]);
        assert_eq!(
            errors_of(json!({"name": "a", "at": "yesterday"})),
            vec![(json!(["body", "at"]), json!("datetime_parsing"))]
        );
    }

    #[test]
    fn strings_are_bounded() {
        assert!(check_str("s", "abc", 1, 3).is_none());
        assert!(check_str("s", "", 1, 3).is_some());
        assert!(check_str("s", "abcd", 1, 3).is_some());
        assert!(check_str("s", "a\0", 1, 3).is_some());
    }
}
