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
        let (kind, msg) = classify(&e.inner().to_string(), &mut loc);
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
            FieldError { loc, kind: kind_of(&msg), msg }
        })
        .collect()
}

/// The error kind of a rule's (or a field parser's) message: the rules word them as the
/// hand-written reader did, with pydantic's kinds (the Statewave error list is pydantic's).
pub fn kind_of(msg: &str) -> &'static str {
    let at_least = msg.starts_with("must have at least");
    let at_most = msg.starts_with("must have at most");
    let chars = msg.contains(" character");
    if at_least && chars {
        "string_too_short"
    } else if at_most && chars {
        "string_too_long"
    } else if at_least {
        "too_short"
    } else if at_most {
        "too_long"
    } else if msg.starts_with("must be between") {
        "int_range"
    } else if msg.starts_with(ONE_OF) {
        "enum"
    } else if msg.starts_with(REQUIRED) {
        "missing"
    } else if msg == NOT_TEXT {
        "string_type"
    } else if msg == NOT_OBJECT {
        "dict_type"
    } else if msg == NOT_TENANT {
        "string_length"
    } else if msg.starts_with(NUL_REFUSED) {
        "string_nul"
    } else if msg.starts_with(DATETIME_REFUSED) {
        "datetime_parsing"
    } else if msg.ends_with(" characters without NUL") {
        // the query strings' wording of any text limit
        "string_length"
    } else if let Some(kind) = KINDS.iter().find(|(prefix, _)| msg.starts_with(prefix)).map(|(_, k)| *k) {
        kind
    } else {
        "value_error"
    }
}

/// A field garde measures: present text or list (absent `Option`s pass every rule).
pub trait Measured {
    /// Characters of text, items of a list; None when absent.
    fn size(&self) -> Option<usize>;
}

impl Measured for String {
    fn size(&self) -> Option<usize> {
        Some(self.chars().count())
    }
}

impl<T> Measured for Vec<T> {
    fn size(&self) -> Option<usize> {
        Some(self.len())
    }
}

impl<T: Measured> Measured for Option<T> {
    fn size(&self) -> Option<usize> {
        self.as_ref().and_then(Measured::size)
    }
}

/// garde rule `custom(chars(min, max))`: text of `min..=max` characters.
pub fn chars<T: Measured>(min: usize, max: usize) -> impl FnOnce(&T, &()) -> garde::Result {
    move |value, _| match value.size() {
        Some(n) if n < min => Err(garde::Error::new(format!("must have at least {min} character(s)"))),
        Some(n) if n > max => Err(garde::Error::new(format!("must have at most {max} characters"))),
        _ => Ok(()),
    }
}

/// garde rule `custom(list_len(min, max))`: a list of `min..=max` items.
pub fn list_len<T: Measured>(min: usize, max: usize) -> impl FnOnce(&T, &()) -> garde::Result {
    move |value, _| match value.size() {
        Some(n) if n < min => Err(garde::Error::new(format!("must have at least {min} item(s)"))),
        Some(n) if n > max => Err(garde::Error::new(format!("must have at most {max} items"))),
        _ => Ok(()),
    }
}

/// garde rule `custom(between(min, max))`: an integer in `min..=max` (absent passes).
pub fn between<T>(min: i64, max: i64) -> impl FnOnce(&T, &()) -> garde::Result
where
    T: Copy + Into<Option<i64>>,
{
    move |value, _| match (*value).into() {
        Some(n) if n < min || n > max => Err(garde::Error::new(format!("must be between {min} and {max}"))),
        _ => Ok(()),
    }
}

const NUL_REFUSED: &str = "must not contain NUL bytes";
/// The refusal of NUL inside a JSON value, as the reader worded it (kind `string_nul`).
pub const NUL_IN_JSON: &str = "must not contain NUL bytes (\\u0000)";
/// Kinds of the messages of field-specific rules and parsers, by how they start: a number
/// out of range (`/v1/subjects/{id}/sla`), the kinds list and the source object of the
/// Statewave MCP tools.
const KINDS: &[(&str, &str)] =
    &[("must be a number", "float_parsing"), ("must be a list", "list_type"), ("must be an object", "type_error")];
/// A custom rule's message for a required value that is null (kind `missing`).
pub const REQUIRED: &str = "field required";
/// A custom rule's message for a value that must be text (kind `string_type`).
pub const NOT_TEXT: &str = "must be a string";
/// A custom rule's message for a value that must be a JSON object (kind `dict_type`).
pub const NOT_OBJECT: &str = "must be a JSON object";
const NOT_TENANT: &str = "must be 1-256 printable characters";

/// garde rule `custom(tenant_id)`: a tenant id (1-256 printable characters), absent passes.
pub fn tenant_id(value: &Option<String>, _: &()) -> garde::Result {
    match value {
        Some(t) if !crate::model::text::valid_tenant_id(t) => Err(garde::Error::new(NOT_TENANT)),
        _ => Ok(()),
    }
}
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

/// garde rule `custom(no_nul_in_json)`: as [`no_nul`], worded as the reader did for JSON
/// objects.
pub fn no_nul_in_json<T: Text>(value: &T, _: &()) -> garde::Result {
    if value.has_nul() {
        Err(garde::Error::new(NUL_IN_JSON))
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

/// A datetime parser's refusal (kind `datetime_parsing`).
pub const DATETIME_REFUSED: &str = "must be an ISO-8601 datetime";

/// The kind and message of a serde error, in pydantic's kinds and the hand-written reader's
/// words; a missing or unknown field's name joins the location.
fn classify(msg: &str, loc: &mut Vec<String>) -> (&'static str, String) {
    let named = |prefix: &str| msg.strip_prefix(prefix).and_then(|rest| rest.split('`').next()).map(str::to_string);
    let mut join = |field: String| {
        if loc.last() != Some(&field) {
            loc.push(field);
        }
    };
    let said = |kind: &'static str, text: &str| (kind, text.to_string());
    if let Some(field) = named("missing field `") {
        join(field);
        return said("missing", "field required");
    }
    if let Some(field) = named("unknown field `") {
        join(field);
        return ("extra_forbidden", msg.to_string());
    }
    if msg.starts_with(DATETIME_REFUSED) {
        return ("datetime_parsing", msg.to_string());
    }
    if let Some(rest) = msg.strip_prefix("invalid type: ") {
        // A null where a value is required is a missing value, as the reader treated it.
        if rest.starts_with("null,") {
            return said("missing", "field required");
        }
        let expected = rest.split(", expected ").nth(1).unwrap_or("");
        return match expected {
            e if e.contains("string") || e.contains("UUID") || e.contains("uuid") => said("string_type", "must be a string"),
            e if e.contains("bool") => said("bool_type", "must be a boolean"),
            e if e.starts_with('i') || e.starts_with('u') || e.contains("integer") => {
                said("int_type", "must be an integer")
            }
            e if e.starts_with('f') || e.contains("float") || e.contains("number") => {
                said("float_type", "must be a number")
            }
            e if e.contains("sequence") || e.contains("array") || e.contains("list") => {
                said("list_type", "must be a list")
            }
            e if e.contains("map") || e.contains("struct") || e.contains("object") => {
                said("dict_type", "must be a JSON object")
            }
            _ => ("type_error", msg.to_string()),
        };
    }
    if msg.starts_with("invalid value: integer") {
        return ("int_range", msg.to_string());
    }
    ("value_error", msg.to_string())
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
        assert_eq!((e["loc"].clone(), e["type"].clone()), (json!(["body", "tags", 1]), json!("string_type")));
        let e = error_of(json!("not an object"));
        assert_eq!(e["loc"], json!(["body"]));
    }

    #[derive(Debug, Deserialize, garde::Validate)]
    struct Limited {
        #[garde(custom(chars(1, 3)), custom(no_nul))]
        name: String,
        #[garde(custom(between(1, 10)))]
        n: Option<i64>,
        #[garde(custom(list_len(0, 2)), dive)]
        #[serde(default)]
        items: Vec<Item>,
        #[garde(skip)]
        #[serde(default, deserialize_with = "datetime")]
        at: Option<chrono::DateTime<chrono::Utc>>,
    }

    #[derive(Debug, Deserialize, garde::Validate)]
    struct Item {
        #[garde(custom(chars(0, 2)))]
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
                (json!(["body", "items", 0, "s"]), json!("string_too_long")),
                (json!(["body", "n"]), json!("int_range")),
                (json!(["body", "name"]), json!("string_nul")),
            ]
        );
        assert_eq!(errors_of(json!({"name": ""})), vec![(json!(["body", "name"]), json!("string_too_short"))]);
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
