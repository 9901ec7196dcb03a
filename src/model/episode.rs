//! Episodes: immutable records of what happened to a subject.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;
use uuid::Uuid;

/// A stored episode, as returned on the wire (no tenant, no idempotency key).
#[derive(Debug, Clone, Serialize, sqlx::FromRow, ToSchema)]
pub struct Episode {
    pub id: Uuid,
    pub subject_id: String,
    pub source: String,
    #[serde(rename = "type")]
    #[sqlx(rename = "type")]
    pub kind: String,
    #[schema(value_type = Object)]
    pub payload: Value,
    #[schema(value_type = Object)]
    pub metadata: Value,
    #[schema(value_type = Object)]
    pub provenance: Value,
    pub session_id: Option<String>,
    #[serde(serialize_with = "crate::model::time::serialize")]
    pub occurred_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::model::time::serialize")]
    pub created_at: DateTime<Utc>,
}

/// A validated request to record one episode.
#[derive(Debug, Clone)]
pub struct NewEpisode {
    pub subject_id: String,
    pub source: String,
    pub kind: String,
    pub payload: Map<String, Value>,
    pub metadata: Map<String, Value>,
    pub provenance: Map<String, Value>,
    pub session_id: Option<String>,
    pub occurred_at: Option<DateTime<Utc>>,
    pub idempotency_key: Option<String>,
}

/// Writes every negative zero in `value` as zero, as `jsonb` stores it.
fn positive_zeros(value: &mut Value) {
    match value {
        Value::Number(n) if n.as_f64() == Some(0.0) && n.is_f64() => *value = Value::from(0.0),
        Value::Array(items) => items.iter_mut().for_each(positive_zeros),
        Value::Object(map) => map.values_mut().for_each(positive_zeros),
        _ => {}
    }
}

/// Maximum length of an idempotency key.
pub const MAX_IDEMPOTENCY_KEY: usize = 512;

impl NewEpisode {
    /// The row Postgres stored for this input under `stamp`. Read back, it is this JSON: `jsonb`
    /// keeps an object's values (the last of a repeated key, as `Map` does), and a `Map` lists
    /// keys in its own sorted order whatever order they were stored in. Its numbers keep their
    /// value, except that `numeric` has no negative zero (`-0.0` is read back as `0.0`).
    pub fn stored(mut self, stamp: &Stamp) -> Episode {
        for map in [&mut self.payload, &mut self.metadata, &mut self.provenance] {
            map.values_mut().for_each(positive_zeros);
        }
        Episode {
            id: stamp.id,
            subject_id: self.subject_id,
            source: self.source,
            kind: self.kind,
            payload: Value::Object(self.payload),
            metadata: Value::Object(self.metadata),
            provenance: Value::Object(self.provenance),
            session_id: self.session_id,
            occurred_at: stamp.occurred_at,
            created_at: stamp.created_at,
        }
    }

    /// The effective idempotency key: the field, else the legacy `metadata.idempotency_key`.
    pub fn effective_key(&self) -> Option<String> {
        if let Some(k) = &self.idempotency_key {
            return Some(k.clone());
        }
        match self.metadata.get("idempotency_key") {
            Some(Value::String(s)) if !s.is_empty() && s.chars().count() <= MAX_IDEMPOTENCY_KEY => Some(s.clone()),
            _ => None,
        }
    }
}

/// Whether an insert created a row or returned the one stored under the same key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inserted {
    New,
    Existing,
}

/// What Postgres adds to a new episode: its instants as stored (`occurred_at` defaults to the
/// statement's `now()`, and both are kept to the microsecond). The rest of the row is what was
/// sent, so it is not read back (see [`NewEpisode::stored`]).
#[derive(Debug, Clone, Copy)]
pub struct Stamp {
    pub id: Uuid,
    pub occurred_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
}
