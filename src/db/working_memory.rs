//! Queries of sessions as working memory: the session listing, session metadata and the
//! append-only compaction snapshots (`session_snapshots`).

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use sqlx::types::Json;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::db::episodes::EpisodeWith;
use crate::model::episode::Episode;

/// One session of a subject: its episodes' count and time span, its metadata, its latest snapshot.
#[derive(Debug, Clone)]
pub struct SessionRow {
    pub session_id: String,
    pub episode_count: i64,
    pub first_at: DateTime<Utc>,
    pub last_at: DateTime<Utc>,
    pub metadata: Value,
    pub snapshot_id: Option<Uuid>,
}

/// A stored snapshot.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct SnapshotRow {
    pub id: Uuid,
    pub session_id: String,
    pub position: i32,
    pub prev_id: Option<Uuid>,
    pub summary: String,
    pub pinned: Vec<Uuid>,
    pub covers_through: i64,
    pub created_at: DateTime<Utc>,
}

/// An episode with its place in the subject's log.
#[derive(Debug, Clone)]
pub struct LoggedEpisode {
    pub episode: Episode,
    pub seq: i64,
}

impl From<EpisodeWith<i64>> for LoggedEpisode {
    fn from(r: EpisodeWith<i64>) -> Self {
        let (episode, seq) = r.split();
        LoggedEpisode { episode, seq }
    }
}

// The session listing and the one-session read share their select: the sessions of `$1`/`$2`
// (tenant, subject) grouped from their episodes.

/// A page of the subject's sessions, most recent activity first.
pub async fn sessions_page(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    limit: i64,
    offset: i64,
) -> sqlx::Result<Vec<SessionRow>> {
    sessions(conn, tenant, subject_id, None, limit, offset).await
}

/// One session, None when the subject has no episode in it.
pub async fn session(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    session_id: &str,
) -> sqlx::Result<Option<SessionRow>> {
    Ok(sessions(conn, tenant, subject_id, Some(session_id), 1, 0).await?.pop())
}

/// The subject's sessions (only `only` when given), most recent activity first.
async fn sessions(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    only: Option<&str>,
    limit: i64,
    offset: i64,
) -> sqlx::Result<Vec<SessionRow>> {
    sqlx::query_as!(
        SessionRow,
        r#"SELECT e.session_id AS "session_id!", count(*) AS "episode_count!", min(e.occurred_at) AS "first_at!",
           max(e.occurred_at) AS "last_at!", COALESCE(m.metadata, '{}'::jsonb) AS "metadata!",
           (SELECT s.id FROM session_snapshots s WHERE s.tenant_id = $1 AND s.subject_id = $2
              AND s.session_id = e.session_id ORDER BY s.position DESC LIMIT 1) AS snapshot_id
         FROM episodes e LEFT JOIN session_metadata m ON m.tenant_id = $1 AND m.subject_id = $2
           AND m.session_id = e.session_id
         WHERE e.tenant_id = $1 AND e.subject_id = $2 AND e.session_id IS NOT NULL
           AND ($3::text IS NULL OR e.session_id = $3)
         GROUP BY e.session_id, m.metadata ORDER BY 4 DESC, e.session_id LIMIT $4 OFFSET $5"#,
        tenant,
        subject_id,
        only,
        limit,
        offset
    )
    .fetch_all(conn)
    .await
}

/// The session's latest snapshot; with `as_of`, the latest one recorded by then.
pub async fn latest_snapshot(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    session_id: &str,
    as_of: Option<DateTime<Utc>>,
) -> sqlx::Result<Option<SnapshotRow>> {
    sqlx::query_as!(
        SnapshotRow,
        "SELECT id, session_id, position, prev_id, summary, pinned, covers_through, created_at FROM session_snapshots \
         WHERE tenant_id = $1 AND subject_id = $2 AND session_id = $3 AND ($4::timestamptz IS NULL OR created_at <= $4) \
         ORDER BY position DESC LIMIT 1",
        tenant,
        subject_id,
        session_id,
        as_of
    )
    .fetch_optional(conn)
    .await
}

/// What a snapshot write stores.
#[derive(Debug, Clone)]
pub struct SnapshotWrite<'a> {
    pub subject_id: &'a str,
    pub session_id: &'a str,
    pub id: Uuid,
    pub position: i32,
    pub prev_id: Option<Uuid>,
    pub summary: &'a str,
    pub pinned: &'a [Uuid],
    pub covers_through: i64,
}

/// Appends a snapshot; None when another one already took its position (a lost race).
pub async fn insert_snapshot(
    conn: &mut PgConnection,
    tenant: &str,
    w: &SnapshotWrite<'_>,
) -> sqlx::Result<Option<SnapshotRow>> {
    sqlx::query_as!(
        SnapshotRow,
        "INSERT INTO session_snapshots (tenant_id, subject_id, session_id, id, position, prev_id, summary, pinned, \
           covers_through) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
         ON CONFLICT (tenant_id, subject_id, session_id, position) DO NOTHING RETURNING id, session_id, position, prev_id, summary, pinned, covers_through, created_at",
        tenant,
        w.subject_id,
        w.session_id,
        w.id,
        w.position,
        w.prev_id,
        w.summary,
        w.pinned,
        w.covers_through
    )
    .fetch_optional(conn)
    .await
}

/// The session's episodes with a seq above `after`, in log order, at most `limit`.
pub async fn episodes_after(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    session_id: &str,
    after: i64,
    limit: i64,
) -> sqlx::Result<Vec<LoggedEpisode>> {
    let rows = sqlx::query_as!(
        EpisodeWith::<i64>,
        "SELECT id, subject_id, source, type AS kind, payload, metadata, provenance, session_id, occurred_at, created_at, \
         seq AS extra FROM episodes \
         WHERE tenant_id = $1 AND subject_id = $2 AND session_id = $3 AND seq > $4 ORDER BY seq LIMIT $5",
        tenant,
        subject_id,
        session_id,
        after,
        limit
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(LoggedEpisode::from).collect())
}

/// The session's episodes among `ids`, in log order.
pub async fn episodes_by_id(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    session_id: &str,
    ids: &[Uuid],
) -> sqlx::Result<Vec<LoggedEpisode>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows = sqlx::query_as!(
        EpisodeWith::<i64>,
        "SELECT id, subject_id, source, type AS kind, payload, metadata, provenance, session_id, occurred_at, created_at, \
         seq AS extra FROM episodes \
         WHERE tenant_id = $1 AND subject_id = $2 AND session_id = $3 AND id = ANY($4) ORDER BY seq",
        tenant,
        subject_id,
        session_id,
        ids
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(LoggedEpisode::from).collect())
}

/// Whether the episode at `seq` belongs to the session.
pub async fn in_session(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    session_id: &str,
    seq: i64,
) -> sqlx::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM episodes WHERE tenant_id = $1 AND subject_id = $2 AND seq = $3
           AND session_id = $4) AS "exists!""#,
        tenant,
        subject_id,
        seq,
        session_id
    )
    .fetch_one(conn)
    .await
}

/// Merges `set` into the session's metadata and removes the `remove` keys; returns the result.
pub async fn patch_metadata(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    session_id: &str,
    set: &Map<String, Value>,
    remove: &[String],
) -> sqlx::Result<Value> {
    sqlx::query_scalar!(
        "INSERT INTO session_metadata (tenant_id, subject_id, session_id, metadata) \
         VALUES ($1, $2, $3, $4::jsonb - $5::text[]) \
         ON CONFLICT (tenant_id, subject_id, session_id) DO UPDATE \
           SET metadata = (session_metadata.metadata || $4::jsonb) - $5::text[], updated_at = now() \
         RETURNING metadata",
        tenant,
        subject_id,
        session_id,
        Json(set) as _,
        remove
    )
    .fetch_one(conn)
    .await
}

/// Ids of the session's episodes a snapshot covers (seq up to `covers_through`, not pinned),
/// among `among` when given.
pub async fn covered_ids(
    conn: &mut PgConnection,
    tenant: &str,
    subject_id: &str,
    snapshot: &SnapshotRow,
    among: Option<&[Uuid]>,
) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar!(
        "SELECT id FROM episodes WHERE tenant_id = $1 AND subject_id = $2 AND session_id = $3 AND seq <= $4 \
           AND NOT (id = ANY($5)) AND ($6::uuid[] IS NULL OR id = ANY($6))",
        tenant,
        subject_id,
        snapshot.session_id,
        snapshot.covers_through,
        &snapshot.pinned,
        among
    )
    .fetch_all(conn)
    .await
}
