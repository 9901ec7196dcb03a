//! A subject's episodes and memories, one page of each (`GET /v1/timeline`, MCP `timeline`).

use sqlx::PgPool;

use crate::db;
pub use crate::db::episodes::EpisodeFilter;
use crate::model::episode::Episode;
use crate::model::memory::Memory;

/// Which page to read.
#[derive(Debug, Clone)]
pub struct PageQuery {
    pub subject_id: String,
    pub limit: i64,
    pub offset: i64,
    /// Take the newest page (still returned oldest first).
    pub newest_first: bool,
    /// Only active, unexpired memories (`status` never filters episodes).
    pub active_only: bool,
    /// Episodes by time and type; memories by the same time window on `valid_from` (the MCP
    /// Statewave timeline's `since`, `until`, `kinds`; the HTTP route sets none).
    pub filter: EpisodeFilter,
}

/// One page of each collection and whether more remain.
#[derive(Debug)]
pub struct Page {
    pub episodes: Vec<Episode>,
    pub episodes_has_more: bool,
    pub memories: Vec<Memory>,
    pub memories_has_more: bool,
}

/// Reads one page of the subject's episodes and memories in one tenant-scoped transaction.
pub async fn page(pool: &PgPool, tenant: &str, q: &PageQuery) -> sqlx::Result<Page> {
    let mut conn = db::scope::begin(pool, tenant).await?;
    let (episodes, episodes_has_more) =
        db::episodes::page(&mut conn, tenant, &q.subject_id, q.limit, q.offset, q.newest_first, &q.filter).await?;
    let window = (q.filter.since, q.filter.until);
    let (memories, memories_has_more) =
        db::memories::page(&mut conn, tenant, &q.subject_id, q.limit, q.offset, q.newest_first, q.active_only, window)
            .await?;
    Ok(Page { episodes, episodes_has_more, memories, memories_has_more })
}
