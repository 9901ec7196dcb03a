//! Fuzzes every operation of the OpenAPI document: JSON bodies generated from the request schemas (valid-ish,
//! then mutated), raw body bytes, query strings and path parameters. Whatever arrives, the server must answer
//! 2xx or 4xx (never 5xx, never a dropped connection), every 4xx must be the JSON error envelope carrying the
//! request id, and a rejected request (and any GET) must leave every table untouched.
//!
//! Cases come from proptest strategies drawn with a deterministic runner, so every run sends the same requests.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::common::TestApp;
use mnemo::RuntimeConfig;
use proptest::prelude::*;
use proptest::strategy::{Union, ValueTree};
use proptest::test_runner::TestRunner;
use reqwest::header::{HeaderValue, CONTENT_TYPE};
use reqwest::Method;
use serde_json::{json, Map, Value};

/// Cases per operation and phase; `MNEMO_FUZZ_CASES` raises it for a longer local run.
const CASES: usize = 64;
/// Largest body the test server accepts (the default limit).
const BODY_LIMIT: usize = 1024 * 1024;
/// Subject ids the generators prefer, so ingest, compile, context and reads meet the same rows.
const SUBJECTS: &[&str] = &["user:1", "user:2", "user:fuzz"];
/// The subject whose memories and receipt are seeded (never erased by the path phase).
const SEEDED: &str = "user:1";

type Gen<T> = BoxedStrategy<T>;

fn cases() -> usize {
    std::env::var("MNEMO_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(CASES)
}

fn weighted<T: std::fmt::Debug + 'static>(arms: Vec<(u32, Gen<T>)>) -> Gen<T> {
    Union::new_weighted(arms).boxed()
}

// ---------------------------------------------------------------------------------------------------------------
// The operations, read from the OpenAPI document.

struct Param {
    name: String,
    required: bool,
    schema: Value,
}

struct Operation {
    method: Method,
    path: String,
    body: Option<Value>,
    query: Vec<Param>,
    path_params: Vec<String>,
}

impl Operation {
    fn label(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    /// The path with every parameter replaced by `segment(name)`.
    fn fill(&self, mut segment: impl FnMut(&str) -> String) -> String {
        let mut out = self.path.clone();
        for name in &self.path_params {
            out = out.replace(&format!("{{{name}}}"), &segment(name));
        }
        out
    }
}

fn operations(doc: &Value) -> Vec<Operation> {
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let mut query = Vec::new();
            let mut path_params = Vec::new();
            for p in op["parameters"].as_array().into_iter().flatten() {
                let name = p["name"].as_str().unwrap().to_string();
                match p["in"].as_str() {
                    Some("query") => {
                        query.push(Param { name, required: p["required"] == true, schema: p["schema"].clone() })
                    }
                    Some("path") => path_params.push(name),
                    _ => {}
                }
            }
            ops.push(Operation {
                method: method.to_uppercase().parse().unwrap(),
                path: path.clone(),
                body: op.pointer("/requestBody/content/application~1json/schema").cloned(),
                query,
                path_params,
            });
        }
    }
    ops
}

/// The document with every `allOf` schema (a struct with fields flattened in) merged into one
/// object schema: the members' properties and required fields together.
fn merged_all_of(doc: Value) -> Value {
    fn merge(v: &mut Value, doc: &Value) {
        match v {
            Value::Object(m) => {
                if let Some(Value::Array(members)) = m.remove("allOf") {
                    let (mut props, mut required) = (serde_json::Map::new(), Vec::new());
                    for member in &members {
                        let member = resolve(member, doc);
                        props.extend(member["properties"].as_object().cloned().unwrap_or_default());
                        required.extend(member["required"].as_array().cloned().unwrap_or_default());
                    }
                    m.insert("type".into(), json!("object"));
                    m.insert("properties".into(), Value::Object(props));
                    m.insert("required".into(), Value::Array(required));
                }
                m.values_mut().for_each(|c| merge(c, doc));
            }
            Value::Array(items) => items.iter_mut().for_each(|c| merge(c, doc)),
            _ => {}
        }
    }
    let mut out = doc.clone();
    merge(&mut out, &doc);
    out
}

/// Follows `$ref`s, and reads a nullable alternative (OpenAPI 3.1 writes an optional reference as
/// `oneOf: [{type: null}, {$ref: ...}]`) as the schema it makes nullable.
fn resolve<'a>(schema: &'a Value, doc: &'a Value) -> &'a Value {
    if let Some(target) = schema["$ref"].as_str().and_then(|r| doc.pointer(r.trim_start_matches('#'))) {
        return resolve(target, doc);
    }
    for key in ["oneOf", "anyOf"] {
        let alternatives: Vec<&Value> =
            schema[key].as_array().into_iter().flatten().filter(|a| a["type"] != "null").collect();
        if let [only] = alternatives[..] {
            return resolve(only, doc);
        }
    }
    schema
}

/// The schema's type other than `null` (OpenAPI 3.1 writes a nullable string as `type: [string, null]`).
fn type_of(s: &Value) -> Option<&str> {
    match &s["type"] {
        Value::Array(types) => types.iter().filter_map(Value::as_str).find(|t| *t != "null"),
        t => t.as_str(),
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Strings, numbers and free-form JSON.

#[rustfmt::skip]
const NASTY_CHARS: &[char] = &[
    '\0', '\u{1}', '\u{8}', '\u{1b}', '\u{1f}', '\u{7f}', '\u{85}', '\u{a0}', '\u{200b}', '\u{202e}', '\u{2028}',
    '\u{feff}', '\u{fffd}', '\u{ffff}', '\u{10ffff}', '😀', '𝕏', 'é', 'ß', '中', '"', '\\', '\'', '%', '/', '?', '#',
    '&', '=', '+', '\n', '\r', '\t', ' ', '<', '>', ';', '*', ':', '|', '!', '(', ')', '.',
];

#[rustfmt::skip]
const WORDS: &[&str] = &[
    "I", "my", "name", "is", "live", "in", "Paris", "Quito", "work", "at", "Acme", "prefer", "tea", "coffee", "not",
    "anymore", "moved", "to", "dog", "Rex", "since", "2026-01-02", "yesterday", "always", "never", "how", "do",
    "deploy", "step", "1.", "the", "user", "and", "é", "😀", "!", "?",
];

/// One character: mostly plain, sometimes wide, arbitrary or hostile. `valid` excludes NUL.
fn character(valid: bool) -> Gen<char> {
    weighted(vec![
        (6, prop::char::range('a', 'z').boxed()),
        (1, prop::char::range('\u{1F300}', '\u{1FAFF}').boxed()),
        (2, any::<char>().boxed()),
        (2, prop::sample::select(NASTY_CHARS).boxed()),
    ])
    .prop_filter("no NUL in valid text", move |c| !valid || *c != '\0')
    .boxed()
}

/// A string of `min..=max` characters: short, at the bounds, or all four-byte characters at the maximum.
fn text(min: usize, max: usize, valid: bool) -> Gen<String> {
    let short = min..=max.min(min + 24);
    let len = weighted(vec![(6, short.boxed()), (1, Just(min).boxed()), (1, Just(max).boxed())]);
    weighted(vec![
        (8, len.prop_flat_map(move |n| prop::collection::vec(character(valid), n)).prop_map(String::from_iter).boxed()),
        (1, widest(max)),
    ])
}

/// The longest string allowed, in four-byte characters (which also defeat compression).
fn widest(max: usize) -> Gen<String> {
    prop::collection::vec(prop::char::range('\u{10000}', '\u{10FFFF}'), max).prop_map(String::from_iter).boxed()
}

fn sentence() -> Gen<String> {
    prop::collection::vec(prop::sample::select(WORDS), 1..16).prop_map(|w| w.join(" ")).boxed()
}

fn special_number() -> Gen<Value> {
    let numbers = vec![
        json!(0),
        json!(-1),
        json!(1.5),
        json!(-0.0),
        json!(1e308),
        json!(-1e308),
        json!(5e-324),
        json!(1e20),
        json!(4000.0),
        json!(i64::MAX),
        json!(i64::MIN),
        json!(u64::MAX),
        json!(9_007_199_254_740_993_u64),
        json!(2_147_483_648_u64),
        json!(128_001),
    ];
    prop::sample::select(numbers).boxed()
}

/// Any JSON value, up to a few levels deep. `valid` keeps NUL out of strings and keys.
fn json_value(valid: bool) -> Gen<Value> {
    let leaf = weighted(vec![
        (1, Just(Value::Null).boxed()),
        (1, any::<bool>().prop_map(Value::from).boxed()),
        (2, any::<i64>().prop_map(Value::from).boxed()),
        (1, any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f).map(Value::Number)).boxed()),
        (1, special_number()),
        (3, text(0, 24, valid).prop_map(Value::from).boxed()),
    ]);
    leaf.prop_recursive(4, 24, 5, move |inner| {
        weighted(vec![
            (1, prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array).boxed()),
            (1, free_object(text(0, 12, valid), inner)),
        ])
    })
    .boxed()
}

fn free_object(keys: Gen<String>, values: Gen<Value>) -> Gen<Value> {
    prop::collection::vec((keys, values), 0..5).prop_map(|kv| Value::Object(kv.into_iter().collect())).boxed()
}

fn datetime() -> Gen<String> {
    #[rustfmt::skip]
    const EDGES: &[&str] = &[
        "0000-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z", "-4713-11-24T00:00:00",
        "-4714-11-23T00:00:00", "-5000-01-01T00:00:00", "-262143-01-01T00:00:00", "+262142-12-31T23:59:59",
        "+294277-01-01T00:00:00", "1970-01-01T00:00:00+23:59", "1970-01-01T00:00:00-23:59", "2026-02-30T00:00:00Z",
        "2026-13-01", "2026-01-01T24:00:00Z", "2026-03-02T10:00:60Z", "2026-03-02T10:00:00.1234567891Z",
        "2026-03-02 10:00:00+02:00", "2026-03-02T10:00", "1999-12-31", "now", "",
    ];
    let parts = (1970i32..2100, 1u32..=12, 1u32..=28, 0u32..24, 0u32..60, 0u32..60, 0u32..1_000_000);
    weighted(vec![
        (
            6,
            parts
                .prop_map(|(y, mo, d, h, mi, s, us)| format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{us:06}Z"))
                .boxed(),
        ),
        (3, prop::sample::select(EDGES).prop_map(str::to_string).boxed()),
    ])
}

// ---------------------------------------------------------------------------------------------------------------
// Valid-ish values from a schema.

/// How a valid-ish value is drawn: typical sizes, or every field present at its largest.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Typical,
    Extreme,
}

fn from_schema(schema: &Value, doc: &Value, name: &str, mode: Mode) -> Gen<Value> {
    let s = resolve(schema, doc);
    let extreme = mode == Mode::Extreme;
    let max_len = s["maxLength"].as_u64().unwrap_or(if name == "subject_id" { 256 } else { 64 }) as usize;
    if let Some(options) = s["enum"].as_array() {
        return prop::sample::select(options.clone()).boxed();
    }
    match type_of(s) {
        Some("string") if extreme && s["format"] != "date-time" => widest(max_len).prop_map(Value::from).boxed(),
        Some("string") if name == "subject_id" => weighted(vec![
            (3, prop::sample::select(SUBJECTS).prop_map(Value::from).boxed()),
            (1, text(1, max_len, true).prop_map(Value::from).boxed()),
        ]),
        // Documented as datetimes in prose only.
        Some("string") if s["format"] == "date-time" || ["since", "until"].contains(&name) => {
            datetime().prop_map(Value::from).boxed()
        }
        Some("string") => {
            let min = s["minLength"].as_u64().unwrap_or(0) as usize;
            text(min, max_len, true).prop_map(Value::from).boxed()
        }
        Some("object") => match s["properties"].as_object() {
            Some(props) => object_from_schema(s, props, doc, mode),
            None => free_form(name),
        },
        Some("array") => {
            let min = s["minItems"].as_u64().unwrap_or(0) as usize;
            let items = from_schema(&s["items"], doc, name, mode);
            let len = match (extreme, s["maxItems"].as_u64()) {
                (true, Some(max)) => prop::sample::select(vec![min, max as usize]).boxed(),
                (_, max) => (min..=max.map_or(min + 3, |m| (m as usize).min(min + 3))).boxed(),
            };
            len.prop_flat_map(move |n| prop::collection::vec(items.clone(), n)).prop_map(Value::Array).boxed()
        }
        Some("integer") => {
            let (min, max) = (s["minimum"].as_i64().unwrap_or(-1000), s["maximum"].as_i64().unwrap_or(1000));
            weighted(vec![
                (if extreme { 1 } else { 4 }, (min..=max).prop_map(Value::from).boxed()),
                (1, Just(json!(min)).boxed()),
                (1, Just(json!(max)).boxed()),
            ])
        }
        Some("number") => {
            any::<f64>().prop_filter_map("finite", serde_json::Number::from_f64).prop_map(Value::Number).boxed()
        }
        Some("boolean") => any::<bool>().prop_map(Value::from).boxed(),
        _ => json_value(true),
    }
}

fn object_from_schema(schema: &Value, props: &Map<String, Value>, doc: &Value, mode: Mode) -> Gen<Value> {
    let required: Vec<&str> = schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let mut fields: Vec<Gen<Option<(String, Value)>>> = Vec::new();
    for (name, sub) in props {
        let key = name.clone();
        let value = from_schema(sub, doc, name, mode).prop_map(move |v| Some((key.clone(), v))).boxed();
        if required.contains(&name.as_str()) || mode == Mode::Extreme {
            fields.push(value);
        } else {
            let key = name.clone();
            fields.push(weighted(vec![
                (3, Just(None).boxed()),
                (4, value),
                (1, Just(Some((key, Value::Null))).boxed()),
            ]));
        }
    }
    fields.prop_map(|f| Value::Object(f.into_iter().flatten().collect())).boxed()
}

/// A schema-less object. Episode payloads mostly look like chat messages so compile has something to read;
/// a few carry as many distinct words as fit in a body (about 850 KB of text).
fn free_form(name: &str) -> Gen<Value> {
    let any_object = free_object(text(0, 12, true), json_value(true));
    if name != "payload" {
        return any_object;
    }
    let role = prop::sample::select(&["user", "assistant", "system", "tool", "bogus"][..]);
    let messages = prop::collection::vec((role, sentence()), 1..4).prop_map(|m| {
        let m: Vec<Value> = m.into_iter().map(|(role, content)| json!({"role": role, "content": content})).collect();
        json!({ "messages": m })
    });
    let many_words =
        Just(()).prop_map(|()| json!({ "text": (0..120_000).map(|i| format!("w{i} ")).collect::<String>() }));
    weighted(vec![
        (6, messages.boxed()),
        (2, sentence().prop_map(|t| json!({ "text": t })).boxed()),
        (4, any_object),
        (1, many_words.boxed()),
    ])
}

// ---------------------------------------------------------------------------------------------------------------
// Mutations of a valid-ish body.

#[derive(Debug, Clone)]
enum Seg {
    Key(String),
    Index(usize),
}

/// Paths of the nodes a schema describes (free-form objects contribute their direct children only).
fn node_paths(v: &Value, schema: &Value, doc: &Value, prefix: &mut Vec<Seg>, out: &mut Vec<Vec<Seg>>) {
    let s = resolve(schema, doc);
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                prefix.push(Seg::Key(k.clone()));
                out.push(prefix.clone());
                if let Some(sub) = s["properties"].get(k) {
                    node_paths(child, sub, doc, prefix, out);
                }
                prefix.pop();
            }
        }
        Value::Array(items) if s.get("items").is_some() => {
            for (i, child) in items.iter().enumerate() {
                prefix.push(Seg::Index(i));
                out.push(prefix.clone());
                node_paths(child, &s["items"], doc, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn node<'a>(v: &'a Value, path: &[Seg]) -> Option<&'a Value> {
    path.iter().try_fold(v, |node, seg| match seg {
        Seg::Key(k) => node.get(k.as_str()),
        Seg::Index(i) => node.get(*i),
    })
}

fn node_mut<'a>(v: &'a mut Value, path: &[Seg]) -> &'a mut Value {
    path.iter().fold(v, |node, seg| match seg {
        Seg::Key(k) => &mut node[k.as_str()],
        Seg::Index(i) => &mut node[*i],
    })
}

#[derive(Debug, Clone)]
enum Junk {
    Value(Value),
    /// The old value inside an array.
    Wrap,
    /// A string of about this many bytes of one character.
    Huge(usize, char),
    /// The old value nested this deep in arrays (true) or objects (false).
    Nest(usize, bool),
}

impl Junk {
    fn build(&self, old: Value) -> Value {
        match self {
            Junk::Value(v) => v.clone(),
            Junk::Wrap => Value::Array(vec![old]),
            Junk::Huge(n, c) => Value::String(std::iter::repeat_n(*c, n.div_ceil(c.len_utf8())).collect()),
            Junk::Nest(depth, true) => (0..*depth).fold(old, |inner, _| json!([inner])),
            Junk::Nest(depth, false) => (0..*depth).fold(old, |inner, _| json!({ "a": inner })),
        }
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    /// Replace the picked node.
    Set(usize, Junk),
    /// Remove the picked node from its parent.
    Remove(usize),
    /// Add an unknown field to the picked object (or the top level).
    Extra(usize, String, Value),
    /// Replace the whole body.
    Whole(Junk),
}

fn junk() -> Gen<Junk> {
    let huge_len = prop::sample::select(&[129usize, 257, 513, 4_001, 65_536, BODY_LIMIT + 1][..]);
    let huge_char = prop::sample::select(&['a', 'é', '😀', '\0', ' '][..]);
    let depth = prop::sample::select(&[16usize, 127, 128, 129, 1_000][..]);
    let empties = prop::sample::select(vec![json!(""), json!({}), json!([]), Value::Null, json!([{}])]);
    weighted(vec![
        (4, json_value(false).prop_map(Junk::Value).boxed()),
        (2, special_number().prop_map(Junk::Value).boxed()),
        (2, text(0, 40, false).prop_map(|s| Junk::Value(Value::String(s))).boxed()),
        (1, empties.prop_map(Junk::Value).boxed()),
        (1, Just(Junk::Wrap).boxed()),
        (1, (huge_len, huge_char).prop_map(|(n, c)| Junk::Huge(n, c)).boxed()),
        (1, (depth, any::<bool>()).prop_map(|(d, a)| Junk::Nest(d, a)).boxed()),
    ])
}

fn mutation() -> Gen<Mutation> {
    weighted(vec![
        (6, (any::<usize>(), junk()).prop_map(|(at, j)| Mutation::Set(at, j)).boxed()),
        (3, any::<usize>().prop_map(Mutation::Remove).boxed()),
        (
            2,
            (any::<usize>(), text(0, 16, false), json_value(false))
                .prop_map(|(at, k, v)| Mutation::Extra(at, k, v))
                .boxed(),
        ),
        (1, junk().prop_map(Mutation::Whole).boxed()),
    ])
}

fn mutate(body: &mut Value, m: &Mutation, schema: &Value, doc: &Value) {
    let mut paths = Vec::new();
    node_paths(body, schema, doc, &mut Vec::new(), &mut paths);
    match m {
        Mutation::Set(at, j) if !paths.is_empty() => {
            let node = node_mut(body, &paths[at % paths.len()]);
            *node = j.build(node.take());
        }
        Mutation::Remove(at) if !paths.is_empty() => {
            let path = &paths[at % paths.len()];
            let parent = node_mut(body, &path[..path.len() - 1]);
            match (&path[path.len() - 1], parent) {
                (Seg::Key(k), Value::Object(o)) => {
                    o.remove(k);
                }
                (Seg::Index(i), Value::Array(a)) => {
                    a.remove(*i);
                }
                _ => {}
            }
        }
        Mutation::Extra(at, key, value) => {
            let mut objects: Vec<&[Seg]> = vec![&[]];
            objects.extend(paths.iter().map(Vec::as_slice).filter(|p| node(body, p).is_some_and(Value::is_object)));
            let target = node_mut(body, objects[at % objects.len()]);
            if let Value::Object(o) = target {
                o.insert(key.clone(), value.clone());
            }
        }
        Mutation::Set(_, j) | Mutation::Whole(j) => *body = j.build(body.take()),
        Mutation::Remove(_) => *body = Value::Null,
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Raw body bytes.

#[rustfmt::skip]
const RAW_VALUES: &[&str] = &[
    "1e400", "-1e400", "1e309", "123456789012345678901234567890", "-0", "NaN", "Infinity", "-Infinity", "01", ".5",
    "1.", "+1", "0x10", "\"\\ud800\"", "\"\\udc00x\"", "\"\\u0000\"", "\"a\u{1}b\"", "\"\\uD83D\\uDE00\"",
    "'single'", "undefined", "[1,]", "{\"a\":1,}", "/*c*/1", "true false", "\"\\x41\"", "\"\\q\"", "\"unterminated",
];

#[derive(Debug, Clone)]
enum Raw {
    Empty,
    Truncate(usize),
    Bytes(Vec<u8>),
    Bom,
    InvalidUtf8(usize),
    /// Replace the picked node with raw JSON text.
    Splice(usize, String),
    TopLevel(&'static str),
    Oversized(u8),
}

fn raw() -> Gen<Raw> {
    let deep = prop::sample::select(&[129usize, 10_000, 100_000][..])
        .prop_map(|n| format!("{}{}", "[".repeat(n), "]".repeat(n)));
    let splice_text =
        weighted(vec![(6, prop::sample::select(RAW_VALUES).prop_map(str::to_string).boxed()), (1, deep.boxed())]);
    let top = prop::sample::select(
        &["null", "[]", "\"text\"", "0", "true", "[{}]", "{}", " ", "\n{}\n", "{}{}", "{\"a\"}"][..],
    );
    weighted(vec![
        (1, Just(Raw::Empty).boxed()),
        (2, any::<usize>().prop_map(Raw::Truncate).boxed()),
        (2, prop::collection::vec(any::<u8>(), 0..64).prop_map(Raw::Bytes).boxed()),
        (1, Just(Raw::Bom).boxed()),
        (2, any::<usize>().prop_map(Raw::InvalidUtf8).boxed()),
        (5, (any::<usize>(), splice_text).prop_map(|(at, t)| Raw::Splice(at, t)).boxed()),
        (2, top.prop_map(Raw::TopLevel).boxed()),
        (1, any::<u8>().prop_map(Raw::Oversized).boxed()),
    ])
}

fn raw_bytes(valid: &Value, r: &Raw, schema: &Value, doc: &Value) -> Vec<u8> {
    const MARKER: &str = "__mnemo_fuzz_raw__";
    let bytes = serde_json::to_vec(valid).unwrap();
    match r {
        Raw::Empty => Vec::new(),
        Raw::Truncate(at) => bytes[..at % bytes.len().max(1)].to_vec(),
        Raw::Bytes(b) => b.clone(),
        Raw::Bom => [&b"\xEF\xBB\xBF"[..], &bytes].concat(),
        Raw::InvalidUtf8(at) => {
            let mut b = bytes;
            b.insert(at % (b.len() + 1), 0xFF);
            b
        }
        Raw::Splice(at, text) => {
            let mut body = valid.clone();
            let mut paths = Vec::new();
            node_paths(&body, schema, doc, &mut Vec::new(), &mut paths);
            match paths.get(at % paths.len().max(1)) {
                Some(p) => *node_mut(&mut body, p) = json!(MARKER),
                None => body = json!(MARKER),
            }
            serde_json::to_string(&body).unwrap().replace(&format!("\"{MARKER}\""), text).into_bytes()
        }
        Raw::TopLevel(t) => t.as_bytes().to_vec(),
        Raw::Oversized(b) => vec![*b; BODY_LIMIT + 1],
    }
}

fn content_type() -> Gen<Option<&'static str>> {
    let options = vec![
        Some("application/json"),
        Some("application/json; charset=utf-8"),
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
    ];
    weighted(vec![(4, Just(Some("application/json")).boxed()), (2, prop::sample::select(options).boxed())])
}

// ---------------------------------------------------------------------------------------------------------------
// Query strings and path segments.

fn encode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Percent-encodes every byte (which may leave invalid UTF-8 once decoded).
fn percent_all(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "%{b:02X}");
        out
    })
}

/// Percent-encodes every byte outside the unreserved set.
fn encode_segment(s: &str) -> String {
    s.bytes().fold(String::new(), |mut out, b| {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
        out
    })
}

#[rustfmt::skip]
const INT_JUNK: &[&str] = &[
    "0", "-1", "2147483647", "2147483648", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
    "1e3", "1.0", "0x10", " 5", "5 ", "+5", "１", "", "NaN",
];
const BOOL_JUNK: &[&str] = &["TRUE", "yes", "On", "2", "", "true\0", "t", "null"];
#[rustfmt::skip]
const RAW_QUERY: &[&str] = &[
    "%ZZ", "%", "&&", "=", "a=b=c", "%FF=%FE", "subject_id", "limit", "limit=1&limit=9999", "subject_id=%00",
    "subject_id=&subject_id=user:1", "+", ";", "%C0%AF", "api_key=x", "%00=%00",
];

/// A schema value for a documented query parameter, as query text.
fn query_text(p: &Param, doc: &Value) -> Gen<String> {
    from_schema(&p.schema, doc, &p.name, Mode::Typical)
        .prop_map(|v| match v {
            Value::String(s) => encode(&s),
            other => encode(&other.to_string()),
        })
        .boxed()
}

/// A valid-ish value for a documented query parameter (None: leave it out).
fn valid_query_value(p: &Param, doc: &Value) -> Gen<Option<String>> {
    let valid = query_text(p, doc).prop_map(Some).boxed();
    if p.required {
        valid
    } else {
        weighted(vec![(1, Just(None).boxed()), (1, valid)])
    }
}

/// Any value for a documented query parameter (None: leave it out), already encoded.
fn query_value(p: &Param, doc: &Value) -> Gen<Option<String>> {
    let arms = vec![
        (if p.required { 1 } else { 4 }, Just(None).boxed()),
        (6, query_text(p, doc).prop_map(Some).boxed()),
        (2, text(0, 40, false).prop_map(|s| Some(encode(&s))).boxed()),
        (1, prop::sample::select(INT_JUNK).prop_map(|s| Some(encode(s))).boxed()),
        (1, prop::sample::select(BOOL_JUNK).prop_map(|s| Some(encode(s))).boxed()),
        (1, datetime().prop_map(|s| Some(encode(&s))).boxed()),
        (1, prop::sample::select(&[257usize, 4_001, 20_000][..]).prop_map(|n| Some("x".repeat(n))).boxed()),
    ];
    weighted(arms)
}

/// Harmless unknown parameters.
fn unknown_params() -> Gen<Vec<String>> {
    prop::collection::vec("[a-z_]{1,10}=[a-z0-9]{0,10}", 0..2).boxed()
}

/// Extra query text: unknown parameters and raw junk.
fn query_extras() -> Gen<Vec<String>> {
    let unknown = (text(0, 12, false), text(0, 24, false)).prop_map(|(k, v)| format!("{}={}", encode(&k), encode(&v)));
    let item =
        weighted(vec![(2, unknown.boxed()), (1, prop::sample::select(RAW_QUERY).prop_map(str::to_string).boxed())]);
    weighted(vec![(2, Just(Vec::new()).boxed()), (1, prop::collection::vec(item, 1..4).boxed())])
}

#[rustfmt::skip]
const PATH_JUNK: &[&str] = &[
    "%00", "a%00b", "%FF", "%C0%AF", "%ED%A0%80", "%2F", "a%2Fb", "%2e%2e", "%25", "%", "%G1", "%E2%80%AE",
    "%F0%9F%98%80", "%20", "+", "~", "null", "00000000-0000-0000-0000-000000000000", "00000000000000000000000000",
    "ZZZZZZZZZZZZZZZZZZZZZZZZZZ", "-1", "0",
];

/// A path segment, already encoded: a known id, a well-formed random id, or junk.
fn segment(known: Vec<String>) -> Gen<String> {
    let mut arms = vec![
        (1, any::<u128>().prop_map(|n| uuid::Uuid::from_u128(n).to_string()).boxed()),
        (1, any::<u128>().prop_map(|n| ulid::Ulid(n).to_string()).boxed()),
        (2, text(1, 40, false).prop_map(|s| encode_segment(&s)).boxed()),
        (1, prop::collection::vec(any::<u8>(), 1..12).prop_map(|b| percent_all(&b)).boxed()),
        (3, prop::sample::select(PATH_JUNK).prop_map(str::to_string).boxed()),
        (1, prop::sample::select(&[257usize, 1_000, 5_000][..]).prop_map(|n| "x".repeat(n)).boxed()),
    ];
    if !known.is_empty() {
        arms.push((3, prop::sample::select(known).boxed()));
    }
    weighted(arms)
}

fn tenant() -> Gen<Option<Vec<u8>>> {
    let odd = vec![
        b"acme".to_vec(),
        Vec::new(),
        b"   ".to_vec(),
        vec![b'x'; 256],
        vec![b'x'; 257],
        "café".as_bytes().to_vec(),
        b"a\tb".to_vec(),
        vec![0xFF],
    ];
    weighted(vec![(12, Just(None).boxed()), (1, prop::sample::select(odd).prop_map(Some).boxed())])
}

// ---------------------------------------------------------------------------------------------------------------
// Sending a case and judging the answer.

#[derive(Clone)]
struct Case {
    method: Method,
    target: String,
    tenant: Option<Vec<u8>>,
    content_type: Option<&'static str>,
    body: Option<Vec<u8>>,
}

impl Case {
    fn new(method: Method, target: String) -> Self {
        Case { method, target, tenant: None, content_type: None, body: None }
    }

    fn json(mut self, body: &Value) -> Self {
        self.body = Some(serde_json::to_vec(body).unwrap());
        self.content_type = Some("application/json");
        self
    }

    fn describe(&self) -> String {
        let mut out = format!("{} {}", self.method, clip(&self.target, 300));
        if let Some(t) = &self.tenant {
            let _ = write!(out, " [X-Tenant-ID: {}]", clip(&String::from_utf8_lossy(t), 40));
        }
        if let Some(ct) = self.content_type {
            let _ = write!(out, " [Content-Type: {ct}]");
        }
        if let Some(b) = &self.body {
            let text = match std::str::from_utf8(b) {
                Ok(t) if !t.chars().any(char::is_control) => t.to_string(),
                _ => format!("{:?} (Rust string literal)", String::from_utf8_lossy(b)),
            };
            let _ = write!(out, "\n      body ({} bytes): {}", b.len(), clip(&text, 600));
        }
        out
    }
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(max).collect::<String>())
    }
}

/// The `error` field the server logged for a request id.
fn logged_cause(request_id: &str) -> Option<String> {
    let log = crate::common::SERVER_LOG.lock().unwrap();
    String::from_utf8_lossy(&log)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["fields"]["request_id"] == request_id)
        .map(|e| e["fields"]["error"].as_str().unwrap_or("").to_string())
}

/// Row count and newest `xmin` of a table: an insert, update or delete changes one of them.
type Snapshot = Vec<(String, i64, i64)>;

/// What a case did: its status (None when no answer came) and every rule it broke as (kind, detail).
struct Outcome {
    status: Option<u16>,
    text: String,
    problems: Vec<(&'static str, String)>,
    /// What the server logged for a 5xx.
    cause: Option<String>,
}

/// Every case of one operation that broke one rule, with the first and (for JSON bodies) a shrunk example.
struct Group {
    count: usize,
    example: String,
    shrunk: Option<String>,
}

struct Fuzzer {
    app: TestApp,
    runner: TestRunner,
    snapshot_sql: String,
    last: Snapshot,
    sent: usize,
    skipped: usize,
    /// Whether failing JSON bodies are shrunk (pointless when the path or query is at fault).
    shrink_bodies: bool,
    /// Keyed by (operation, rule, logged cause with digits blanked).
    failures: BTreeMap<(String, &'static str, String), Group>,
    /// Time spent per operation.
    elapsed: BTreeMap<String, Duration>,
    /// Per operation: status -> count.
    statuses: BTreeMap<String, BTreeMap<u16, usize>>,
}

impl Fuzzer {
    async fn new() -> Self {
        Self::with_config(RuntimeConfig { run_worker: false, ..RuntimeConfig::default() }).await
    }

    async fn with_config(config: RuntimeConfig) -> Self {
        let app = crate::common::spawn_with(config).await;
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' \
             AND table_type = 'BASE TABLE' AND table_name NOT LIKE '\\_sqlx%' ORDER BY 1",
        )
        .fetch_all(&app.pool)
        .await
        .unwrap();
        assert!(tables.iter().any(|t| t == "episodes"), "no episodes table among {tables:?}");
        let snapshot_sql = tables
            .iter()
            .map(|t| {
                let ident = format!("\"{}\"", t.replace('"', "\"\""));
                format!("SELECT '{t}'::text, count(*), coalesce(max(xmin::text::bigint), 0) FROM {ident}")
            })
            .collect::<Vec<_>>()
            .join(" UNION ALL ");
        let mut f = Fuzzer {
            app,
            runner: TestRunner::deterministic(),
            snapshot_sql,
            last: Vec::new(),
            sent: 0,
            skipped: 0,
            shrink_bodies: false,
            failures: BTreeMap::new(),
            elapsed: BTreeMap::new(),
            statuses: BTreeMap::new(),
        };
        f.resync().await;
        f
    }

    /// Re-reads the tables (after setup requests made outside `send`).
    async fn resync(&mut self) {
        self.last = sqlx::query_as(&self.snapshot_sql).fetch_all(&self.app.pool).await.unwrap();
    }

    /// Draws one value from a strategy with the deterministic runner.
    fn draw<T: std::fmt::Debug>(&mut self, s: &impl Strategy<Value = T>) -> T {
        s.new_tree(&mut self.runner).unwrap().current()
    }

    /// Sends a case and judges the answer and the tables; None when the target is not a URL at all.
    async fn exchange(&mut self, case: &Case) -> Option<Outcome> {
        let url = reqwest::Url::parse(&format!("{}{}", self.app.base, case.target)).ok()?;
        let build = |client: &reqwest::Client| {
            let mut req = client.request(case.method.clone(), url.clone()).timeout(Duration::from_secs(60));
            if let Some(v) = case.tenant.as_deref().and_then(|t| HeaderValue::from_bytes(t).ok()) {
                req = req.header("x-tenant-id", v);
            }
            if let Some(ct) = case.content_type {
                req = req.header(CONTENT_TYPE, ct);
            }
            if let Some(b) = &case.body {
                req = req.body(b.clone());
            }
            req
        };
        let read = |r: reqwest::Response| async move {
            let status = r.status().as_u16();
            let header_id = r.headers().get("x-request-id").and_then(|v| v.to_str().ok()).map(str::to_string);
            let ct = r.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
            r.bytes().await.map(|b| (status, header_id, ct, b))
        };
        self.sent += 1;
        let answer = match build(&self.app.client).send().await {
            Ok(r) => read(r).await,
            // A pooled connection the server had just closed fails before any answer (a race of
            // the client's pool under load, not the server's): once more on a new connection,
            // so only a server that does not answer at all is counted as one.
            Err(e) if e.is_request() && case.body.as_ref().is_none_or(|b| b.len() <= BODY_LIMIT) => {
                let fresh = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
                match build(&fresh).send().await {
                    Ok(r) => read(r).await,
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        };
        let before = std::mem::take(&mut self.last);
        self.resync().await;
        let (status, header_id, ct, bytes) = match answer {
            Ok(a) => a,
            // A server may answer 413 and close before an oversized body is fully sent; the client then sees
            // a write error instead of the answer.
            Err(_) if case.body.as_ref().is_some_and(|b| b.len() > BODY_LIMIT) => {
                return Some(Outcome { status: None, text: String::new(), problems: Vec::new(), cause: None });
            }
            Err(e) => {
                let problems = vec![("no response", format!("no response: {e}"))];
                return Some(Outcome { status: None, text: String::new(), problems, cause: None });
            }
        };
        let body: Option<Value> = serde_json::from_slice(&bytes).ok();
        let mut problems = Vec::new();
        if !(200..300).contains(&status) && !(400..500).contains(&status) {
            problems.push(("status", format!("status {status} is neither 2xx nor 4xx")));
        }
        if status >= 400 {
            if let Some(p) = envelope_problem(body.as_ref(), &ct, header_id.as_deref()) {
                problems.push(("envelope", p));
            }
        } else if body.is_none() {
            problems.push(("not JSON", "success body is not JSON".to_string()));
        }
        if status >= 400 || case.method == Method::GET {
            let written = diff(&before, &self.last);
            if !written.is_empty() {
                let why = match status {
                    500.. => "failing",
                    400.. => "rejecting",
                    _ => "a GET",
                };
                problems.push(("wrote", format!("wrote despite {why}: {written}")));
            }
        }
        let cause = body
            .as_ref()
            .and_then(|b| b["error"]["request_id"].as_str())
            .filter(|_| status >= 500)
            .and_then(logged_cause);
        Some(Outcome { status: Some(status), text: String::from_utf8_lossy(&bytes).into_owned(), problems, cause })
    }

    /// Sends a case and records its status and every rule it broke.
    async fn send(&mut self, op: &str, case: Case) {
        let started = Instant::now();
        let outcome = self.exchange(&case).await;
        *self.elapsed.entry(op.to_string()).or_default() += started.elapsed();
        let Some(out) = outcome else {
            self.skipped += 1;
            return;
        };
        if let Some(s) = out.status {
            *self.statuses.entry(op.to_string()).or_default().entry(s).or_default() += 1;
        }
        let cause = out.cause.as_deref().unwrap_or("").replace(|c: char| c.is_ascii_digit(), "#");
        for (kind, detail) in &out.problems {
            let key = (op.to_string(), *kind, cause.clone());
            if let Some(g) = self.failures.get_mut(&key) {
                g.count += 1;
                continue;
            }
            let example = format!("{detail}\n      {}{}", case.describe(), answer(&out));
            let shrunk = if self.shrink_bodies { self.shrink(&case, kind, out.cause.as_deref()).await } else { None };
            self.failures.insert(key, Group { count: 1, example, shrunk });
        }
    }

    /// Greedily simplifies a failing JSON body while it still breaks the rule `kind` for the same logged cause.
    /// Bodies over 64 KiB are left alone: each attempt would cost too much.
    async fn shrink(&mut self, case: &Case, kind: &str, cause: Option<&str>) -> Option<String> {
        const ATTEMPTS: usize = 250;
        let body = case.body.as_deref().filter(|b| b.len() <= 64 * 1024)?;
        let mut current: Value = serde_json::from_slice(body).ok()?;
        let mut last = None;
        let mut attempts = 0;
        'outer: while attempts < ATTEMPTS {
            for candidate in simpler(&current) {
                attempts += 1;
                if attempts > ATTEMPTS {
                    break 'outer;
                }
                let trial = Case { body: Some(serde_json::to_vec(&candidate).unwrap()), ..case.clone() };
                if let Some(out) = self.exchange(&trial).await {
                    if out.problems.iter().any(|(k, _)| *k == kind) && out.cause.as_deref() == cause {
                        current = candidate;
                        last = Some((trial, out));
                        continue 'outer;
                    }
                }
            }
            break;
        }
        last.map(|(trial, out)| format!("{}{}", trial.describe(), answer(&out)))
    }

    fn count(&self, op: &str, range: std::ops::Range<u16>) -> usize {
        self.statuses.get(op).map_or(0, |m| m.iter().filter(|(s, _)| range.contains(s)).map(|(_, n)| n).sum())
    }

    /// Fails the test if any case broke a rule; prints what was sent either way.
    fn finish(self, phase: &str, started: Instant) {
        let secs = started.elapsed().as_secs_f64();
        eprintln!("{phase}: {} requests ({} not URLs) in {secs:.1}s", self.sent, self.skipped);
        for (op, statuses) in &self.statuses {
            eprintln!(
                "  {op}: {statuses:?} in {:.1}s",
                self.elapsed.get(op).copied().unwrap_or_default().as_secs_f64()
            );
        }
        let mut report = String::new();
        for ((op, _, _), g) in &self.failures {
            let _ = write!(report, "\n- {op}: {} case(s); first: {}", g.count, g.example);
            if let Some(s) = &g.shrunk {
                let _ = write!(report, "\n    shrunk: {s}");
            }
        }
        let total: usize = self.failures.values().map(|g| g.count).sum();
        assert!(self.failures.is_empty(), "{phase}: {total} of {} requests broke the rules:{report}", self.sent);
    }
}

fn answer(out: &Outcome) -> String {
    let Some(status) = out.status else {
        return String::new();
    };
    let mut text = format!("\n      -> {status} {}", clip(&out.text, 300));
    if let Some(cause) = &out.cause {
        let _ = write!(text, "\n      server log: {}", clip(cause, 300));
    }
    text
}

/// Bodies one step simpler than `v`: a node removed, emptied, a string halved or a number zeroed.
fn simpler(v: &Value) -> Vec<Value> {
    fn walk(v: &Value, prefix: &mut Vec<Seg>, out: &mut Vec<Vec<Seg>>) {
        let children: Vec<(Seg, &Value)> = match v {
            Value::Object(m) => m.iter().map(|(k, c)| (Seg::Key(k.clone()), c)).collect(),
            Value::Array(a) => a.iter().enumerate().map(|(i, c)| (Seg::Index(i), c)).collect(),
            _ => Vec::new(),
        };
        for (seg, child) in children {
            prefix.push(seg);
            out.push(prefix.clone());
            walk(child, prefix, out);
            prefix.pop();
        }
    }
    let mut paths = Vec::new();
    walk(v, &mut Vec::new(), &mut paths);
    let mut out = Vec::new();
    for path in paths {
        let (last, parent_path) = path.split_last().unwrap();
        let mut removed = v.clone();
        match (node_mut(&mut removed, parent_path), last) {
            (Value::Object(o), Seg::Key(k)) => drop(o.remove(k)),
            (Value::Array(a), Seg::Index(i)) => drop(a.remove(*i)),
            _ => {}
        }
        out.push(removed);
        let replacement = match node(v, &path) {
            Some(Value::String(s)) if s.chars().count() > 1 => {
                json!(s.chars().take(s.chars().count() / 2).collect::<String>())
            }
            Some(Value::Number(n)) if n.as_i64() != Some(0) => json!(0),
            Some(Value::Object(o)) if !o.is_empty() => json!({}),
            Some(Value::Array(a)) if !a.is_empty() => json!([]),
            _ => continue,
        };
        let mut simpler = v.clone();
        *node_mut(&mut simpler, &path) = replacement;
        out.push(simpler);
    }
    out
}

fn envelope_problem(body: Option<&Value>, content_type: &str, header_id: Option<&str>) -> Option<String> {
    let Some(body) = body else {
        return Some(format!("error body is not JSON (content-type {content_type:?})"));
    };
    if !content_type.starts_with("application/json") {
        return Some(format!("error content-type is {content_type:?}"));
    }
    let err = &body["error"];
    if !err.is_object() {
        return Some("error body is not the envelope {\"error\": {...}}".to_string());
    }
    let missing: Vec<&str> = ["code", "message", "request_id"].into_iter().filter(|f| !err[*f].is_string()).collect();
    if !missing.is_empty() {
        return Some(format!("envelope lacks string field(s) {missing:?}"));
    }
    if header_id.is_some_and(|h| err["request_id"] != h) {
        return Some(format!("envelope request_id differs from X-Request-ID {header_id:?}"));
    }
    None
}

fn diff(before: &Snapshot, after: &Snapshot) -> String {
    let old: BTreeMap<&str, (i64, i64)> = before.iter().map(|(t, n, x)| (t.as_str(), (*n, *x))).collect();
    after
        .iter()
        .filter(|(t, n, x)| old.get(t.as_str()) != Some(&(*n, *x)))
        .map(|(t, n, _)| match old.get(t.as_str()) {
            Some((before, _)) if before == n => format!("{t} (rows updated)"),
            before => format!("{t} (rows {} -> {n})", before.map_or(0, |o| o.0)),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

// ---------------------------------------------------------------------------------------------------------------
// Seed data, so ids in paths and bodies can name real rows.

#[derive(Default)]
struct Known {
    memories: Vec<String>,
    receipts: Vec<String>,
    jobs: Vec<String>,
    erasures: Vec<String>,
    bundles: Vec<String>,
}

/// Operations whose generated inputs are valid only by chance (a random bundle hash, random text
/// as a policy bundle, a path-only case without the body the operation needs, template values
/// with random field names, webhook events where webhooks are off): they need not accept any
/// case; every other rule still holds for them.
const NEEDS_EXISTING: &[&str] = &[
    // Erases only ids of episodes and memories of the subject, which a generated body cannot know.
    "POST /v1/subjects/{subject_id}/erase",
    // Accepts only labels currently suggested on the memory, which a generated body cannot know.
    "POST /admin/memories/{memory_id}/promote-labels",
    "POST /admin/policy/activate",
    // Accepts only a document whose checksum matches its records, which a generated body cannot have.
    "POST /admin/import",
    "GET /admin/policy/bundles/{bundle_hash}",
    "POST /admin/policy/bundles",
    "PATCH /admin/tenants/{tenant_id}/config",
    "POST /v1/memory-templates/{template_id}/apply",
    "GET /admin/webhooks/{event_id}",
    "POST /admin/webhooks/{event_id}/retry",
    // Needs the cursor of an episode of the session and the id of its latest snapshot.
    "PUT /v1/subjects/{subject_id}/sessions/{session_id}/snapshot",
];

/// The session seeded for both path subjects.
const SEEDED_SESSION: &str = "s-fuzz";

impl Known {
    /// Valid values for a path parameter of an operation.
    fn ids(&self, op: &Operation, param: &str) -> Vec<String> {
        match param {
            "job_id" => self.jobs.clone(),
            "erasure_id" => self.erasures.clone(),
            "bundle_hash" => self.bundles.clone(),
            "memory_id" => self.memories.clone(),
            "template_id" => mnemo::templates::catalog::all().iter().map(|t| t.id.to_string()).collect(),
            "subject_id" => vec!["user:fuzz".to_string(), "user%3A2".to_string()],
            "session_id" => vec![SEEDED_SESSION.to_string()],
            _ if op.path.starts_with("/v1/memories") => self.memories.clone(),
            _ if op.path.starts_with("/v1/receipts") => self.receipts.clone(),
            _ => Vec::new(),
        }
    }

    fn first(&self, op: &Operation, param: &str) -> String {
        self.ids(op, param).into_iter().next().unwrap_or_else(|| "x".to_string())
    }
}

/// Records a turn of [`SEEDED_SESSION`] for `subject`.
async fn seed_session(app: &TestApp, subject: &str) {
    let turn = json!({"subject_id": subject, "source": "chat", "type": "message", "session_id": SEEDED_SESSION,
                      "payload": {"messages": [{"role": "user", "content": "Hello there"}]}});
    let (s, b) = app.post("/v1/episodes", &turn).await;
    assert_eq!(s, 201, "{b}");
}

async fn seed(app: &TestApp) -> Known {
    let memories = app
        .ingest_and_compile(SEEDED, &["My name is Ana and I live in Quito.", "I prefer green tea.", "I work at Acme."])
        .await;
    let memories: Vec<String> = memories.iter().map(|m| m["id"].as_str().unwrap().to_string()).collect();
    assert!(!memories.is_empty());
    let (s, ctx) = app
        .post("/v1/context", &json!({"subject_id": SEEDED, "task": "What does the user drink?", "emit_receipt": true}))
        .await;
    assert_eq!(s, 200, "{ctx}");
    for subject in ["user:fuzz", "user:2"] {
        seed_session(app, subject).await;
    }
    // A subject with sessions records its health state on its first read; read it once here so
    // the rule that a GET writes nothing holds for the fuzzed reads.
    for subject in ["user:fuzz", "user:2"] {
        let (s, b) = app.get(&format!("/v1/subjects/{subject}/health")).await;
        assert_eq!(s, 200, "{b}");
    }
    let (s, job) = app.post("/v1/memories/compile", &json!({"subject_id": "user:2", "async": true})).await;
    assert_eq!(s, 202, "{job}");
    let r = app.client.delete(app.url("/v1/subjects/user:erased")).send().await.unwrap();
    let (s, erased) = crate::common::split(r).await;
    assert_eq!(s, 200, "{erased}");
    let bundle = json!({"bundle": "version: 1\nrules: [{id: r, when: {memory_has_any_label: [pii]}, action: redact}]"});
    let (s, stored) = app.post("/admin/policy/bundles", &bundle).await;
    assert_eq!(s, 201, "{stored}");
    Known {
        bundles: vec![stored["bundle_hash"].as_str().unwrap().to_string()],
        memories,
        receipts: vec![ctx["receipt_id"].as_str().unwrap().to_string()],
        jobs: vec![job["job_id"].as_str().unwrap().to_string()],
        erasures: vec![erased["erasure_id"].as_str().unwrap().to_string()],
    }
}

async fn setup() -> (Fuzzer, Known, Value, Vec<Operation>) {
    crate::common::init_logging();
    let mut fuzzer = Fuzzer::new().await;
    let known = seed(&fuzzer.app).await;
    fuzzer.resync().await;
    let doc = merged_all_of(mnemo::http::openapi::document());
    let ops = operations(&doc);
    assert!(ops.len() >= 20, "only {} operations documented", ops.len());
    (fuzzer, known, doc, ops)
}

// ---------------------------------------------------------------------------------------------------------------
// The phases.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_bodies_and_their_mutations_never_break_the_rules() {
    let started = Instant::now();
    let (mut f, known, doc, ops) = setup().await;
    f.shrink_bodies = true;
    for op in ops.iter().filter(|o| o.body.is_some()) {
        let schema = op.body.clone().unwrap();
        let valid = from_schema(&schema, &doc, "body", Mode::Typical);
        let extreme = from_schema(&schema, &doc, "body", Mode::Extreme);
        let label = op.label();
        let target = op.fill(|p| known.first(op, p));
        // Valid-ish bodies first (every eighth at the schema's limits): most should be accepted.
        for i in 0..cases() {
            let (body, tenant) = f.draw(&(if i % 8 == 7 { extreme.clone() } else { valid.clone() }, tenant()));
            let mut case = Case::new(op.method.clone(), target.clone()).json(&body);
            case.tenant = tenant;
            f.send(&label, case).await;
        }
        assert!(
            NEEDS_EXISTING.contains(&label.as_str()) || f.count(&label, 200..300) > 0,
            "{label}: no valid-ish body was accepted: {:?}",
            f.statuses.get(&label)
        );
        let rejected = f.count(&label, 400..500);
        // Then one to three mutations of a valid-ish body.
        for _ in 0..cases() {
            let (mut body, mutations) = f.draw(&(valid.clone(), prop::collection::vec(mutation(), 1..=3)));
            for m in &mutations {
                mutate(&mut body, m, &schema, &doc);
            }
            f.send(&label, Case::new(op.method.clone(), target.clone()).json(&body)).await;
        }
        assert!(f.count(&label, 400..500) > rejected, "{label}: no mutated body was rejected");
    }
    f.finish("schema bodies", started);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_body_bytes_never_break_the_rules() {
    let started = Instant::now();
    let (mut f, known, doc, ops) = setup().await;
    for op in ops.iter().filter(|o| o.body.is_some()) {
        let schema = op.body.clone().unwrap();
        let valid = from_schema(&schema, &doc, "body", Mode::Typical);
        let label = op.label();
        let target = op.fill(|p| known.first(op, p));
        for _ in 0..cases() / 2 {
            let (body, r, ct) = f.draw(&(valid.clone(), raw(), content_type()));
            let mut case = Case::new(op.method.clone(), target.clone());
            case.body = Some(raw_bytes(&body, &r, &schema, &doc));
            case.content_type = ct;
            f.send(&label, case).await;
        }
        assert!(f.count(&label, 400..500) > 0, "{label}: no raw body was rejected");
    }
    f.finish("raw bodies", started);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_strings_never_break_the_rules() {
    let started = Instant::now();
    let (mut f, known, doc, ops) = setup().await;
    for op in ops.iter().filter(|o| o.method == Method::GET || !o.query.is_empty()) {
        let label = op.label();
        let target = op.fill(|p| known.first(op, p));
        let valid: Vec<Gen<Option<String>>> = op.query.iter().map(|p| valid_query_value(p, &doc)).collect();
        let any: Vec<Gen<Option<String>>> = op.query.iter().map(|p| query_value(p, &doc)).collect();
        let body = op.body.as_ref().map(|s| f.draw(&from_schema(s, &doc, "body", Mode::Typical)));
        let cases = if op.query.is_empty() { cases() / 4 } else { cases() };
        // The first half is valid-ish (documented values, harmless extras), the rest anything goes.
        for i in 0..cases {
            let (values, extras, tenant) = if i < cases / 2 {
                f.draw(&(valid.clone(), unknown_params(), Just(None::<Vec<u8>>)))
            } else {
                f.draw(&(any.clone(), query_extras(), tenant()))
            };
            let mut parts: Vec<String> =
                op.query.iter().zip(values).filter_map(|(p, v)| v.map(|v| format!("{}={v}", p.name))).collect();
            parts.extend(extras);
            let mut case = Case::new(op.method.clone(), format!("{target}?{}", parts.join("&")));
            if let Some(b) = &body {
                case = case.json(b);
            }
            case.tenant = tenant;
            f.send(&label, case).await;
        }
        assert!(
            NEEDS_EXISTING.contains(&label.as_str()) || f.count(&label, 200..300) > 0,
            "{label}: no query string was accepted"
        );
        if op.query.iter().any(|p| p.required || p.schema.get("maximum").is_some() || p.schema.get("enum").is_some()) {
            assert!(f.count(&label, 400..500) > 0, "{label}: no query string was rejected");
        }
    }
    f.finish("query strings", started);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_parameters_never_break_the_rules() {
    let started = Instant::now();
    let (mut f, known, doc, ops) = setup().await;
    for op in ops.iter().filter(|o| !o.path_params.is_empty()) {
        let label = op.label();
        let segments: Vec<Gen<String>> = op.path_params.iter().map(|p| segment(known.ids(op, p))).collect();
        let body = op.body.as_ref().map(|s| f.draw(&from_schema(s, &doc, "body", Mode::Typical)));
        let query: Vec<String> =
            op.query.iter().filter(|p| p.required).map(|p| format!("{}={}", p.name, SEEDED)).collect();
        // With several parameters a drawn path is rarely all known; one case names known rows only.
        if op.path_params.len() > 1 {
            // An erasure fuzzed before may have removed the seeded session.
            if op.path.contains("{session_id}") {
                seed_session(&f.app, "user:fuzz").await;
                f.resync().await;
            }
            let mut target = op.fill(|p| known.first(op, p));
            if !query.is_empty() {
                target = format!("{target}?{}", query.join("&"));
            }
            let mut case = Case::new(op.method.clone(), target);
            if let Some(b) = &body {
                case = case.json(b);
            }
            f.send(&label, case).await;
        }
        for _ in 0..cases() {
            let (segs, tenant) = f.draw(&(segments.clone(), tenant()));
            let mut segs = segs.into_iter();
            let mut target = op.fill(|_| segs.next().unwrap());
            if !query.is_empty() {
                target = format!("{target}?{}", query.join("&"));
            }
            let mut case = Case::new(op.method.clone(), target);
            if let Some(b) = &body {
                case = case.json(b);
            }
            case.tenant = tenant;
            f.send(&label, case).await;
        }
        assert!(f.count(&label, 400..500) > 0, "{label}: no path was rejected");
        assert!(
            NEEDS_EXISTING.contains(&label.as_str()) || f.count(&label, 200..300) > 0,
            "{label}: no path was accepted"
        );
    }
    f.finish("path parameters", started);
}

// ---------------------------------------------------------------------------------------------------------------
// MCP: tool arguments from each tool's input schema (valid-ish, then mutated) and raw bytes posted to /mcp.
// A call must answer 200 with a JSON-RPC response (never a JSON-RPC internal error, never a tool error that
// hides a server failure), and a call the tool refuses (`isError`) must leave every table untouched.

/// Server failures found by this phase that belong to other modules and are reported there, matched
/// on the logged cause. `subject_terms_pkey`: compiling a subject whose id is long in bytes (256
/// four-byte characters) with a long lexeme exceeds the btree row limit of `subject_terms`
/// (`db::terms::count_batch`); POST /v1/episodes + POST /v1/memories/compile fail the same way (500).
const KNOWN_SERVER_FAILURES: &[&str] = &[];

/// The `error` fields of server errors logged since `from` (a byte offset into the log).
fn new_server_errors(from: usize) -> String {
    let log = crate::common::SERVER_LOG.lock().unwrap();
    String::from_utf8_lossy(&log[from.min(log.len())..])
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| e["fields"]["error"].as_str().unwrap_or("").to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

impl Fuzzer {
    /// Sends one JSON-RPC `tools/call` and judges it by the MCP rules.
    async fn mcp_call(&mut self, tool: &str, arguments: Value) {
        let op = format!("MCP {tool}");
        let msg = crate::common::mcp::request(1, "tools/call", json!({"name": tool, "arguments": arguments}));
        let started = Instant::now();
        let before = std::mem::take(&mut self.last);
        let logged_before = crate::common::SERVER_LOG.lock().unwrap().len();
        let mut answer = crate::common::mcp::try_post_with(&self.app, None, &msg, &[]).await;
        // As in the raw MCP phase: a pooled keep-alive connection the server had just closed fails
        // before any byte of an answer; sent again once, on another connection.
        if answer.as_ref().is_err_and(|e| !e.is_timeout() && e.status().is_none()) {
            answer = crate::common::mcp::try_post_with(&self.app, None, &msg, &[]).await;
        }
        self.resync().await;
        let cause = new_server_errors(logged_before);
        let (status, body) = match answer {
            Ok((status, _, body)) => (status, body),
            // The server may answer 413 and close before an oversized body is fully sent.
            Err(_) if msg.to_string().len() > BODY_LIMIT => return,
            Err(e) => (0, json!({"no response": e.to_string()})),
        };
        *self.elapsed.entry(op.clone()).or_default() += started.elapsed();
        self.sent += 1;
        let result = &body["result"];
        // 200 = accepted, 422 = refused by the tool, 400 = JSON-RPC error: the tally `count` reads.
        let tally = match (status, result["isError"].as_bool()) {
            (200, Some(false)) => 200,
            (200, Some(true)) => 422,
            (200, None) => 400,
            (s, _) => s,
        };
        *self.statuses.entry(op.clone()).or_default().entry(tally).or_default() += 1;
        let mut problems = Vec::new();
        if status >= 500 || status == 0 || body.is_null() {
            problems.push(("status", format!("status {status} (or a body that is not JSON)")));
        } else if body["error"]["code"] == -32603 {
            problems.push(("internal", "JSON-RPC internal error".to_string()));
        } else if result["isError"] == true {
            if result["structuredContent"]["error"]["status"].as_u64().unwrap_or(500) >= 500 {
                problems.push(("tool 5xx", "a tool error hides a server failure".to_string()));
            }
            let written = diff(&before, &self.last);
            if !written.is_empty() {
                problems.push(("wrote", format!("wrote despite refusing: {written}")));
            }
        } else if result["structuredContent"]["compiled"]["error"]["status"].as_u64().is_some_and(|s| s >= 500) {
            problems.push(("tool 5xx", "remember's compile step failed on the server".to_string()));
        }
        if !problems.is_empty() && KNOWN_SERVER_FAILURES.iter().any(|k| cause.contains(k)) {
            eprintln!("known server failure (not counted): {}", clip(&cause, 300));
            return;
        }
        for (kind, detail) in problems {
            let key = (op.clone(), kind, String::new());
            let example = format!(
                "{detail}\n      arguments: {}\n      -> {}",
                clip(&msg["params"]["arguments"].to_string(), 600),
                clip(&body.to_string(), 300)
            );
            self.failures.entry(key).or_insert(Group { count: 0, example, shrunk: None }).count += 1;
        }
    }

    /// Posts raw bytes to /mcp: any answer below 500 with a JSON body.
    async fn mcp_raw(&mut self, bytes: Vec<u8>, content_type: Option<&'static str>) {
        let mut case = Case::new(Method::POST, "/mcp".to_string());
        case.body = Some(bytes);
        case.content_type = content_type;
        let op = "MCP raw".to_string();
        let started = Instant::now();
        let send = || {
            let mut req =
                self.app.client.post(self.app.url("/mcp")).header("Accept", "application/json, text/event-stream");
            if let Some(ct) = content_type {
                req = req.header(CONTENT_TYPE, ct);
            }
            req.body(case.body.clone().unwrap_or_default()).send()
        };
        let mut answer = send().await;
        // A pooled keep-alive connection the server had just closed fails before any byte of
        // an answer: sent again once, on another connection. A server that never answers this
        // input fails the second time too.
        if answer.as_ref().is_err_and(|e| !e.is_timeout() && e.status().is_none()) {
            answer = send().await;
        }
        *self.elapsed.entry(op.clone()).or_default() += started.elapsed();
        self.sent += 1;
        let problem = match answer {
            Ok(r) => {
                let status = r.status().as_u16();
                *self.statuses.entry(op.clone()).or_default().entry(status).or_default() += 1;
                let body = r.bytes().await.unwrap_or_default();
                if status >= 500 {
                    Some(("status", format!("status {status}")))
                } else if status >= 400 && serde_json::from_slice::<Value>(&body).is_err() {
                    Some((
                        "not JSON",
                        format!("{status} body is not JSON: {}", clip(&String::from_utf8_lossy(&body), 200)),
                    ))
                } else {
                    None
                }
            }
            Err(_) if case.body.as_ref().is_some_and(|b| b.len() > BODY_LIMIT) => None,
            Err(e) => Some(("no response", format!("no response: {e}"))),
        };
        if let Some((kind, detail)) = problem {
            let example = format!("{detail}\n      {}", case.describe());
            self.failures
                .entry((op, kind, String::new()))
                .or_insert(Group { count: 0, example, shrunk: None })
                .count += 1;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tool_arguments_never_break_the_rules() {
    use mnemo::mcp::{McpConfig, Toolset};
    let started = Instant::now();
    crate::common::init_logging();
    for toolset in [Toolset::Mnemo, Toolset::Statewave] {
        let mcp = McpConfig { toolset, allow_forget: true, ..McpConfig::default() };
        let mut f = Fuzzer::with_config(RuntimeConfig { run_worker: false, mcp, ..RuntimeConfig::default() }).await;
        let known = seed(&f.app).await;
        f.resync().await;
        let doc = json!({});
        for tool in crate::common::mcp::tools(&f.app, None).await {
            let name = tool["name"].as_str().unwrap().to_string();
            let schema = tool["inputSchema"].clone();
            let valid = from_schema(&schema, &doc, "arguments", Mode::Typical);
            let extreme = from_schema(&schema, &doc, "arguments", Mode::Extreme);
            for i in 0..cases() {
                let mut args = f.draw(&(if i % 8 == 7 { extreme.clone() } else { valid.clone() }));
                // forget needs a memory that exists.
                if args.get("memory_id").is_some() && i % 2 == 0 {
                    args["memory_id"] = json!(known.memories[i % known.memories.len()]);
                    args["subject_id"] = json!(SEEDED);
                }
                f.mcp_call(&name, args).await;
            }
            let label = format!("MCP {name}");
            assert!(
                // forget and erase need ids that exist (erase: several at once).
                name == "forget" || name == "erase" || f.count(&label, 200..201) > 0,
                "{label}: no valid-ish arguments were accepted: {:?}",
                f.statuses.get(&label)
            );
            let refused = f.count(&label, 422..423);
            for _ in 0..cases() {
                let (mut args, mutations) = f.draw(&(valid.clone(), prop::collection::vec(mutation(), 1..=3)));
                for m in &mutations {
                    mutate(&mut args, m, &schema, &doc);
                }
                f.mcp_call(&name, args).await;
            }
            assert!(f.count(&label, 400..500) > refused, "{label}: no mutated arguments were refused");
        }
        let any_call = crate::common::mcp::request(
            1,
            "tools/call",
            json!({"name": "timeline", "arguments": {"subject_id": SEEDED}}),
        );
        for _ in 0..cases() / 2 {
            let (r, ct) = f.draw(&(raw(), content_type()));
            let bytes = raw_bytes(&any_call, &r, &json!({}), &doc);
            f.mcp_raw(bytes, ct).await;
        }
        f.finish(&format!("MCP {toolset:?}"), started);
    }
}
