//! Limits of typed inputs, as garde rules, and the wording of every problem: the messages
//! and pydantic's kinds (the Statewave error list is pydantic's) shared by request bodies,
//! query strings, MCP tool arguments and the tenant config patch.

use serde_json::Value;

use crate::error::FieldError;

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
        Some(s) => {
            crate::model::time::parse_datetime(&s).map(Some).ok_or_else(|| serde::de::Error::custom(DATETIME_REFUSED))
        }
    }
}

/// A datetime parser's refusal (kind `datetime_parsing`).
pub const DATETIME_REFUSED: &str = "must be an ISO-8601 datetime";

/// A field that must be present but may be null (`#[serde(deserialize_with = "nullable")]`).
pub fn nullable<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    serde::Deserialize::deserialize(d)
}

/// garde rule `custom(bounded(min, max))`: text of `min..=max` characters without NUL, the
/// first of those problems only (absent passes).
pub fn bounded<T: Measured + Text>(min: usize, max: usize) -> impl FnOnce(&T, &()) -> garde::Result {
    move |value, ctx| {
        chars(min, max)(value, ctx)?;
        no_nul(value, ctx)
    }
}

/// garde rule `custom(required)`: a value that must be given (null is not).
pub fn required<T>(value: &Option<T>, _: &()) -> garde::Result {
    match value {
        None => Err(garde::Error::new(REQUIRED)),
        Some(_) => Ok(()),
    }
}
