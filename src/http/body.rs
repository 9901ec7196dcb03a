//! Typed request bodies: one serde struct per body, which is also its OpenAPI schema, checked
//! against the limits its `garde` attributes declare. A refused body is answered with every
//! problem it has in one 422 (a wrong type, a missing or unknown field, a limit), each at its
//! location, as [`crate::input::read`] finds them.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ApiError;
use crate::input::{self, Leaves};

/// Reads `body` as `T` and checks its limits; a refusal lists every problem of the body.
///
/// A body that reads and passes costs one plain serde pass (the request path); only a refused
/// one is read again, field by field, to find all of its problems.
pub fn valid<T: DeserializeOwned + garde::Validate<Context = ()>>(body: Value) -> Result<T, ApiError> {
    // serde would also read a struct from an array of its fields: only an object is tried
    if body.is_object() {
        if let Ok(value) = T::deserialize(&body) {
            if value.validate().is_ok() {
                return Ok(value);
            }
        }
    }
    input::read::<T>(&body, "body", Leaves::Json).map_err(ApiError::validation)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, dead_code)]
    use super::*;
    use crate::input::rules::{between, chars, datetime, list_len, no_nul, nullable};
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, garde::Validate)]
    #[serde(deny_unknown_fields)]
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
        #[garde(skip)]
        #[serde(default)]
        tags: Vec<String>,
    }

    #[derive(Debug, Deserialize, garde::Validate)]
    struct Item {
        #[garde(custom(chars(0, 2)))]
        s: String,
    }

    #[derive(Debug, Deserialize, garde::Validate)]
    struct WithPrev {
        #[garde(skip)]
        #[serde(deserialize_with = "nullable")]
        prev: Option<u32>,
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
        assert_eq!(
            errors_of(json!({"name": "a\u{0000}", "n": 11, "items": [{"s": "abc"}]})),
            vec![
                (json!(["body", "name"]), json!("string_nul")),
                (json!(["body", "n"]), json!("int_range")),
                (json!(["body", "items", 0, "s"]), json!("string_too_long")),
            ]
        );
        assert_eq!(errors_of(json!({"name": ""})), vec![(json!(["body", "name"]), json!("string_too_short"))]);
        assert_eq!(errors_of(json!(["ab"])), vec![(json!(["body"]), json!("dict_type"))]);
        assert_eq!(errors_of(json!("not an object")), vec![(json!(["body"]), json!("dict_type"))]);
        assert_eq!(
            errors_of(json!({"name": "a", "at": "yesterday"})),
            vec![(json!(["body", "at"]), json!("datetime_parsing"))]
        );
    }

    #[test]
    fn type_errors_are_all_reported_with_the_limit_errors() {
        // serde alone stops at the first wrong type; every problem of the body is in the 422
        assert_eq!(
            errors_of(json!({"n": "7", "items": [{"s": "abc"}, {"s": 5}], "tags": ["x", 3], "extra": 1, "at": 2})),
            vec![
                (json!(["body", "name"]), json!("missing")),
                (json!(["body", "n"]), json!("int_type")),
                (json!(["body", "items", 0, "s"]), json!("string_too_long")),
                (json!(["body", "items", 1, "s"]), json!("string_type")),
                (json!(["body", "at"]), json!("string_type")),
                (json!(["body", "tags", 1]), json!("string_type")),
                (json!(["body", "extra"]), json!("extra_forbidden")),
            ]
        );
    }

    #[test]
    fn a_nullable_field_must_be_present() {
        assert!(valid::<WithPrev>(json!({"prev": null})).unwrap().prev.is_none());
        assert_eq!(valid::<WithPrev>(json!({"prev": 3})).unwrap().prev, Some(3));
        match valid::<WithPrev>(json!({})) {
            Err(ApiError::Client { details: Some(d), .. }) => {
                assert_eq!((d[0]["loc"].clone(), d[0]["type"].clone()), (json!(["body", "prev"]), json!("missing")))
            }
            other => panic!("expected a validation error, got {other:?}"),
        }
    }
}
