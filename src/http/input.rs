//! Reading JSON bodies and query strings into typed inputs with field-precise errors
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

/// A subject id from the path (1-256 characters without NUL), or a 422 naming `path.subject_id`.
pub fn subject_id_path(subject_id: &str) -> Result<(), crate::error::ApiError> {
    text_id_path("subject_id", subject_id)
}

/// A text id from the path (1-256 characters without NUL), or a 422 naming `path.<field>`.
pub fn text_id_path(field: &str, value: &str) -> Result<(), crate::error::ApiError> {
    let n = value.chars().count();
    if n == 0 || n > 256 || value.contains('\0') {
        return Err(crate::error::ApiError::validation(vec![FieldError {
            loc: vec!["path".into(), field.into()],
            msg: "must be 1-256 characters without NUL".into(),
            kind: "string_length",
        }]));
    }
    Ok(())
}

/// A memory id from the path, or a 422 naming `path.memory_id`.
pub fn memory_id_path(id: &str) -> Result<uuid::Uuid, crate::error::ApiError> {
    uuid::Uuid::parse_str(id).map_err(|_| {
        crate::error::ApiError::validation(vec![FieldError {
            loc: vec!["path".into(), "memory_id".into()],
            msg: "must be a UUID".into(),
            kind: "uuid_parsing",
        }])
    })
}

/// A parsed query string with typed, validated accessors.
pub struct Query {
    pairs: Vec<(String, String)>,
    /// Errors found so far.
    pub errors: Vec<FieldError>,
}

impl Query {
    /// Parses a raw query string.
    pub fn parse(raw: Option<&str>) -> Self {
        let pairs = form_urlencoded::parse(raw.unwrap_or("").as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        Query { pairs, errors: Vec::new() }
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn push(&mut self, name: &str, msg: impl Into<String>, kind: &'static str) {
        self.errors.push(FieldError { loc: vec!["query".into(), name.into()], msg: msg.into(), kind });
    }

    /// A required string parameter of `min..=max` chars.
    pub fn req_str(&mut self, name: &str, min: usize, max: usize) -> String {
        match self.get(name).map(str::to_string) {
            None => {
                self.push(name, "field required", "missing");
                String::new()
            }
            Some(s) => self.check_str(name, s, min, max).unwrap_or_default(),
        }
    }

    /// An optional string parameter.
    pub fn opt_str(&mut self, name: &str, max: usize) -> Option<String> {
        let s = self.get(name)?.to_string();
        self.check_str(name, s, 0, max)
    }

    fn check_str(&mut self, name: &str, s: String, min: usize, max: usize) -> Option<String> {
        let n = s.chars().count();
        if n < min || n > max || s.contains('\0') {
            self.push(name, format!("must be {min}..{max} characters without NUL"), "string_length");
            return None;
        }
        Some(s)
    }

    /// An integer parameter within `min..=max`, or `default` when absent.
    pub fn int(&mut self, name: &str, min: i64, max: i64, default: i64) -> i64 {
        let Some(s) = self.get(name).map(str::to_string) else {
            return default;
        };
        match s.trim().parse::<i64>() {
            Ok(n) if n >= min && n <= max => n,
            Ok(_) => {
                self.push(name, format!("must be between {min} and {max}"), "int_range");
                default
            }
            Err(_) => {
                self.push(name, "must be an integer", "int_parsing");
                default
            }
        }
    }

    /// A boolean parameter (`true/false/1/0/yes/no/on/off`), or `default`.
    pub fn bool(&mut self, name: &str, default: bool) -> bool {
        let Some(s) = self.get(name).map(str::to_ascii_lowercase) else {
            return default;
        };
        match s.as_str() {
            "true" | "1" | "yes" | "on" => true,
            "false" | "0" | "no" | "off" => false,
            _ => {
                self.push(name, "must be a boolean", "bool_parsing");
                default
            }
        }
    }

    /// One of `allowed`, or `default` when absent.
    pub fn choice(&mut self, name: &str, allowed: &[&'static str], default: &'static str) -> &'static str {
        let Some(s) = self.get(name).map(str::to_string) else {
            return default;
        };
        match allowed.iter().find(|a| **a == s) {
            Some(a) => a,
            None => {
                self.push(name, format!("must be one of: {}", allowed.join(", ")), "enum");
                default
            }
        }
    }

    /// `?tenant_id=` for admin routes that may name any tenant (checked like the header), else `caller`.
    pub fn target_tenant(&mut self, caller: String) -> String {
        match self.opt_str("tenant_id", 256) {
            Some(t) if crate::model::text::valid_tenant_id(&t) => t,
            Some(_) => {
                self.push("tenant_id", "must be 1-256 printable characters", "string_length");
                caller
            }
            None => caller,
        }
    }

    /// Fails with 422 when any parameter was invalid.
    pub fn finish(self) -> Result<(), crate::error::ApiError> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(crate::error::ApiError::validation(self.errors))
        }
    }
}

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

    #[test]
    fn query_validates_ranges_and_enums() {
        let mut q = Query::parse(Some("limit=500&status=bogus&newest_first=maybe"));
        assert_eq!(q.int("limit", 1, 200, 100), 100);
        q.choice("status", &["all", "active"], "all");
        q.bool("newest_first", false);
        assert_eq!(q.errors.len(), 3);
    }
}
