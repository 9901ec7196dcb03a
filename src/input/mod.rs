//! Typed inputs read with every field's problem in one answer (query strings, MCP tool
//! arguments, template applications), where serde alone would stop at the first.
//!
//! serde reads the type. Where it fails (a wrong type, a missing or unknown field, a value a
//! field's own parser refuses) the problem is noted, that field is read as the emptiest value
//! of its type (an unknown one is left out) and the input is read again. Then the type's garde
//! rules run; a field already noted is not reported twice. Problems come in the type's field
//! order, whatever the order of the input.

mod de;
pub mod rules;
mod setting;

pub use setting::Setting;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::FieldError;
use de::{Ctx, De};
use rules::limit_errors;

/// How leaf values are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaves {
    /// JSON: a number is a JSON number, a boolean a JSON boolean.
    Json,
    /// Query strings: every value is text; numbers and booleans are parsed from it.
    Text,
}

/// pydantic's word for an unknown field (kind `extra_forbidden`).
pub const EXTRA: &str = "extra inputs are not permitted";
/// Reading rounds at most (each notes one more problem).
const MAX_ROUNDS: usize = 256;

/// Where a value is: its field names and list indexes from the root.
type Loc = Vec<String>;

/// How the input is read this round.
#[derive(Default)]
pub(super) struct Plan {
    /// Read as the emptiest value of their type.
    pub(super) emptied: BTreeSet<Loc>,
    /// Left out (unknown fields).
    pub(super) dropped: BTreeSet<Loc>,
    /// The field names of every struct read, by location.
    pub(super) fields: RefCell<BTreeMap<Loc, &'static [&'static str]>>,
}

/// Reads `input` as `T` and checks its garde rules; Err lists every problem, located under
/// `root` (`query`, `arguments`, `body`).
pub fn read<T>(input: &Value, root: &str, leaves: Leaves) -> Result<T, Vec<FieldError>>
where
    T: DeserializeOwned + garde::Validate<Context = ()>,
{
    let mut plan = Plan::default();
    let mut noted: Vec<(Loc, FieldError)> = Vec::new();
    let mut value = None;
    for _ in 0..MAX_ROUNDS {
        let ctx = Ctx { plan: &plan, leaves };
        match T::deserialize(De { value: Some(input), loc: Vec::new(), ctx }) {
            Ok(v) => {
                value = Some(v);
                break;
            }
            Err(p) => {
                let mut loc = p.loc.unwrap_or_default();
                loc.extend(p.field);
                let fresh = if p.unknown { plan.dropped.insert(loc.clone()) } else { plan.emptied.insert(loc.clone()) };
                if !fresh {
                    // even the emptiest value failed: what is noted is the answer
                    break;
                }
                let at = std::iter::once(root.to_string()).chain(loc.iter().cloned()).collect();
                noted.push((loc, FieldError { loc: at, msg: p.msg, kind: p.kind }));
            }
        }
    }
    let mut errors: Vec<FieldError> = Vec::new();
    if let Some(Err(report)) = value.as_ref().map(garde::Validate::validate) {
        let seen = |e: &FieldError| noted.iter().any(|(loc, _)| e.loc.get(1..).is_some_and(|l| l.starts_with(loc)));
        errors.extend(limit_errors(&report, root).into_iter().filter(|e| !seen(e)));
    }
    errors.extend(noted.into_iter().map(|(_, e)| e));
    let fields = plan.fields.into_inner();
    errors.sort_by_cached_key(|e| field_order(&e.loc, &fields));
    match value {
        Some(v) if errors.is_empty() => Ok(v),
        _ => Err(errors),
    }
}

/// Reads one text as `T`, as a query parameter is read; Err is the problem, worded.
pub fn from_text<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let value = Value::String(text.to_string());
    let plan = Plan::default();
    let ctx = Ctx { plan: &plan, leaves: Leaves::Text };
    T::deserialize(De { value: Some(&value), loc: Vec::new(), ctx }).map_err(|p| p.msg)
}

/// The names of `T`'s fields, in declaration order.
pub fn field_names<T: DeserializeOwned>() -> &'static [&'static str] {
    let plan = Plan::default();
    // the emptiest value of a struct reads each of its fields
    let _ = T::deserialize(De { value: None, loc: Vec::new(), ctx: Ctx { plan: &plan, leaves: Leaves::Json } });
    let names = plan.fields.borrow().get(&Vec::new()).copied();
    names.unwrap_or_default()
}

/// Where a location sorts: each component's position among its struct's fields (unknown
/// fields last), or its index in a list.
fn field_order(loc: &[String], fields: &BTreeMap<Loc, &'static [&'static str]>) -> Vec<usize> {
    let parts = loc.get(1..).unwrap_or_default();
    (0..parts.len())
        .map(|i| match fields.get(&parts[..i]) {
            Some(names) => names.iter().position(|n| *n == parts[i]).unwrap_or(names.len()),
            None => parts[i].parse().unwrap_or(usize::MAX),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, dead_code)]
    use super::rules::{between, bounded};
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, garde::Validate)]
    struct Args {
        #[garde(custom(bounded(1, 8)))]
        name: String,
        #[garde(custom(between(1, 10)))]
        n: Option<i64>,
        #[garde(dive)]
        inner: Option<Inner>,
        #[serde(default)]
        #[garde(skip)]
        tags: Vec<String>,
        #[garde(skip)]
        flag: Option<bool>,
    }

    #[derive(Debug, Deserialize, garde::Validate)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        #[garde(custom(bounded(1, 3)))]
        a: String,
        #[garde(skip)]
        b: Option<i64>,
    }

    fn problems(v: Value) -> Vec<(String, &'static str)> {
        let errors = read::<Args>(&v, "arguments", Leaves::Json).unwrap_err();
        errors.into_iter().map(|e| (e.loc.join("."), e.kind)).collect()
    }

    #[test]
    fn reads_a_valid_input() {
        let v = json!({"name": "ab", "n": null, "inner": {"a": "x"}, "tags": ["t"], "extra": 1});
        let a: Args = read(&v, "arguments", Leaves::Json).unwrap();
        assert_eq!((a.name.as_str(), a.n, a.tags.len()), ("ab", None, 1));
        assert_eq!(a.inner.map(|i| i.a), Some("x".to_string()));
    }

    #[test]
    fn every_problem_is_reported_once_in_field_order() {
        let v = json!({"flag": "yes", "tags": [1], "inner": {"z": 1, "b": "x"}, "n": 11});
        assert_eq!(
            problems(v),
            vec![
                ("arguments.name".into(), "missing"),
                ("arguments.n".into(), "int_range"),
                ("arguments.inner.a".into(), "missing"),
                ("arguments.inner.b".into(), "int_type"),
                ("arguments.inner.z".into(), "extra_forbidden"),
                ("arguments.tags.0".into(), "string_type"),
                ("arguments.flag".into(), "bool_type"),
            ]
        );
        // a bad value is not also reported by the limits of its emptiest value
        assert_eq!(problems(json!({"name": 5})), vec![("arguments.name".into(), "string_type")]);
        assert_eq!(problems(json!({"name": ""})), vec![("arguments.name".into(), "string_too_short")]);
        assert_eq!(problems(json!({"name": null})), vec![("arguments.name".into(), "missing")]);
        assert_eq!(problems(json!([1])), vec![("arguments".into(), "dict_type")]);
    }

    #[test]
    fn text_leaves_are_parsed() {
        #[derive(Debug, Deserialize, garde::Validate)]
        struct Q {
            #[garde(skip)]
            n: i64,
            #[garde(skip)]
            on: bool,
        }
        let v = json!({"n": " 7", "on": "Yes"});
        let q: Q = read(&v, "query", Leaves::Text).unwrap();
        assert_eq!((q.n, q.on), (7, true));
        let kinds: Vec<&str> = read::<Q>(&json!({"n": "x", "on": "2"}), "query", Leaves::Text)
            .unwrap_err()
            .iter()
            .map(|e| e.kind)
            .collect();
        assert_eq!(kinds, ["int_parsing", "bool_parsing"]);
        assert_eq!(from_text::<bool>("off"), Ok(false));
    }

    #[test]
    fn field_names_are_in_declaration_order() {
        assert_eq!(field_names::<Args>(), ["name", "n", "inner", "tags", "flag"]);
    }
}
