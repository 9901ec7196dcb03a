//! Writing the backup document while its rows are read, for `GET /admin/export/{subject_id}`
//! and `mnemo export --format statewave`: memory stays flat however large the subject is.
//!
//! Statewave's member order puts `counts` before the records and `checksum` after them, so one
//! pass over one snapshot suffices: the counts are read first (same REPEATABLE READ snapshot as
//! the rows), every record is written and hashed in canonical form as it streams by, and the
//! checksum is written last. The bytes are those `serde_json` gives for the whole
//! `ExportDocument` (see the byte-identity test in tests/portability.rs).

use std::future::Future;

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::{PgPool, Postgres, Transaction};

use super::document::FORMAT_VERSION;
use super::records::{Counts, EpisodeRecord, MemoryRecord};
use crate::db;
use crate::model::time::isoformat;
use crate::progress::Progress;
use crate::receipts::canonical::python_sorted;

/// Bytes gathered before they are handed to the sink.
pub const CHUNK_BYTES: usize = 64 * 1024;

/// Where the document's bytes go, a chunk at a time (a file, stdout, an HTTP body).
pub trait Sink: Send {
    /// Takes the next chunk; an error stops the export.
    fn send(&mut self, chunk: Vec<u8>) -> impl Future<Output = std::io::Result<()>> + Send;
}

/// An export ready to write: its snapshot is open and its counts known.
pub struct Export {
    tx: Transaction<'static, Postgres>,
    tenant: String,
    subject_id: String,
    exported_at: String,
    counts: Counts,
    cursor: Option<(i64, DateTime<Utc>)>,
}

/// Opens the subject's snapshot; None when it has neither episodes nor memories.
pub async fn open(
    pool: &PgPool,
    tenant: &str,
    subject_id: &str,
    exported_at: &DateTime<Utc>,
) -> anyhow::Result<Option<Export>> {
    let mut tx = db::dump::begin_snapshot(pool, tenant).await?;
    let (episodes, memories) = db::backup::subject_counts(&mut tx, tenant, subject_id).await?;
    if episodes == 0 && memories == 0 {
        return Ok(None);
    }
    let cursor = db::backup::cursor_row(&mut tx, tenant, subject_id).await?;
    Ok(Some(Export {
        tx,
        tenant: tenant.to_string(),
        subject_id: subject_id.to_string(),
        exported_at: isoformat(exported_at),
        counts: Counts { episodes: usize::try_from(episodes)?, memories: usize::try_from(memories)? },
        cursor,
    }))
}

/// The bytes of the document so far, not yet sent, and the running checksum.
struct Out<'s, S: Sink> {
    sink: &'s mut S,
    buf: Vec<u8>,
    hash: Sha256,
}

impl<S: Sink> Out<'_, S> {
    async fn spill(&mut self) -> std::io::Result<()> {
        if self.buf.len() >= CHUNK_BYTES {
            let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK_BYTES + 4096));
            self.sink.send(chunk).await?;
        }
        Ok(())
    }

    /// One record: compact in the file, Python-canonical in the hash.
    async fn record<T: Serialize>(&mut self, first: bool, record: &T) -> anyhow::Result<()> {
        if !first {
            self.buf.push(b',');
            self.hash.update(b", ");
        }
        serde_json::to_writer(&mut self.buf, record)?;
        self.hash.update(python_sorted(&serde_json::to_value(record)?).as_bytes());
        self.spill().await?;
        Ok(())
    }
}

impl Export {
    /// Episodes plus memories.
    pub fn rows(&self) -> u64 {
        (self.counts.episodes + self.counts.memories) as u64
    }

    /// Writes the whole document to `sink` (no trailing newline), advancing `progress` per record.
    pub async fn write<S: Sink>(self, sink: &mut S, progress: &dyn Progress) -> anyhow::Result<()> {
        let Export { mut tx, tenant, subject_id, exported_at, counts, cursor } = self;
        let s = |v: &str| serde_json::to_string(v);
        let head = format!(
            "{{\"format_version\":{},\"exported_at\":{},\"subject_id\":{},\"tenant_id\":{},\"counts\":{},\"episodes\":[",
            s(FORMAT_VERSION)?,
            s(&exported_at)?,
            s(&subject_id)?,
            s(&tenant)?,
            serde_json::to_string(&counts)?
        );
        let mut out = Out { sink, buf: head.into_bytes(), hash: Sha256::new() };
        out.hash.update(b"{\"episodes\": [");
        progress.start("exporting", (counts.episodes + counts.memories) as u64);
        // mnemo keeps one cursor per subject, not a time per episode: an episode it has
        // compiled gets the time the cursor last moved.
        let compiled_at = |seq: i64| cursor.as_ref().filter(|(c, _)| seq <= *c).map(|(_, at)| at);
        let mut written = 0usize;
        {
            let mut rows = db::backup::subject_episodes(&mut tx, &tenant, &subject_id);
            while let Some(row) = rows.next().await {
                let row = row?;
                let record = EpisodeRecord::of(row.episode, &tenant, compiled_at(row.seq));
                out.record(written == 0, &record).await?;
                written += 1;
                progress.advance(1);
            }
        }
        anyhow::ensure!(written == counts.episodes, "episodes changed under the export's snapshot");
        out.buf.extend_from_slice(b"],\"memories\":[");
        out.hash.update(b"], \"memories\": [");
        written = 0;
        {
            let mut rows = db::backup::subject_memories(&mut tx, &tenant, &subject_id);
            while let Some(row) = rows.next().await {
                out.record(written == 0, &MemoryRecord::of(row?, &tenant)).await?;
                written += 1;
                progress.advance(1);
            }
        }
        anyhow::ensure!(written == counts.memories, "memories changed under the export's snapshot");
        drop(tx);
        out.hash.update(b"]}");
        let checksum = hex::encode(std::mem::take(&mut out.hash).finalize());
        out.buf.extend_from_slice(format!("],\"checksum\":{}}}", s(&checksum)?).as_bytes());
        let last = std::mem::take(&mut out.buf);
        out.sink.send(last).await?;
        progress.finish();
        Ok(())
    }
}

/// A [`Sink`] over a blocking writer (the CLI's stdout or a file).
pub struct WriteSink<'w>(pub &'w mut (dyn std::io::Write + Send));

impl Sink for WriteSink<'_> {
    async fn send(&mut self, chunk: Vec<u8>) -> std::io::Result<()> {
        self.0.write_all(&chunk)
    }
}

/// A [`Sink`] feeding an HTTP body through a bounded channel (so a slow client holds back the
/// reads instead of letting the document pile up in memory).
pub struct ChannelSink(pub tokio::sync::mpsc::Sender<std::io::Result<Vec<u8>>>);

impl Sink for ChannelSink {
    async fn send(&mut self, chunk: Vec<u8>) -> std::io::Result<()> {
        self.0
            .send(Ok(chunk))
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away"))
    }
}
