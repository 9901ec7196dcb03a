//! Reading JSON objects into typed inputs with field-precise errors
//! ("parse, don't validate": handlers receive values that are already checked).

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::error::FieldError;
pub use crate::model::text::contains_nul;
pub use crate::model::time::parse_datetime;

/// Collects field errors while reading one object.
pub struct Reader<'a> {
    obj: &'a Map<String, Value>,
    loc: Vec<String>,
    errors: &'a mut Vec<FieldError>,
}

fn err(loc: &[String], field: &str, msg: impl Into<String>, kind: &'static str) -> FieldError {
    let mut l = loc.to_vec();
    l.push(field.to_string());
    FieldError { loc: l, msg: msg.into(), kind }
}

/// Reads `value` as an object at `loc`, or records an error and returns None.
pub fn object_at<'a>(value: &'a Value, loc: Vec<String>, errors: &'a mut Vec<FieldError>) -> Option<Reader<'a>> {
    match value.as_object() {
        Some(obj) => Some(Reader { obj, loc, errors }),
        None => {
            errors.push(FieldError { loc, msg: "must be a JSON object".into(), kind: "dict_type" });
            None
        }
    }
}

impl<'a> Reader<'a> {
    fn push(&mut self, field: &str, msg: impl Into<String>, kind: &'static str) {
        let e = err(&self.loc, field, msg, kind);
        self.errors.push(e);
    }

    /// The raw value of a field (absent and null are both None).
    pub fn raw(&self, field: &str) -> Option<&'a Value> {
        self.obj.get(field).filter(|v| !v.is_null())
    }

    /// The location of a child field, for nested readers.
    pub fn child_loc(&self, field: &str) -> Vec<String> {
        let mut l = self.loc.clone();
        l.push(field.to_string());
        l
    }

    /// A required string of `min..=max` characters without NUL bytes.
    pub fn req_str(&mut self, field: &str, min: usize, max: usize) -> String {
        match self.raw(field) {
            None => {
                self.push(field, "field required", "missing");
                String::new()
            }
            Some(v) => self.check_str(field, v, min, max).unwrap_or_default(),
        }
    }

    /// An optional string of at most `max` characters (null = absent).
    pub fn opt_str(&mut self, field: &str, max: usize) -> Option<String> {
        let v = self.raw(field)?;
        self.check_str(field, v, 0, max)
    }

    fn check_str(&mut self, field: &str, v: &Value, min: usize, max: usize) -> Option<String> {
        let Some(s) = v.as_str() else {
            self.push(field, "must be a string", "string_type");
            return None;
        };
        let n = s.chars().count();
        if n < min {
            self.push(field, format!("must have at least {min} character(s)"), "string_too_short");
            return None;
        }
        if n > max {
            self.push(field, format!("must have at most {max} characters"), "string_too_long");
            return None;
        }
        if s.contains('\0') {
            self.push(field, "must not contain NUL bytes", "string_nul");
            return None;
        }
        Some(s.to_string())
    }

    /// A required JSON object (no NUL bytes anywhere inside).
    pub fn req_object(&mut self, field: &str) -> Map<String, Value> {
        match self.raw(field) {
            None => {
                self.push(field, "field required", "missing");
                Map::new()
            }
            Some(v) => self.check_object(field, v).unwrap_or_default(),
        }
    }

    /// An optional JSON object; absent or null gives an empty object.
    pub fn opt_object(&mut self, field: &str) -> Map<String, Value> {
        match self.raw(field) {
            None => Map::new(),
            Some(v) => self.check_object(field, v).unwrap_or_default(),
        }
    }

    fn check_object(&mut self, field: &str, v: &Value) -> Option<Map<String, Value>> {
        let Some(m) = v.as_object() else {
            self.push(field, "must be a JSON object", "dict_type");
            return None;
        };
        if contains_nul(v) {
            self.push(field, "must not contain NUL bytes (\\u0000)", "string_nul");
            return None;
        }
        Some(m.clone())
    }

    /// An optional ISO-8601 datetime; values without an offset are taken as UTC.
    pub fn opt_datetime(&mut self, field: &str) -> Option<DateTime<Utc>> {
        let v = self.raw(field)?;
        match v.as_str().and_then(parse_datetime) {
            Some(t) => Some(t),
            None => {
                self.push(field, "must be an ISO-8601 datetime", "datetime_parsing");
                None
            }
        }
    }

    /// An optional boolean.
    pub fn opt_bool(&mut self, field: &str) -> Option<bool> {
        let v = self.raw(field)?;
        match v.as_bool() {
            Some(b) => Some(b),
            None => {
                self.push(field, "must be a boolean", "bool_type");
                None
            }
        }
    }

    /// An optional integer within `min..=max`.
    pub fn opt_int(&mut self, field: &str, min: i64, max: i64) -> Option<i64> {
        let v = self.raw(field)?;
        match v.as_i64() {
            Some(n) if n >= min && n <= max => Some(n),
            Some(_) => {
                self.push(field, format!("must be between {min} and {max}"), "int_range");
                None
            }
            None => {
                self.push(field, "must be an integer", "int_type");
                None
            }
        }
    }

    /// A required array of `min..=max` items.
    pub fn req_array(&mut self, field: &str, min: usize, max: usize) -> Vec<Value> {
        match self.raw(field) {
            None => {
                self.push(field, "field required", "missing");
                Vec::new()
            }
            Some(Value::Array(items)) if items.len() < min => {
                self.push(field, format!("must have at least {min} item(s)"), "too_short");
                Vec::new()
            }
            Some(Value::Array(items)) if items.len() > max => {
                self.push(field, format!("must have at most {max} items"), "too_long");
                Vec::new()
            }
            Some(Value::Array(items)) => items.clone(),
            Some(_) => {
                self.push(field, "must be a list", "list_type");
                Vec::new()
            }
        }
    }

    /// Gives access to the shared error list (for nested readers).
    pub fn errors(&mut self) -> &mut Vec<FieldError> {
        self.errors
    }
}

/// Moved to `http::path` (the MCP tools still name it here).
pub use crate::http::path::memory_id_path;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reader_reports_each_bad_field() {
        let v = json!({"subject_id": "", "source": 5, "payload": []});
        let mut errors = Vec::new();
        {
            let mut r = object_at(&v, vec!["body".into()], &mut errors).unwrap();
            r.req_str("subject_id", 1, 256);
            r.req_str("source", 1, 256);
            r.req_str("type", 1, 128);
            r.req_object("payload");
        }
        let locs: Vec<String> = errors.iter().map(FieldError::loc_string).collect();
        assert_eq!(locs, vec!["subject_id", "source", "type", "payload"]);
    }
}
