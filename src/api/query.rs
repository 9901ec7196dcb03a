//! Query strings: one `Deserialize + IntoParams + garde::Validate` type per endpoint, read
//! with every parameter's problem in one 422 (see `input`). The first occurrence of a
//! repeated parameter counts and unknown parameters are ignored; numbers are read trimmed,
//! booleans as `true/false`, `1/0`, `yes/no` or `on/off` in any case. Text limits are worded
//! "must be MIN..MAX characters without NUL" (kind `string_length`).

use chrono::{DateTime, Utc};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use utoipa::IntoParams;

use crate::error::ApiError;
use crate::input::rules::{Measured, Text, DATETIME_REFUSED};
use crate::input::{self, Leaves};

/// The largest `offset` of a page.
pub const MAX_OFFSET: i64 = i32::MAX as i64;

/// A query-string struct with the shared paging parameters appended after its own fields:
/// `limit` (1-200, default 50) and `offset` (0-`MAX_OFFSET`, default 0). One description of
/// paging for every list endpoint (`#[serde(flatten)]` does not work with `IntoParams`).
macro_rules! paged {
    ($(#[$m:meta])* $vis:vis struct $name:ident { $($(#[$fm:meta])* $fvis:vis $field:ident: $ty:ty),* $(,)? }) => {
        $(#[$m])*
        $vis struct $name {
            $($(#[$fm])* $fvis $field: $ty,)*
            /// Page size.
            #[serde(default = "crate::api::query::int::<50>")]
            #[garde(custom(crate::input::rules::between(1, 200)))]
            #[param(minimum = 1, maximum = 200, default = crate::api::query::int::<50>)]
            pub limit: i64,
            /// Rows to skip.
            #[serde(default)]
            #[garde(custom(crate::input::rules::between(0, crate::api::query::MAX_OFFSET)))]
            #[param(minimum = 0, maximum = 2147483647, default = 0)]
            pub offset: i64,
        }
    };
}
pub(crate) use paged;

/// Reads the raw query string as `T`; a 422 names every bad parameter.
pub fn query<T>(raw: Option<&str>) -> Result<T, ApiError>
where
    T: DeserializeOwned + garde::Validate<Context = ()>,
{
    let mut params = Map::new();
    for (name, value) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        params.entry(name.into_owned()).or_insert_with(|| Value::String(value.into_owned()));
    }
    input::read(&Value::Object(params), "query", Leaves::Text).map_err(ApiError::validation)
}

/// A default integer (`#[serde(default = "int::<50>")]`, `#[param(default = int::<50>)]`).
pub const fn int<const N: i64>() -> i64 {
    N
}

/// A default of true.
pub const fn yes() -> bool {
    true
}

fn outside(min: usize, max: usize) -> String {
    format!("must be {min}..{max} characters without NUL")
}

/// garde rule `custom(length(min, max))`: text of `min..=max` characters without NUL (absent
/// passes).
pub fn length<T: Measured + Text>(min: usize, max: usize) -> impl FnOnce(&T, &()) -> garde::Result {
    move |value, _| match value.size() {
        Some(n) if n < min || n > max || value.has_nul() => Err(garde::Error::new(outside(min, max))),
        _ => Ok(()),
    }
}

/// garde rule `custom(target_tenant)`: a tenant id as the header is checked (absent passes).
pub fn target_tenant(value: &Option<String>, ctx: &()) -> garde::Result {
    length(0, 256)(value, ctx)?;
    crate::input::rules::tenant_id(value, ctx)
}

/// `deserialize_with` for an ISO-8601 instant of at most 64 characters (without an offset,
/// UTC); `#[serde(default)]` beside it.
pub fn instant<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
    let Some(s) = Option::<String>::deserialize(d)? else { return Ok(None) };
    if s.chars().count() > 64 || s.contains('\0') {
        return Err(D::Error::custom(outside(0, 64)));
    }
    crate::model::time::parse_datetime(&s).map(Some).ok_or_else(|| D::Error::custom(DATETIME_REFUSED))
}

/// `deserialize_with` for a choice filter read as text of at most `MAX` characters first (a
/// longer one is refused as text); empty is no filter. `#[serde(default)]` beside it.
pub fn choice<'de, D, T, const MAX: usize>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let Some(s) = Option::<String>::deserialize(d)? else { return Ok(None) };
    if s.chars().count() > MAX || s.contains('\0') {
        return Err(D::Error::custom(outside(0, MAX)));
    }
    if s.is_empty() {
        return Ok(None);
    }
    input::from_text(&s).map(Some).map_err(D::Error::custom)
}

/// `tenant_id` of the admin routes that may act on another tenant.
#[derive(Debug, Deserialize, IntoParams, garde::Validate)]
#[into_params(parameter_in = Query)]
pub struct TargetTenant {
    /// Tenant; absent means the caller's tenant.
    #[garde(custom(target_tenant))]
    #[param(min_length = 1, max_length = 256)]
    pub tenant_id: Option<String>,
}

impl TargetTenant {
    /// The tenant named, or `caller`.
    pub fn or(self, caller: String) -> String {
        self.tenant_id.unwrap_or(caller)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[derive(Debug, Deserialize, garde::Validate)]
    struct Page {
        #[garde(custom(length(1, 8)))]
        subject_id: String,
        #[serde(default = "int::<20>")]
        #[garde(custom(crate::input::rules::between(1, 200)))]
        limit: i64,
        #[serde(default)]
        #[garde(skip)]
        newest_first: bool,
        #[serde(default, deserialize_with = "instant")]
        #[garde(skip)]
        since: Option<DateTime<Utc>>,
        #[serde(default)]
        #[garde(skip)]
        status: Status,
    }

    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Status {
        #[default]
        All,
        Active,
    }

    fn errors(raw: &str) -> Vec<(String, String, &'static str)> {
        match query::<Page>(Some(raw)) {
            Err(ApiError::Client { details: Some(d), .. }) => d
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    let kind = match e["type"].as_str().unwrap() {
                        "missing" => "missing",
                        "int_range" => "int_range",
                        "int_parsing" => "int_parsing",
                        "bool_parsing" => "bool_parsing",
                        "enum" => "enum",
                        "string_length" => "string_length",
                        "datetime_parsing" => "datetime_parsing",
                        other => panic!("{other}"),
                    };
                    (e["loc"][1].as_str().unwrap().to_string(), e["msg"].as_str().unwrap().to_string(), kind)
                })
                .collect(),
            other => panic!("expected a 422, got {other:?}"),
        }
    }

    #[test]
    fn reads_spellings_defaults_and_the_first_of_repeated_parameters() {
        let p: Page = query(Some("subject_id=u&limit=+7 &newest_first=ON&status=active&limit=900")).unwrap();
        assert_eq!((p.subject_id.as_str(), p.limit, p.newest_first, p.status), ("u", 7, true, Status::Active));
        let p: Page = query(Some("subject_id=u&since=2026-03-02T10:00:00&junk=%FF")).unwrap();
        assert_eq!((p.limit, p.newest_first, p.status), (20, false, Status::All));
        assert!(p.since.is_some());
    }

    #[test]
    fn every_bad_parameter_is_named_in_field_order() {
        let got = errors("status=gone&newest_first=maybe&limit=x&since=yesterday");
        let want = vec![
            ("subject_id".into(), "field required".into(), "missing"),
            ("limit".into(), "must be an integer".into(), "int_parsing"),
            ("newest_first".into(), "must be a boolean".into(), "bool_parsing"),
            ("since".into(), "must be an ISO-8601 datetime".into(), "datetime_parsing"),
            ("status".into(), "must be one of: all, active".into(), "enum"),
        ];
        assert_eq!(got, want);
        let got = errors("subject_id=&limit=0");
        let want = vec![
            ("subject_id".into(), "must be 1..8 characters without NUL".into(), "string_length"),
            ("limit".into(), "must be between 1 and 200".into(), "int_range"),
        ];
        assert_eq!(got, want);
        assert_eq!(errors("subject_id=a%00")[0].2, "string_length");
    }
}
