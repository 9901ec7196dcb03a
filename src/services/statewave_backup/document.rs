//! Statewave's subject backup document (`format_version` "1.0"): the checksum and reading a
//! document into checked records (the shapes mnemo writes are in `super::records`). Pure.
//!
//! The field set and order follow Statewave 0.7.1 exactly, so either side accepts the other's
//! files. mnemo-only data (sessions, labels, bitemporal columns) has no place in it.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::model::memory::MemoryKind;
use crate::model::text::contains_nul;
use crate::model::time::parse_datetime;
use crate::model::time::truncate_micros;
use crate::receipts::canonical::{python_sorted, sha256_hex};

/// The only format version Statewave 0.7.1 reads or writes.
pub const FORMAT_VERSION: &str = "1.0";

/// Statewave's memory statuses and mnemo's: only the name of a tombstone differs.
pub fn status_from_statewave(status: &str) -> Option<&'static str> {
    match status {
        "active" => Some("active"),
        "superseded" => Some("superseded"),
        "deleted" => Some("tombstoned"),
        _ => None,
    }
}

/// mnemo's status as Statewave names it.
pub fn status_to_statewave(status: &str) -> &str {
    if status == "tombstoned" {
        "deleted"
    } else {
        status
    }
}

/// `sha256(json.dumps({"episodes": E, "memories": M}, sort_keys=True))` in lower-case hex, over the
/// arrays exactly as carried (an absent array counts as `[]`).
pub fn checksum(episodes: Option<&Value>, memories: Option<&Value>) -> String {
    let empty = Value::Array(Vec::new());
    let mut outer = Map::new();
    outer.insert("episodes".into(), episodes.unwrap_or(&empty).clone());
    outer.insert("memories".into(), memories.unwrap_or(&empty).clone());
    sha256_hex(python_sorted(&Value::Object(outer)).as_bytes())
}

/// [`checksum`] over records as they serialise, one record at a time (the canonical text of
/// the whole document never exists at once: `{"episodes": [e1, e2], "memories": [m1]}` is
/// hashed piece by piece).
pub fn checksum_of<E: Serialize, M: Serialize>(episodes: &[E], memories: &[M]) -> serde_json::Result<String> {
    fn part<T: Serialize>(hash: &mut Sha256, items: &[T]) -> serde_json::Result<()> {
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                hash.update(b", ");
            }
            hash.update(python_sorted(&serde_json::to_value(item)?).as_bytes());
        }
        Ok(())
    }
    let mut hash = Sha256::new();
    hash.update(b"{\"episodes\": [");
    part(&mut hash, episodes)?;
    hash.update(b"], \"memories\": [");
    part(&mut hash, memories)?;
    hash.update(b"]}");
    Ok(hex::encode(hash.finalize()))
}

/// Why a document was refused (every variant is the client's fault: 400).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DocError {
    #[error("Unsupported format version: {0} (expected 1.0)")]
    Version(String),
    #[error("Checksum mismatch \u{2014} export file may be corrupted or tampered with")]
    Checksum,
    #[error("No subject_id specified and none found in export document")]
    NoSubject,
    /// A record field that cannot be stored: its JSON path and what is wrong.
    #[error("{path}: {message}")]
    Field { path: String, message: String },
}

/// An episode read from a document.
#[derive(Debug, Clone)]
pub struct DocEpisode {
    /// The `id` as written: the key `source_episode_ids` refer to.
    pub key: String,
    /// `id` as a UUID (None when it does not parse; only allowed without `preserve_ids`).
    pub id: Option<Uuid>,
    pub source: String,
    pub kind: String,
    pub payload: Map<String, Value>,
    pub metadata: Map<String, Value>,
    pub provenance: Map<String, Value>,
    pub created_at: DateTime<Utc>,
    pub last_compiled_at: Option<DateTime<Utc>>,
}

/// A memory read from a document.
#[derive(Debug, Clone)]
pub struct DocMemory {
    pub key: String,
    pub id: Option<Uuid>,
    pub kind: MemoryKind,
    pub content: String,
    pub summary: String,
    pub confidence: f64,
    pub valid_from: DateTime<Utc>,
    pub valid_to: Option<DateTime<Utc>>,
    /// As written (remapped by the importer when ids are not preserved).
    pub source_episode_ids: Vec<Uuid>,
    pub metadata: Map<String, Value>,
    /// mnemo's status name.
    pub status: &'static str,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A checked document: target subject and tenant (after the request's overrides) and records.
#[derive(Debug, Clone)]
pub struct Document {
    pub subject_id: String,
    /// The document's tenant, or the request's `target_tenant_id` (None: the caller's).
    pub tenant_id: Option<String>,
    pub episodes: Vec<DocEpisode>,
    pub memories: Vec<DocMemory>,
}

/// Reads a document in Statewave's order of checks: version, checksum, target subject, then
/// every record field (a mistake names its path, e.g. `episodes[3].created_at`).
pub fn read(
    doc: &Value,
    target_subject: Option<&str>,
    target_tenant: Option<&str>,
    preserve_ids: bool,
) -> Result<Document, DocError> {
    let field = |path: String, message: &str| DocError::Field { path, message: message.to_string() };
    let Some(top) = doc.as_object() else {
        return Err(field("document".into(), "must be an object"));
    };
    match top.get("format_version") {
        Some(Value::String(v)) if v == FORMAT_VERSION => {}
        Some(Value::String(v)) => return Err(DocError::Version(v.clone())),
        Some(other) => return Err(DocError::Version(other.to_string())),
        None => return Err(DocError::Version("None".into())),
    }
    let given = top.get("checksum").and_then(Value::as_str);
    if given != Some(checksum(top.get("episodes"), top.get("memories")).as_str()) {
        return Err(DocError::Checksum);
    }
    let subject = target_subject
        .filter(|s| !s.is_empty())
        .or_else(|| top.get("subject_id").and_then(Value::as_str).filter(|s| !s.is_empty()))
        .ok_or(DocError::NoSubject)?;
    if subject.chars().count() > 256 || subject.contains('\0') {
        return Err(field("subject_id".into(), "must be 1-256 characters without NUL"));
    }
    let tenant = match target_tenant {
        Some(t) => Some(t.to_string()),
        None => match top.get("tenant_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(t)) => Some(t.clone()),
            Some(_) => return Err(field("tenant_id".into(), "must be a string or null")),
        },
    };
    if let Some(t) = &tenant {
        if !crate::model::text::valid_tenant_id(t) {
            return Err(field("tenant_id".into(), "must be 1-256 printable characters"));
        }
    }
    let episodes = records(top.get("episodes"), "episodes")?
        .iter()
        .enumerate()
        .map(|(i, v)| read_episode(v, &format!("episodes[{i}]"), preserve_ids))
        .collect::<Result<Vec<_>, _>>()?;
    let memories = records(top.get("memories"), "memories")?
        .iter()
        .enumerate()
        .map(|(i, v)| read_memory(v, &format!("memories[{i}]"), preserve_ids))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Document { subject_id: subject.to_string(), tenant_id: tenant, episodes, memories })
}

fn records<'a>(v: Option<&'a Value>, name: &str) -> Result<&'a [Value], DocError> {
    match v {
        None => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(DocError::Field { path: name.into(), message: "must be an array".into() }),
    }
}

/// Field access on one record, with errors naming `path.field`.
struct Rec<'a> {
    map: &'a Map<String, Value>,
    path: &'a str,
}

impl<'a> Rec<'a> {
    fn err(&self, name: &str, message: impl Into<String>) -> DocError {
        DocError::Field { path: format!("{}.{name}", self.path), message: message.into() }
    }

    fn text(&self, name: &str, required: bool, max: usize) -> Result<Option<String>, DocError> {
        match self.map.get(name) {
            None if required => Err(self.err(name, "is required")),
            None => Ok(None),
            Some(Value::String(s)) if s.contains('\0') => Err(self.err(name, "must not contain NUL")),
            Some(Value::String(s)) if s.chars().count() > max => {
                Err(self.err(name, format!("is over {max} characters")))
            }
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.err(name, "must be a string")),
        }
    }

    fn req_text(&self, name: &str, max: usize) -> Result<String, DocError> {
        Ok(self.text(name, true, max)?.unwrap_or_default())
    }

    fn object(&self, name: &str) -> Result<Map<String, Value>, DocError> {
        match self.map.get(name) {
            None => Ok(Map::new()),
            Some(v) if contains_nul(v) => Err(self.err(name, "must not contain NUL")),
            Some(Value::Object(m)) => Ok(m.clone()),
            Some(_) => Err(self.err(name, "must be an object")),
        }
    }

    fn time(&self, name: &str, required: bool) -> Result<Option<DateTime<Utc>>, DocError> {
        match self.map.get(name) {
            None | Some(Value::Null) if required => Err(self.err(name, "is required")),
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() && !required => Ok(None),
            Some(Value::String(s)) => parse_datetime(s)
                .map(|t| Some(truncate_micros(t)))
                .ok_or_else(|| self.err(name, format!("Invalid isoformat string: '{s}'"))),
            Some(_) => Err(self.err(name, "must be a timestamp string")),
        }
    }

    fn req_time(&self, name: &str) -> Result<DateTime<Utc>, DocError> {
        Ok(self.time(name, true)?.unwrap_or_default())
    }

    /// The record's `id`: required, a UUID when ids are preserved.
    fn id(&self, preserve_ids: bool) -> Result<(String, Option<Uuid>), DocError> {
        let key = match self.map.get("id") {
            None => return Err(self.err("id", "is required")),
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
        };
        let id = parse_uuid(&key);
        if preserve_ids && id.is_none() {
            return Err(self.err("id", format!("badly formed hexadecimal UUID string: '{key}'")));
        }
        Ok((key, id))
    }
}

/// What Python's `uuid.UUID()` accepts: any case, with or without hyphens, braces or `urn:uuid:`.
fn parse_uuid(s: &str) -> Option<Uuid> {
    let s = s.trim();
    let s = s.strip_prefix("urn:").unwrap_or(s);
    let s = s.strip_prefix("uuid:").unwrap_or(s);
    let s = s.trim_start_matches('{').trim_end_matches('}').replace('-', "");
    (s.len() == 32).then(|| Uuid::try_parse(&s).ok()).flatten()
}

fn rec<'a>(v: &'a Value, path: &'a str) -> Result<Rec<'a>, DocError> {
    match v.as_object() {
        Some(map) => Ok(Rec { map, path }),
        None => Err(DocError::Field { path: path.into(), message: "must be an object".into() }),
    }
}

fn read_episode(v: &Value, path: &str, preserve_ids: bool) -> Result<DocEpisode, DocError> {
    let r = rec(v, path)?;
    let (key, id) = r.id(preserve_ids)?;
    let payload = match r.map.get("payload") {
        None => return Err(r.err("payload", "is required")),
        Some(p) if contains_nul(p) => return Err(r.err("payload", "must not contain NUL")),
        Some(Value::Object(m)) => m.clone(),
        // mnemo stores object payloads only (everything written through /v1/episodes is one).
        Some(_) => return Err(r.err("payload", "must be an object")),
    };
    Ok(DocEpisode {
        key,
        id,
        source: r.req_text("source", 256)?,
        kind: r.req_text("type", 128)?,
        payload,
        metadata: r.object("metadata")?,
        provenance: r.object("provenance")?,
        created_at: r.req_time("created_at")?,
        last_compiled_at: r.time("last_compiled_at", false)?,
    })
}

fn read_memory(v: &Value, path: &str, preserve_ids: bool) -> Result<DocMemory, DocError> {
    let r = rec(v, path)?;
    let (key, id) = r.id(preserve_ids)?;
    let confidence = match r.map.get("confidence") {
        None => 1.0,
        Some(Value::Number(n)) => {
            // Refused, not clamped: a confidence of 1e308 is a broken or hostile file, and a clamped
            // 1.0 would rank it above every honest memory.
            n.as_f64()
                .filter(|f| (0.0..=1.0).contains(f))
                .ok_or_else(|| r.err("confidence", "must be a number from 0 to 1"))?
        }
        Some(_) => return Err(r.err("confidence", "must be a number")),
    };
    let status_text = r.text("status", false, 32)?.unwrap_or_else(|| "active".into());
    let status = status_from_statewave(&status_text)
        .ok_or_else(|| r.err("status", format!("'{status_text}' is not one of active, superseded, deleted")))?;
    let source_episode_ids = match r.map.get("source_episode_ids") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item.as_str()
                    .and_then(parse_uuid)
                    .ok_or_else(|| r.err(&format!("source_episode_ids[{i}]"), "must be a UUID string"))
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(r.err("source_episode_ids", "must be an array")),
    };
    let kind_text = r.req_text("kind", 64)?;
    if kind_text.is_empty() {
        return Err(r.err("kind", "must not be empty"));
    }
    // Stored memories are always of a kind mnemo knows (reads decode the column as one).
    let kind = MemoryKind::parse(&kind_text).ok_or_else(|| {
        let known: Vec<&str> = MemoryKind::ALL.iter().map(|k| k.as_str()).collect();
        r.err("kind", format!("'{kind_text}' is not one of {}", known.join(", ")))
    })?;
    Ok(DocMemory {
        key,
        id,
        kind,
        content: r.req_text("content", usize::MAX)?,
        summary: r.text("summary", false, usize::MAX)?.unwrap_or_default(),
        confidence,
        valid_from: r.req_time("valid_from")?,
        valid_to: r.time("valid_to", false)?,
        source_episode_ids,
        metadata: r.object("metadata")?,
        status,
        created_at: r.req_time("created_at")?,
        updated_at: r.req_time("updated_at")?,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The one-episode, one-memory test vector of the spec (§1.5).
    fn vector_arrays() -> (Value, Value) {
        let id1 = "00000000-0000-4000-8000-000000000001";
        let episodes = json!([{
            "id": id1, "subject_id": "user:1", "tenant_id": null, "source": "chat", "type": "message",
            "payload": {"text": "Zo\u{eb} \u{1f600} \"hi\"\n", "n": 1, "x": 1.0, "y": 0.00001},
            "metadata": {}, "provenance": {}, "created_at": "2026-01-01T00:00:00+00:00", "last_compiled_at": null,
        }]);
        let memories = json!([{
            "id": "00000000-0000-4000-8000-000000000002", "subject_id": "user:1", "tenant_id": null,
            "kind": "profile_fact", "content": "likes tea", "summary": "likes tea", "confidence": 1.0,
            "valid_from": "2026-01-01T00:00:00+00:00", "valid_to": null, "source_episode_ids": [id1],
            "metadata": {}, "status": "active", "embedding": null,
            "created_at": "2026-01-01T00:00:00.000001+00:00", "updated_at": "2026-01-01T00:00:00.000001+00:00",
        }]);
        (episodes, memories)
    }

    #[test]
    fn spec_test_vectors() {
        assert_eq!(checksum(None, None), "743a461383d986fa6fd7653ca7d0f5f5fb50bfd4b5aaa418e37f7d70a30796e5");
        assert_eq!(
            checksum(Some(&json!([])), Some(&json!([]))),
            "743a461383d986fa6fd7653ca7d0f5f5fb50bfd4b5aaa418e37f7d70a30796e5"
        );
        let (e, m) = vector_arrays();
        let text = python_sorted(&json!({"episodes": e, "memories": m}));
        assert!(text.starts_with(
            "{\"episodes\": [{\"created_at\": \"2026-01-01T00:00:00+00:00\", \"id\": \
             \"00000000-0000-4000-8000-000000000001\", \"last_compiled_at\": null, \"metadata\": {}, \"payload\": \
             {\"n\": 1, \"text\": \"Zo\\u00eb \\ud83d\\ude00 \\\"hi\\\"\\n\", \"x\": 1.0, \"y\": 1e-05}, "
        ));
        assert!(text.contains("], \"memories\": ["));
        assert_eq!(checksum(Some(&e), Some(&m)), "d994f11dfc225e38c07a2f1594bb769047425d8d57ea4bb95571d2a2f330bf19");
    }

    #[test]
    fn piecewise_checksum_equals_the_whole() {
        let (e, m) = vector_arrays();
        let (e, m) = (e.as_array().unwrap().clone(), m.as_array().unwrap().clone());
        let two = [e[0].clone(), e[0].clone()];
        for (eps, mems) in [(&e[..], &m[..]), (&two[..], &[][..]), (&[][..], &[][..])] {
            let whole = checksum(Some(&Value::Array(eps.to_vec())), Some(&Value::Array(mems.to_vec())));
            assert_eq!(checksum_of(eps, mems).unwrap(), whole);
        }
    }

    #[test]
    fn own_fixture_checksum_holds() {
        let doc: Value =
            serde_json::from_str(include_str!("../../../tests/fixtures/statewave/small-export.json")).unwrap();
        assert_eq!(doc["checksum"].as_str().unwrap(), checksum(doc.get("episodes"), doc.get("memories")));
        let read = read(&doc, None, None, true).unwrap();
        assert_eq!(read.episodes.len(), 2);
        assert_eq!(read.memories[1].status, "superseded");
        assert_eq!(read.tenant_id.as_deref(), Some("acme"));
    }

    fn signed(mut doc: Value) -> Value {
        doc["checksum"] = json!(checksum(doc.get("episodes"), doc.get("memories")));
        doc
    }

    #[test]
    fn refusals_come_in_statewave_order() {
        let (e, m) = vector_arrays();
        let good = signed(json!({"format_version": "1.0", "subject_id": "user:1", "episodes": e, "memories": m}));
        assert!(read(&good, None, None, true).is_ok());
        for bad in [json!(1.0), json!("1"), Value::Null] {
            let mut doc = good.clone();
            doc["format_version"] = bad;
            assert!(matches!(read(&doc, None, None, true), Err(DocError::Version(_))));
        }
        let mut tampered = good.clone();
        tampered["episodes"][0]["source"] = json!("email");
        assert_eq!(read(&tampered, None, None, true).unwrap_err(), DocError::Checksum);
        let mut retargeted = good.clone();
        retargeted["subject_id"] = json!("");
        assert_eq!(read(&retargeted, None, None, true).unwrap_err(), DocError::NoSubject);
        assert_eq!(read(&retargeted, Some("user:2"), None, true).unwrap().subject_id, "user:2");
        let mut bad_time = good.clone();
        bad_time["memories"][0]["valid_from"] = json!("yesterday");
        let err = read(&signed(bad_time), None, None, true).unwrap_err();
        assert!(err.to_string().starts_with("memories[0].valid_from: "), "{err}");
        let mut bad_id = good.clone();
        bad_id["episodes"][0]["id"] = json!("ep-1");
        let bad_id = signed(bad_id);
        assert!(read(&bad_id, None, None, true).unwrap_err().to_string().starts_with("episodes[0].id"));
        assert_eq!(read(&bad_id, None, None, false).unwrap().episodes[0].key, "ep-1");
        let mut bad_kind = good.clone();
        bad_kind["memories"][0]["kind"] = json!("opinion");
        let err = read(&signed(bad_kind), None, None, true).unwrap_err().to_string();
        let want = "memories[0].kind: 'opinion' is not one of profile_fact, episode_summary, procedure, artifact_ref";
        assert_eq!(err, want);
        assert_eq!(read(&good, None, None, true).unwrap().memories[0].kind, MemoryKind::ProfileFact);
    }

    #[test]
    fn uuids_parse_as_python_does() {
        let id = Uuid::parse_str("00000000-0000-4000-8000-000000000001").unwrap();
        for s in [
            "00000000-0000-4000-8000-000000000001",
            "{00000000000040008000000000000001}",
            "urn:uuid:00000000-0000-4000-8000-000000000001",
            "00000000-0000-4000-8000-00000000000A",
        ] {
            assert!(parse_uuid(s).is_some(), "{s}");
        }
        assert_eq!(parse_uuid("00000000000040008000000000000001"), Some(id));
        assert_eq!(parse_uuid("nope"), None);
    }

    #[test]
    fn statuses_map_both_ways() {
        assert_eq!(status_from_statewave("deleted"), Some("tombstoned"));
        assert_eq!(status_to_statewave("tombstoned"), "deleted");
        assert_eq!(status_from_statewave("archived"), None);
    }
}
