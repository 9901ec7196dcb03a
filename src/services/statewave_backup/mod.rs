//! Statewave's subject backup (`GET /admin/export/{subject_id}`, `POST /admin/import`, and
//! `mnemo export|import --format statewave`): one subject, one document, one transaction.
//!
//! Import keeps ids, kinds, validity and status; it re-derives claims through the tenant's
//! registry, embeds with mnemo's own embedder (Statewave's vectors come from another model),
//! gives episodes the subject's next seqs in document order and moves the compile cursor past
//! the ones Statewave had compiled, so their memories are not made a second time.

pub mod document;
mod import;
pub mod records;
pub mod stream;

use chrono::{DateTime, Utc};
use futures_util::TryStreamExt;
use sqlx::PgPool;

pub use document::DocError;
pub use import::{import, ImportError, ImportRequest, Imported};
pub use records::ExportDocument;

use crate::db;
use records::{EpisodeRecord, MemoryRecord};

/// The subject's backup document built in memory (the implementation before streaming, kept
/// for one commit as the reference the streamed bytes are compared with).
pub async fn export_in_memory(
    pool: &PgPool,
    tenant: &str,
    subject_id: &str,
    exported_at: &DateTime<Utc>,
) -> anyhow::Result<Option<ExportDocument>> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    let episodes: Vec<_> = db::backup::subject_episodes(&mut tx, tenant, subject_id).try_collect().await?;
    let sql = db::backup::subject_memories_sql();
    let memories: Vec<_> = db::backup::subject_memories(&mut tx, &sql, tenant, subject_id).try_collect().await?;
    let cursor = db::backup::cursor_row(&mut tx, tenant, subject_id).await?;
    tx.commit().await?;
    if episodes.is_empty() && memories.is_empty() {
        return Ok(None);
    }
    // mnemo keeps one cursor per subject, not a time per episode: an episode it has compiled
    // gets the time the cursor last moved.
    let compiled_at = |seq: i64| cursor.as_ref().filter(|(c, _)| seq <= *c).map(|(_, at)| at);
    // Rows are turned into records one by one and dropped, so a subject is held once, not twice.
    let episodes: Vec<EpisodeRecord> =
        episodes.into_iter().map(|e| EpisodeRecord::of(e.episode, tenant, compiled_at(e.seq))).collect();
    let memories: Vec<MemoryRecord> = memories.into_iter().map(|m| MemoryRecord::of(m, tenant)).collect();
    Ok(Some(ExportDocument::new(subject_id, tenant, exported_at, episodes, memories)?))
}
