//! Sessions as working memory: the session log, its metadata and its compaction snapshots.
//!
//! A snapshot stands for every episode of a session up to a cursor (an absolute position in
//! the subject's log: the episode's ingest seq, so it stays valid whoever appends) except the
//! pinned ones. Snapshots form a chain per session; a write names the snapshot it replaces
//! (`prev`) and is refused when that is no longer the latest (compare-and-swap), so two
//! replicas of an agent never overwrite each other's summary. Writers serialise on the
//! subject's submit lock, which an erasure also holds, and the unique (session, position)
//! key stops a lost race even without it.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{Map, Value};
use sqlx::PgPool;
use uuid::Uuid;

use crate::db;
use crate::db::working_memory::{LoggedEpisode, SessionRow, SnapshotRow, SnapshotWrite};
use crate::model::id::new_id;

/// Longest summary, in chars.
pub const MAX_SUMMARY_CHARS: usize = 32_768;
/// Most pinned episodes per snapshot.
pub const MAX_PINNED: usize = 100;
/// Largest session metadata, serialized, in bytes.
pub const MAX_METADATA_BYTES: usize = 16_384;

const CURSOR_PREFIX: &str = "seq:";

/// The opaque cursor of a position in the subject's log.
pub fn cursor(seq: i64) -> String {
    URL_SAFE_NO_PAD.encode(format!("{CURSOR_PREFIX}{seq}"))
}

/// The log position a cursor names; None when it is not one of [`cursor`]'s.
pub fn parse_cursor(text: &str) -> Option<i64> {
    let raw = URL_SAFE_NO_PAD.decode(text.as_bytes()).ok()?;
    let seq: i64 = std::str::from_utf8(&raw).ok()?.strip_prefix(CURSOR_PREFIX)?.parse().ok()?;
    (seq >= 1 && cursor(seq) == text).then_some(seq)
}

/// One session with its latest snapshot, the pinned episodes and a page of the tail.
#[derive(Debug, Clone)]
pub struct SessionView {
    pub session: SessionRow,
    pub snapshot: Option<SnapshotRow>,
    /// The snapshot's pinned episodes, in log order.
    pub pinned: Vec<LoggedEpisode>,
    /// Episodes after the snapshot's cursor (and after `after`), in log order.
    pub episodes: Vec<LoggedEpisode>,
    /// Whether more episodes follow the page.
    pub has_more: bool,
}

/// A page of the subject's sessions, most recent activity first, and whether more follow.
pub async fn list(
    pool: &PgPool,
    tenant: &str,
    subject_id: &str,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<SessionRow>, bool)> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    let mut rows = db::working_memory::sessions_page(&mut tx, tenant, subject_id, limit + 1, offset).await?;
    tx.commit().await?;
    let more = rows.len() as i64 > limit;
    rows.truncate(usize::try_from(limit).unwrap_or(0));
    Ok((rows, more))
}

/// The session (None when the subject has no episode in it): its latest snapshot, and up to
/// `limit` episodes after both the snapshot's cursor and `after`.
pub async fn view(
    pool: &PgPool,
    tenant: &str,
    subject_id: &str,
    session_id: &str,
    after: Option<i64>,
    limit: i64,
) -> sqlx::Result<Option<SessionView>> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    let Some(session) = db::working_memory::session(&mut tx, tenant, subject_id, session_id).await? else {
        return Ok(None);
    };
    let snapshot = db::working_memory::latest_snapshot(&mut tx, tenant, subject_id, session_id, None).await?;
    let from = snapshot.as_ref().map_or(0, |s| s.covers_through).max(after.unwrap_or(0));
    let mut episodes =
        db::working_memory::episodes_after(&mut tx, tenant, subject_id, session_id, from, limit + 1).await?;
    let pinned = match &snapshot {
        Some(s) => db::working_memory::episodes_by_id(&mut tx, tenant, subject_id, session_id, &s.pinned).await?,
        None => Vec::new(),
    };
    tx.commit().await?;
    let has_more = episodes.len() as i64 > limit;
    episodes.truncate(usize::try_from(limit).unwrap_or(0));
    Ok(Some(SessionView { session, snapshot, pinned, episodes, has_more }))
}

/// A snapshot write, validated for shape.
#[derive(Debug, Clone)]
pub struct NewSnapshot {
    pub summary: String,
    pub pinned: Vec<Uuid>,
    pub covers_through: i64,
    pub prev: Option<Uuid>,
}

/// Why a snapshot was not stored.
#[derive(Debug)]
pub enum SnapshotRefusal {
    /// The subject has no episode in this session.
    NoSession,
    /// `prev` is not the latest snapshot: the latest (None: there is none yet).
    Conflict(Option<Box<SnapshotRow>>),
    /// The cursor names no episode of this session, or does not move past the latest snapshot.
    InvalidCursor(String),
    /// Pinned ids that are not episodes of this session.
    ForeignPinned(Vec<Uuid>),
}

/// Stores a snapshot if `prev` is still the session's latest (compare-and-swap).
pub async fn put_snapshot(
    pool: &PgPool,
    tenant: &str,
    subject_id: &str,
    session_id: &str,
    new: &NewSnapshot,
) -> anyhow::Result<Result<SnapshotRow, SnapshotRefusal>> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    db::jobs::lock_submit(&mut tx, tenant, subject_id).await?;
    if db::working_memory::session(&mut tx, tenant, subject_id, session_id).await?.is_none() {
        return Ok(Err(SnapshotRefusal::NoSession));
    }
    let latest = db::working_memory::latest_snapshot(&mut tx, tenant, subject_id, session_id, None).await?;
    if latest.as_ref().map(|s| s.id) != new.prev {
        return Ok(Err(SnapshotRefusal::Conflict(latest.map(Box::new))));
    }
    if !db::working_memory::in_session(&mut tx, tenant, subject_id, session_id, new.covers_through).await? {
        return Ok(Err(SnapshotRefusal::InvalidCursor("covers_through names no episode of this session".into())));
    }
    if let Some(l) = latest.as_ref().filter(|l| new.covers_through <= l.covers_through) {
        return Ok(Err(SnapshotRefusal::InvalidCursor(format!(
            "covers_through must lie after the latest snapshot's ({})",
            cursor(l.covers_through)
        ))));
    }
    let found = db::working_memory::episodes_by_id(&mut tx, tenant, subject_id, session_id, &new.pinned).await?;
    let foreign: Vec<Uuid> =
        new.pinned.iter().copied().filter(|id| !found.iter().any(|e| e.episode.id == *id)).collect();
    if !foreign.is_empty() {
        return Ok(Err(SnapshotRefusal::ForeignPinned(foreign)));
    }
    let write = SnapshotWrite {
        subject_id,
        session_id,
        id: new_id(),
        position: latest.as_ref().map_or(1, |l| l.position + 1),
        prev_id: new.prev,
        summary: &new.summary,
        pinned: &new.pinned,
        covers_through: new.covers_through,
    };
    match db::working_memory::insert_snapshot(&mut tx, tenant, &write).await? {
        Some(row) => {
            tx.commit().await?;
            Ok(Ok(row))
        }
        None => {
            let latest = db::working_memory::latest_snapshot(&mut tx, tenant, subject_id, session_id, None).await?;
            Ok(Err(SnapshotRefusal::Conflict(latest.map(Box::new))))
        }
    }
}

/// Sets and removes keys of the session's metadata; None when the session has no episode.
/// Err with the size when the result would exceed [`MAX_METADATA_BYTES`] (nothing written).
pub async fn patch_metadata(
    pool: &PgPool,
    tenant: &str,
    subject_id: &str,
    session_id: &str,
    patch: &Map<String, Value>,
) -> anyhow::Result<Option<Result<SessionRow, usize>>> {
    let set: Map<String, Value> =
        patch.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), v.clone())).collect();
    let remove: Vec<String> = patch.iter().filter(|(_, v)| v.is_null()).map(|(k, _)| k.clone()).collect();
    let mut tx = db::scope::begin(pool, tenant).await?;
    db::jobs::lock_submit(&mut tx, tenant, subject_id).await?;
    if db::working_memory::session(&mut tx, tenant, subject_id, session_id).await?.is_none() {
        return Ok(None);
    }
    let merged = db::working_memory::patch_metadata(&mut tx, tenant, subject_id, session_id, &set, &remove).await?;
    let size = serde_json::to_string(&merged)?.len();
    if size > MAX_METADATA_BYTES {
        return Ok(Some(Err(size)));
    }
    let row = db::working_memory::session(&mut tx, tenant, subject_id, session_id).await?;
    tx.commit().await?;
    Ok(row.map(Ok))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_reject_anything_else() {
        for seq in [1, 2, 99, 1_000_000, i64::MAX] {
            assert_eq!(parse_cursor(&cursor(seq)), Some(seq));
        }
        assert_ne!(cursor(1), "1");
        for bad in ["", "1", "seq:1", "c2VxOjA", "c2VxOi0x", "c2VxOnh5", "!!", "c2VxOjE="] {
            assert_eq!(parse_cursor(bad), None, "{bad}");
        }
        // Same seq, other spelling (leading zero) is not a cursor this server wrote.
        assert_eq!(parse_cursor(&URL_SAFE_NO_PAD.encode("seq:01")), None);
    }
}
