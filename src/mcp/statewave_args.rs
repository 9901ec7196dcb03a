//! The Statewave tool set's arguments (see [`super::statewave_schema`] for their documented
//! names): one serde type per tool, read with every problem in one tool error.

use serde::de::{self, Error as _, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::api::query::MAX_OFFSET;
use crate::api::timeline::TimelineStatus;
use crate::input::rules::{between, no_nul_in_json, ONE_OF};
use crate::input::rules::{bounded, required};
use crate::mcp::args::instant;
use crate::model::episode::{NewEpisode, MAX_IDEMPOTENCY_KEY};

/// Longest `text` of an ingested episode (the `remember` tool's bound).
const MAX_TEXT: usize = 100_000;
/// Most episode kinds a timeline filter names.
const MAX_KINDS: usize = 50;
const NOT_SOURCE: &str = "must be an object {type, id, url} or a string";
const NOT_KINDS: &str = "must be a list of episode kinds (strings of at most 128 characters)";

/// Statewave's episode (`subject, kind, text, source: {type, id, url}, occurred_at,
/// idempotency_key, metadata`) or the HTTP body's fields (`subject_id, type, payload`).
#[derive(Debug, Deserialize, garde::Validate)]
pub(super) struct Ingest {
    #[garde(custom(bounded(1, 256)))]
    pub(super) subject: String,
    #[garde(custom(bounded(1, 128)))]
    pub(super) kind: String,
    /// Becomes `payload.text`; required unless `payload` is given.
    #[garde(custom(unless_payload(self.payload.is_some())))]
    pub(super) text: Option<String>,
    #[garde(custom(no_nul_in_json))]
    pub(super) payload: Option<Map<String, Value>>,
    #[garde(custom(no_nul_in_json))]
    pub(super) metadata: Option<Map<String, Value>>,
    #[garde(custom(required), dive)]
    pub(super) source: Option<Source>,
    #[garde(custom(no_nul_in_json))]
    pub(super) provenance: Option<Map<String, Value>>,
    #[garde(custom(bounded(0, 256)))]
    pub(super) session_id: Option<String>,
    #[serde(default, deserialize_with = "instant")]
    #[garde(skip)]
    pub(super) occurred_at: Option<chrono::DateTime<chrono::Utc>>,
    #[garde(custom(bounded(0, MAX_IDEMPOTENCY_KEY)))]
    pub(super) idempotency_key: Option<String>,
}

/// garde rule: `text` of 1..=[`MAX_TEXT`] characters, required unless there is a payload.
fn unless_payload(payload: bool) -> impl FnOnce(&Option<String>, &()) -> garde::Result {
    move |value, ctx| match value {
        None if !payload => required(value, ctx),
        _ => bounded(1, MAX_TEXT)(value, ctx),
    }
}

/// `source`: Statewave's object (its type is the episode source), or the HTTP string.
#[derive(Debug)]
pub(super) enum Source {
    Named(String),
    Object(SourceObject),
}

/// Statewave's source object; `id` and `url` go to `metadata.source_id` / `source_url`.
#[derive(Debug, Deserialize, garde::Validate)]
#[serde(deny_unknown_fields)]
pub(super) struct SourceObject {
    #[garde(custom(bounded(1, 256)))]
    pub(super) r#type: String,
    #[garde(custom(bounded(0, 512)))]
    pub(super) id: Option<String>,
    #[garde(custom(bounded(0, 2048)))]
    pub(super) url: Option<String>,
}

impl<'de> Deserialize<'de> for Source {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> Visitor<'de> for Either {
            type Value = Source;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(NOT_SOURCE)
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Source, E> {
                Ok(Source::Named(s.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Source, A::Error> {
                SourceObject::deserialize(de::value::MapAccessDeserializer::new(map)).map(Source::Object)
            }
        }
        d.deserialize_any(Either)
    }
}

impl garde::Validate for Source {
    type Context = ();

    fn validate_into(&self, ctx: &(), parent: &mut dyn FnMut() -> garde::Path, report: &mut garde::Report) {
        match self {
            Source::Named(s) => {
                if let Err(e) = bounded(1, 256)(s, ctx) {
                    report.append(parent(), e);
                }
            }
            Source::Object(o) => o.validate_into(ctx, parent, report),
        }
    }
}

impl From<Ingest> for NewEpisode {
    fn from(a: Ingest) -> Self {
        let mut metadata = a.metadata.unwrap_or_default();
        let source = match a.source {
            Some(Source::Named(s)) => s,
            Some(Source::Object(o)) => {
                for (key, value) in [("source_id", o.id), ("source_url", o.url)] {
                    if let Some(v) = value {
                        metadata.insert(key.into(), Value::String(v));
                    }
                }
                o.r#type
            }
            None => String::new(),
        };
        let payload = a.payload.unwrap_or_else(|| {
            let mut p = Map::new();
            p.insert("text".into(), Value::String(a.text.unwrap_or_default()));
            p
        });
        NewEpisode {
            subject_id: a.subject,
            source,
            kind: a.kind,
            payload,
            metadata,
            provenance: a.provenance.unwrap_or_default(),
            session_id: a.session_id,
            occurred_at: a.occurred_at,
            idempotency_key: a.idempotency_key.filter(|k| !k.is_empty()),
        }
    }
}

/// `statewave_search_memories`' arguments (the HTTP API's ignored ones are accepted unread).
#[derive(Debug, Deserialize, garde::Validate)]
pub(super) struct Search {
    /// Statewave's schema makes it optional, but search is scoped to one subject (as in
    /// Statewave's server): a missing one is said so.
    #[garde(custom(searched_subject), custom(bounded(1, 256)))]
    pub(super) subject: Option<String>,
    #[garde(custom(bounded(0, crate::model::limits::MAX_QUERY_CHARS)))]
    pub(super) query: Option<String>,
    #[garde(custom(bounded(0, 64)))]
    pub(super) kind: Option<String>,
    #[garde(skip)]
    pub(super) semantic: Option<bool>,
    #[garde(skip)]
    pub(super) hybrid: Option<bool>,
    #[garde(custom(between(1, 500)))]
    pub(super) limit: Option<i64>,
}

/// garde rule: the subject is given.
fn searched_subject(value: &Option<String>, _: &()) -> garde::Result {
    match value {
        None => Err(garde::Error::new("field required: memories are searched within one subject; pass its id")),
        Some(_) => Ok(()),
    }
}

/// `statewave_get_context`'s arguments, read as `/v1/context` reads its body.
#[derive(Debug, Deserialize, garde::Validate)]
pub(super) struct Context {
    #[garde(custom(bounded(1, 256)))]
    pub(super) subject: String,
    #[garde(custom(bounded(1, crate::model::limits::MAX_TASK_CHARS)))]
    pub(super) query: String,
    #[garde(custom(between(1, crate::model::limits::MAX_BUDGET_TOKENS)))]
    pub(super) max_tokens: Option<i64>,
    #[garde(custom(bounded(0, 256)))]
    pub(super) session_id: Option<String>,
    #[serde(default, deserialize_with = "instant")]
    #[garde(skip)]
    pub(super) as_of: Option<chrono::DateTime<chrono::Utc>>,
    /// Whether a receipt is written, and what it records of the caller (as `/v1/context` reads them).
    #[serde(flatten)]
    #[garde(dive)]
    pub(super) receipt: crate::api::context::ReceiptFields,
}

/// `statewave_get_timeline`'s arguments.
#[derive(Debug, Deserialize, garde::Validate)]
pub(super) struct Timeline {
    #[serde(default, deserialize_with = "status")]
    #[garde(skip)]
    pub(super) status: Option<TimelineStatus>,
    #[serde(default, deserialize_with = "instant")]
    #[garde(skip)]
    pub(super) since: Option<chrono::DateTime<chrono::Utc>>,
    #[serde(default, deserialize_with = "instant")]
    #[garde(custom(not_before(self.since)))]
    pub(super) until: Option<chrono::DateTime<chrono::Utc>>,
    #[garde(custom(bounded(1, 256)))]
    pub(super) subject: String,
    #[garde(custom(between(1, 200)))]
    pub(super) limit: Option<i64>,
    #[garde(custom(between(0, MAX_OFFSET)))]
    pub(super) offset: Option<i64>,
    #[garde(skip)]
    pub(super) newest_first: Option<bool>,
    #[serde(default, deserialize_with = "episode_kinds")]
    #[garde(skip)]
    pub(super) kinds: Option<Vec<String>>,
}

/// `deserialize_with` for the timeline's `status`: text of at most 16 characters, then `all`
/// or `active`.
fn status<'de, D: Deserializer<'de>>(d: D) -> Result<Option<TimelineStatus>, D::Error> {
    let Some(s) = Option::<String>::deserialize(d)? else { return Ok(None) };
    bounded(0, 16)(&s, &()).map_err(|e| D::Error::custom(e.message()))?;
    match s.as_str() {
        "all" => Ok(Some(TimelineStatus::All)),
        "active" => Ok(Some(TimelineStatus::Active)),
        _ => Err(D::Error::custom(format!("{ONE_OF} all, active"))),
    }
}

/// garde rule: `until` is not before `since`.
fn not_before(
    since: Option<chrono::DateTime<chrono::Utc>>,
) -> impl FnOnce(&Option<chrono::DateTime<chrono::Utc>>, &()) -> garde::Result {
    move |until, _| match (since, until) {
        (Some(s), Some(u)) if *u < s => Err(garde::Error::new("must not be before since")),
        _ => Ok(()),
    }
}

/// `deserialize_with` for `kinds`: a list of episode types, or one comma-separated string;
/// empty means all.
fn episode_kinds<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    let raw = Value::deserialize(d)?;
    let items: Vec<&Value> = match &raw {
        Value::Null => return Ok(None),
        Value::Array(a) => a.iter().collect(),
        Value::String(_) => vec![&raw],
        _ => return Err(D::Error::custom(NOT_KINDS)),
    };
    let mut kinds = Vec::new();
    for v in items {
        match v.as_str() {
            Some(s) if !s.contains('\0') => kinds.extend(s.split(',').map(str::trim).map(String::from)),
            _ => return Err(D::Error::custom(NOT_KINDS)),
        }
    }
    kinds.retain(|k| !k.is_empty());
    if kinds.iter().any(|k| k.chars().count() > 128) {
        return Err(D::Error::custom(NOT_KINDS));
    }
    if kinds.len() > MAX_KINDS {
        return Err(D::Error::custom(format!("must have at most {MAX_KINDS} items")));
    }
    Ok((!kinds.is_empty()).then_some(kinds))
}

/// `statewave_compile_subject`'s arguments; `force` is checked and ignored: a compile reads
/// only the pending episodes either way.
#[derive(Debug, Deserialize, garde::Validate)]
pub(super) struct Compile {
    #[garde(skip)]
    #[allow(dead_code)]
    pub(super) force: Option<bool>,
    #[garde(custom(bounded(1, 256)))]
    pub(super) subject: String,
    #[garde(skip)]
    pub(super) r#async: Option<bool>,
}
