//! Memory templates: named forms for recurring kinds of facts. Applying one checks its values
//! strictly and turns them into an episode whose payload carries the values, the rendered text
//! and structured memory candidates (`statewave.memory_candidates`), so the compiler turns
//! the template's fields into clean memories and claims instead of guessing from prose.
//!
//! Everything here is pure; `services::templates` records the episode.

pub mod catalog;
pub mod fields;
pub mod render;

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Map, Value};
use utoipa::ToSchema;

use crate::error::FieldError;
use crate::model::memory::MemoryKind;
pub use fields::FieldType;

/// One input of a template.
#[derive(Debug, Clone)]
pub struct Field {
    pub name: &'static str,
    pub kind: FieldType,
    pub required: bool,
    pub description: &'static str,
}

/// A memory the template proposes: rendered from `text` when every field it names has a value.
#[derive(Debug, Clone)]
pub struct MemorySpec {
    /// A profile fact, procedure or episode summary (what `compile::candidates` accepts).
    pub kind: MemoryKind,
    pub text: &'static str,
    /// A registry claim `key = value of field`.
    pub claim: Option<(&'static str, &'static str)>,
}

/// A template as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = MemoryTemplate)]
pub struct TemplateView {
    #[schema(value_type = String)]
    pub id: &'static str,
    pub version: u32,
    #[schema(value_type = String)]
    pub title: &'static str,
    #[schema(value_type = String)]
    pub description: &'static str,
    #[schema(value_type = String)]
    pub episode_type: &'static str,
    pub fields: Vec<FieldView>,
    /// Text of the episode, with `{field}` placeholders.
    #[schema(value_type = String)]
    pub content_template: &'static str,
    pub min_values: usize,
}

/// One input of a template as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FieldView {
    #[schema(value_type = String)]
    pub name: &'static str,
    #[serde(rename = "type")]
    #[schema(value_type = FieldKind, inline)]
    pub kind: &'static str,
    pub required: bool,
    #[schema(value_type = String)]
    pub description: &'static str,
    /// The allowed values of an `enum` field.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Vec<String>)]
    pub options: Option<&'static [&'static str]>,
}

/// A template field's type.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum FieldKind {
    Text,
    Number,
    Integer,
    Date,
    Email,
    Phone,
    Url,
    Boolean,
    Enum,
}

/// A template.
#[derive(Debug, Clone)]
pub struct Template {
    pub id: &'static str,
    pub version: u32,
    pub title: &'static str,
    pub description: &'static str,
    /// The `type` of the episodes it creates.
    pub episode_type: &'static str,
    pub fields: &'static [Field],
    /// Text of the episode (`payload.content`).
    pub content: &'static str,
    pub memories: &'static [MemorySpec],
    /// A date field that, when given, is the episode's `event_time` (the memories' valid-from).
    pub time_field: Option<&'static str>,
    /// Least number of fields that must have a value (for templates whose fields are all optional).
    pub min_values: usize,
}

impl Template {
    /// The template as the API shows it.
    pub fn view(&self) -> TemplateView {
        let fields = self
            .fields
            .iter()
            .map(|f| FieldView {
                name: f.name,
                kind: f.kind.as_str(),
                required: f.required,
                description: f.description,
                options: match f.kind {
                    FieldType::Enum(options) => Some(options),
                    _ => None,
                },
            })
            .collect();
        TemplateView {
            id: self.id,
            version: self.version,
            title: self.title,
            description: self.description,
            episode_type: self.episode_type,
            fields,
            content_template: self.content,
            min_values: self.min_values,
        }
    }

    /// Checks `values` strictly: unknown fields, missing required ones, wrong types, too long,
    /// or fewer than `min_values` given are each a field error at `body.values.<name>`.
    /// Blank or null values count as absent. Ok holds the stored (trimmed, normalised) values.
    pub fn validate(&self, values: &Map<String, Value>) -> Result<BTreeMap<String, String>, Vec<FieldError>> {
        let loc = |name: &str| vec!["body".to_string(), "values".to_string(), name.to_string()];
        let err = |name: &str, msg: String, kind| FieldError { loc: loc(name), msg, kind };
        let mut errors = Vec::new();
        for name in values.keys() {
            if !self.fields.iter().any(|f| f.name == name) {
                let known: Vec<&str> = self.fields.iter().map(|f| f.name).collect();
                let msg = format!("unknown field for template {}; fields: {}", self.id, known.join(", "));
                errors.push(err(name, msg, "extra_forbidden"));
            }
        }
        let mut out = BTreeMap::new();
        for f in self.fields {
            let raw = match values.get(f.name) {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.trim()).filter(|s| !s.is_empty()),
                Some(_) => {
                    errors.push(err(f.name, "must be a string".into(), "string_type"));
                    continue;
                }
            };
            let Some(v) = raw else {
                if f.required {
                    errors.push(err(f.name, "field required".into(), "missing"));
                }
                continue;
            };
            if v.chars().count() > fields::MAX_VALUE_CHARS {
                let msg = format!("must have at most {} characters", fields::MAX_VALUE_CHARS);
                errors.push(err(f.name, msg, "string_too_long"));
            } else if v.contains('\0') {
                errors.push(err(f.name, "must not contain NUL bytes".into(), "string_nul"));
            } else {
                match f.kind.check(v) {
                    Ok(stored) => {
                        out.insert(f.name.to_string(), stored);
                    }
                    Err((kind, msg)) => errors.push(err(f.name, msg, kind)),
                }
            }
        }
        if errors.is_empty() && out.len() < self.min_values {
            errors.push(FieldError {
                loc: vec!["body".into(), "values".into()],
                msg: format!("give at least {} of the template's fields", self.min_values),
                kind: "too_short",
            });
        }
        if errors.is_empty() {
            Ok(out)
        } else {
            Err(errors)
        }
    }

    /// The episode payload for checked values: `template_id, template_version, fields, content`,
    /// the memory candidates, and `event_time` when the template's date field is given.
    pub fn payload(&self, values: &BTreeMap<String, String>) -> Map<String, Value> {
        let rendered = |text: &str| render::parse(text).map(|p| render::render(&p, values)).unwrap_or_default();
        let candidates: Vec<Value> = self
            .memories
            .iter()
            .filter(|m| {
                render::parse(m.text).is_ok_and(|p| {
                    render::references(&p).iter().all(|(f, optional)| *optional || values.contains_key(f))
                })
            })
            .filter_map(|m| {
                let text = rendered(m.text);
                let mut c = json!({"kind": m.kind, "text": text,
                                   "metadata": {"template_id": self.id, "template_version": self.version}});
                if let Some(value) = m.claim.and_then(|(key, field)| Some((key, values.get(field)?))) {
                    c["claim"] = json!({"schema_version": 1, "key": value.0, "value": value.1, "source": "template"});
                }
                (!text.is_empty()).then_some(c)
            })
            .collect();
        let mut p = Map::new();
        p.insert("template_id".into(), json!(self.id));
        p.insert("template_version".into(), json!(self.version));
        p.insert("fields".into(), json!(values));
        p.insert("content".into(), json!(rendered(self.content)));
        if !candidates.is_empty() {
            p.insert("statewave".into(), json!({"memory_candidates": candidates}));
        }
        if let Some(date) = self.time_field.and_then(|f| values.get(f)) {
            p.insert("event_time".into(), json!(date));
        }
        p
    }
}
