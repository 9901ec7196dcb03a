//! The deserializer [`super::read`] reads with: over a JSON value, every location known, a
//! value read as the emptiest of its type where the plan says so.

use std::fmt;

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::rules::{kind_of, NOT_OBJECT, NOT_TEXT, ONE_OF, REQUIRED};
use super::{Leaves, Loc, Plan};

const NOT_BOOL: &str = "must be a boolean";
const NOT_INT: &str = "must be an integer";
const NOT_NUMBER: &str = "must be a number";
const NOT_LIST: &str = "must be a list";

/// A problem found while reading, located on the way out.
#[derive(Debug)]
pub struct Problem {
    /// Where (None until located on the way out).
    pub loc: Option<Loc>,
    /// The missing or unknown field of the struct at `loc`.
    pub field: Option<String>,
    /// An unknown field (left out when read again), else a value (read as the emptiest).
    pub unknown: bool,
    pub msg: String,
    pub kind: &'static str,
}

impl Problem {
    fn new(kind: &'static str, msg: &str) -> Self {
        Problem { loc: None, field: None, unknown: false, msg: msg.to_string(), kind }
    }

    fn at(mut self, loc: &Loc) -> Self {
        if self.loc.is_none() {
            self.loc = Some(loc.clone());
        }
        self
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for Problem {}

impl de::Error for Problem {
    fn custom<M: fmt::Display>(msg: M) -> Self {
        let msg = msg.to_string();
        Problem::new(kind_of(&msg), &msg)
    }

    fn missing_field(field: &'static str) -> Self {
        Problem { field: Some(field.to_string()), ..Problem::new("missing", REQUIRED) }
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        let msg = format!("unknown field (expected {})", expected.join(", "));
        Problem { field: Some(field.to_string()), unknown: true, ..Problem::new("extra_forbidden", &msg) }
    }

    /// A custom visitor's refusal is what it expects, as its message says.
    fn invalid_type(_: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        Problem::custom(expected)
    }
}

/// What every value of one reading shares.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    pub plan: &'a Plan,
    pub leaves: Leaves,
}

/// One value of the input (None: the emptiest value of whatever type reads it).
pub struct De<'a> {
    pub value: Option<&'a Value>,
    pub loc: Loc,
    pub ctx: Ctx<'a>,
}

impl<'a> De<'a> {
    fn emptied(&self) -> bool {
        self.value.is_none() || self.ctx.plan.emptied.contains(&self.loc)
    }

    fn text_leaves(&self) -> bool {
        self.ctx.leaves == Leaves::Text
    }

    fn problem(&self, kind: &'static str, msg: &str) -> Problem {
        Problem::new(kind, msg).at(&self.loc)
    }

    /// The value where one is required (null is a missing value).
    fn given(&self) -> Result<&'a Value, Problem> {
        match self.value {
            Some(Value::Null) | None => Err(self.problem("missing", REQUIRED)),
            Some(v) => Ok(v),
        }
    }

    fn entries(&self, map: Option<&'a Map<String, Value>>, fields: &[&'static str]) -> Entries<'a> {
        let mut items: Vec<(String, Option<&'a Value>)> = Vec::new();
        match map {
            Some(map) => {
                let dropped = |k: &String| self.ctx.plan.dropped.contains(&child_loc(&self.loc, k.clone()));
                items.extend(map.iter().filter(|(k, _)| !dropped(k)).map(|(k, v)| (k.clone(), Some(v))));
                // emptied fields that the input lacks (it missed them)
                for loc in &self.ctx.plan.emptied {
                    if let Some((last, parent)) = loc.split_last() {
                        if *parent == self.loc[..] && !map.contains_key(last) {
                            items.push((last.clone(), None));
                        }
                    }
                }
            }
            None => items.extend(fields.iter().map(|f| (f.to_string(), None))),
        }
        Entries { items: items.into_iter(), next: None, loc: self.loc.clone(), ctx: self.ctx }
    }

    fn int<V: Visitor<'a>>(self, v: V) -> Result<V::Value, Problem> {
        if self.emptied() {
            return v.visit_i64(0).map_err(|e: Problem| e.at(&self.loc));
        }
        let n = match self.given()? {
            Value::String(s) if self.text_leaves() => s.trim().parse::<i64>().ok(),
            value if !self.text_leaves() => value.as_i64(),
            _ => None,
        };
        let kind = if self.text_leaves() { "int_parsing" } else { "int_type" };
        let n = n.ok_or_else(|| self.problem(kind, NOT_INT))?;
        v.visit_i64(n).map_err(|e: Problem| e.at(&self.loc))
    }

    fn float<V: Visitor<'a>>(self, v: V) -> Result<V::Value, Problem> {
        if self.emptied() {
            return v.visit_f64(0.0).map_err(|e: Problem| e.at(&self.loc));
        }
        let n = match self.given()? {
            Value::String(s) if self.text_leaves() => s.trim().parse::<f64>().ok(),
            value if !self.text_leaves() => value.as_f64(),
            _ => None,
        };
        let kind = if self.text_leaves() { "float_parsing" } else { "float_type" };
        let n = n.ok_or_else(|| self.problem(kind, NOT_NUMBER))?;
        v.visit_f64(n).map_err(|e: Problem| e.at(&self.loc))
    }

    fn text<V: Visitor<'a>>(self, v: V) -> Result<V::Value, Problem> {
        if self.emptied() {
            return v.visit_str("").map_err(|e: Problem| e.at(&self.loc));
        }
        match self.given()? {
            Value::String(s) => v.visit_borrowed_str(s).map_err(|e: Problem| e.at(&self.loc)),
            _ => Err(self.problem("string_type", NOT_TEXT)),
        }
    }

    fn list<V: Visitor<'a>>(self, v: V) -> Result<V::Value, Problem> {
        let list: &'a [Value] = match self.value {
            _ if self.emptied() => &[],
            _ => match self.given()? {
                Value::Array(list) => list,
                _ => return Err(self.problem("list_type", NOT_LIST)),
            },
        };
        let items = Items { items: list.iter().enumerate(), loc: self.loc.clone(), ctx: self.ctx };
        v.visit_seq(items).map_err(|e: Problem| e.at(&self.loc))
    }
}

fn child_loc(loc: &Loc, key: String) -> Loc {
    let mut l = loc.clone();
    l.push(key);
    l
}

/// Deserializer methods that read through one of [`De`]'s helpers.
macro_rules! forward {
    ($($helper:ident: $($method:ident)+;)+) => {
        $($(
            fn $method<V: Visitor<'a>>(self, v: V) -> Result<V::Value, Problem> {
                self.$helper(v)
            }
        )+)+
    };
}

impl<'a> de::Deserializer<'a> for De<'a> {
    type Error = Problem;

    fn deserialize_any<V: Visitor<'a>>(self, v: V) -> Result<V::Value, Problem> {
        let loc = self.loc.clone();
        let value = match self.value {
            Some(value) if !self.emptied() => value,
            _ => return v.visit_none().map_err(|e: Problem| e.at(&loc)),
        };
        match value {
            Value::Null => v.visit_unit(),
            Value::Bool(b) => v.visit_bool(*b),
            Value::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => v.visit_i64(i),
                (None, Some(u)) => v.visit_u64(u),
                _ => v.visit_f64(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => v.visit_borrowed_str(s),
            Value::Array(_) => self.list(v),
            Value::Object(map) => v.visit_map(self.entries(Some(map), &[])),
        }
        .map_err(|e: Problem| e.at(&loc))
    }

    fn deserialize_bool<V: Visitor<'a>>(self, v: V) -> Result<V::Value, Problem> {
        if self.emptied() {
            return v.visit_bool(false).map_err(|e: Problem| e.at(&self.loc));
        }
        let b = match self.given()? {
            Value::String(s) if self.text_leaves() => match s.to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => Some(true),
                "false" | "0" | "no" | "off" => Some(false),
                _ => None,
            },
            value => value.as_bool(),
        };
        let kind = if self.text_leaves() { "bool_parsing" } else { "bool_type" };
        let b = b.ok_or_else(|| self.problem(kind, NOT_BOOL))?;
        v.visit_bool(b).map_err(|e: Problem| e.at(&self.loc))
    }

    forward! {
        int: deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
             deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64;
        float: deserialize_f32 deserialize_f64;
        text: deserialize_char deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
              deserialize_identifier;
        list: deserialize_seq;
    }

    fn deserialize_option<V: Visitor<'a>>(self, v: V) -> Result<V::Value, Problem> {
        let loc = self.loc.clone();
        match self.value {
            _ if self.emptied() => v.visit_none(),
            Some(Value::Null) | None => v.visit_none(),
            Some(_) => v.visit_some(self),
        }
        .map_err(|e: Problem| e.at(&loc))
    }

    fn deserialize_unit<V: Visitor<'a>>(self, v: V) -> Result<V::Value, Problem> {
        if self.emptied() || self.value.is_some_and(Value::is_null) {
            return v.visit_unit().map_err(|e: Problem| e.at(&self.loc));
        }
        self.deserialize_any(v)
    }

    fn deserialize_unit_struct<V: Visitor<'a>>(self, _name: &'static str, v: V) -> Result<V::Value, Problem> {
        self.deserialize_unit(v)
    }

    fn deserialize_newtype_struct<V: Visitor<'a>>(self, _name: &'static str, v: V) -> Result<V::Value, Problem> {
        let loc = self.loc.clone();
        v.visit_newtype_struct(self).map_err(|e: Problem| e.at(&loc))
    }

    fn deserialize_tuple<V: Visitor<'a>>(self, _len: usize, v: V) -> Result<V::Value, Problem> {
        self.list(v)
    }

    fn deserialize_tuple_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _len: usize,
        v: V,
    ) -> Result<V::Value, Problem> {
        self.list(v)
    }

    fn deserialize_map<V: Visitor<'a>>(self, v: V) -> Result<V::Value, Problem> {
        self.deserialize_struct("", &[], v)
    }

    fn deserialize_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Problem> {
        if !fields.is_empty() {
            self.ctx.plan.fields.borrow_mut().insert(self.loc.clone(), fields);
        }
        if self.emptied() {
            return v.visit_map(self.entries(None, fields)).map_err(|e: Problem| e.at(&self.loc));
        }
        match self.given()? {
            Value::Object(map) => v.visit_map(self.entries(Some(map), fields)).map_err(|e: Problem| e.at(&self.loc)),
            _ => Err(self.problem("dict_type", NOT_OBJECT)),
        }
    }

    fn deserialize_enum<V: Visitor<'a>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Problem> {
        let chosen = match self.value {
            _ if self.emptied() => variants.first().copied().unwrap_or_default(),
            _ => match self.given()? {
                Value::String(s) if variants.contains(&s.as_str()) => s.as_str(),
                Value::String(_) => return Err(self.problem("enum", &format!("{ONE_OF} {}", variants.join(", ")))),
                _ => return Err(self.problem("string_type", NOT_TEXT)),
            },
        };
        let variant: de::value::StrDeserializer<'_, Problem> = chosen.into_deserializer();
        v.visit_enum(variant).map_err(|e: Problem| e.at(&self.loc))
    }

    fn deserialize_ignored_any<V: Visitor<'a>>(self, v: V) -> Result<V::Value, Problem> {
        v.visit_unit()
    }
}

/// The fields of an object, and of the emptiest value of a struct.
struct Entries<'a> {
    items: std::vec::IntoIter<(String, Option<&'a Value>)>,
    next: Option<(String, Option<&'a Value>)>,
    loc: Loc,
    ctx: Ctx<'a>,
}

impl<'a> MapAccess<'a> for Entries<'a> {
    type Error = Problem;

    fn next_key_seed<K: DeserializeSeed<'a>>(&mut self, seed: K) -> Result<Option<K::Value>, Problem> {
        let Some((key, value)) = self.items.next() else { return Ok(None) };
        let name: de::value::StringDeserializer<Problem> = key.clone().into_deserializer();
        self.next = Some((key, value));
        seed.deserialize(name).map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'a>>(&mut self, seed: S) -> Result<S::Value, Problem> {
        let (key, value) = self.next.take().unwrap_or_default();
        let loc = child_loc(&self.loc, key);
        let child = De { value, loc: loc.clone(), ctx: self.ctx };
        seed.deserialize(child).map_err(|e: Problem| e.at(&loc))
    }
}

/// The items of a list.
struct Items<'a> {
    items: std::iter::Enumerate<std::slice::Iter<'a, Value>>,
    loc: Loc,
    ctx: Ctx<'a>,
}

impl<'a> SeqAccess<'a> for Items<'a> {
    type Error = Problem;

    fn next_element_seed<S: DeserializeSeed<'a>>(&mut self, seed: S) -> Result<Option<S::Value>, Problem> {
        let Some((i, value)) = self.items.next() else { return Ok(None) };
        let loc = child_loc(&self.loc, i.to_string());
        let child = De { value: Some(value), loc: loc.clone(), ctx: self.ctx };
        seed.deserialize(child).map(Some).map_err(|e: Problem| e.at(&loc))
    }
}
