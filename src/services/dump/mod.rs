//! mnemo's lossless dump (`mnemo export|import --format mnemo`): every row of a tenant or of
//! one subject, as JSON Lines, streamed both ways (rows never all sit in memory).
//!
//! Export reads one snapshot; import writes the whole file in one transaction and commits only
//! after the trailer's checksum and every count matched, so a truncated, corrupted or refused
//! file leaves nothing behind. Import needs a tenant (or subject) without data: rows keep their
//! ids, seqs, times and receipt chain positions, which is what makes bundles and receipts
//! reproduce byte for byte.

pub mod format;
mod merge;

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use anyhow::{anyhow, bail, Context};
use futures_util::StreamExt;
use serde_json::Value;
use sha2::{Digest, Sha256};
use sqlx::PgPool;

use crate::db;
use crate::db::dump::{Table, TABLES};
use crate::progress::Progress;
use format::{Line, Manifest, Trailer};

/// Rows inserted per statement.
const INSERT_BATCH: usize = 500;

/// What a dump held.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Summary {
    pub tenant_id: String,
    pub subject_id: Option<String>,
    pub rows: u64,
    pub tables: BTreeMap<String, u64>,
    /// Whether the rows were merged into a subject that already held data (`--merge`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub merged: bool,
    /// Rows read but not written by a merge, per table (see `merge`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub skipped: BTreeMap<String, u64>,
}

/// Writes lines and hashes every byte written.
struct Hashing<'a> {
    out: &'a mut (dyn Write + Send),
    hash: Sha256,
}

impl Hashing<'_> {
    fn line(&mut self, text: &str) -> std::io::Result<()> {
        self.hash.update(text.as_bytes());
        self.hash.update(b"\n");
        self.out.write_all(text.as_bytes())?;
        self.out.write_all(b"\n")
    }
}

fn tables_for(subject: Option<&str>) -> impl Iterator<Item = &'static Table> + '_ {
    TABLES.iter().filter(move |t| subject.is_none() || t.per_subject)
}

/// Streams the tenant's (or the subject's) rows to `out`.
pub async fn export(
    pool: &PgPool,
    tenant: &str,
    subject: Option<&str>,
    out: &mut (dyn Write + Send),
    progress: &dyn Progress,
) -> anyhow::Result<Summary> {
    let mut tx = db::dump::begin_snapshot(pool, tenant).await?;
    let mut tables = BTreeMap::new();
    for t in tables_for(subject) {
        tables.insert(t.name.to_string(), u64::try_from(db::dump::count(&mut tx, t, tenant, subject).await?)?);
    }
    let total: u64 = tables.values().sum();
    if total == 0 {
        bail!("tenant '{tenant}' has no rows{}", subject.map(|s| format!(" for subject '{s}'")).unwrap_or_default());
    }
    let manifest = Manifest {
        format: format::FORMAT.into(),
        format_version: format::FORMAT_VERSION,
        tenant_id: tenant.to_string(),
        subject_id: subject.map(str::to_string),
        exported_at: crate::model::time::isoformat(&crate::model::time::now_micros()),
        tables: tables.clone(),
    };
    let mut w = Hashing { out, hash: Sha256::new() };
    w.line(&serde_json::to_string(&manifest)?)?;
    progress.start("exporting", total);
    let mut written = 0u64;
    for t in tables_for(subject) {
        let sql = db::dump::rows_sql(t);
        let mut rows = db::dump::rows(&mut tx, &sql, tenant, subject);
        while let Some(row) = rows.next().await {
            w.line(&format::row_line(t.name, &row?))?;
            written += 1;
            progress.advance(1);
        }
    }
    drop(tx);
    let sha256 = hex::encode(std::mem::take(&mut w.hash).finalize());
    let trailer = Trailer { end: true, rows: written, sha256 };
    w.out.write_all(serde_json::to_string(&trailer)?.as_bytes())?;
    w.out.write_all(b"\n")?;
    w.out.flush()?;
    progress.finish();
    Ok(Summary {
        tenant_id: tenant.into(),
        subject_id: subject.map(str::to_string),
        rows: written,
        tables,
        merged: false,
        skipped: BTreeMap::new(),
    })
}

/// Rows of one table waiting to be inserted, with the lines they came from.
struct Pending {
    table: &'static Table,
    rows: Vec<Value>,
    lines: Vec<usize>,
}

/// Imports a dump read from `input` (its first line already read as `manifest`), into the
/// manifest's tenant or `target_tenant`; with `merge`, a subject dump may go into a subject
/// that holds data (rules in `merge`).
pub async fn import(
    pool: &PgPool,
    manifest_line: &str,
    input: &mut dyn BufRead,
    target_tenant: Option<&str>,
    merge: bool,
    progress: &dyn Progress,
) -> anyhow::Result<Summary> {
    let manifest = format::read_manifest(manifest_line).map_err(|e| anyhow!(e))?;
    let tenant = target_tenant.unwrap_or(&manifest.tenant_id).to_string();
    let subject = manifest.subject_id.clone();
    let mut hash = Sha256::new();
    hash.update(manifest_line.as_bytes());
    hash.update(b"\n");

    if merge && subject.is_none() {
        bail!("--merge applies to a subject dump; a tenant dump is imported only where the tenant holds no data");
    }
    let mut tx = db::scope::begin(pool, &tenant).await?;
    let mut merging = None;
    if db::dump::occupied(&mut tx, &tenant, subject.as_deref()).await? {
        let what = subject
            .as_deref()
            .map_or_else(|| format!("tenant '{tenant}'"), |s| format!("subject '{s}' of tenant '{tenant}'"));
        match subject.as_deref() {
            Some(s) if merge => merging = Some(merge::Merge::begin(&mut tx, &tenant, s).await?),
            Some(_) => bail!("{what} already holds data; a mnemo dump is imported only where there is none (--merge adds a subject dump to it)"),
            None => bail!("{what} already holds data; a mnemo dump is imported only where there is none"),
        }
    }
    let total: u64 = manifest.tables.values().sum();
    progress.start("importing", total);
    let mut columns: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut pending: Option<Pending> = None;
    let mut trailer = None;
    let mut n = 1;
    let mut buf = String::new();
    loop {
        buf.clear();
        if input.read_line(&mut buf).context("reading the dump")? == 0 {
            break;
        }
        n += 1;
        let text = buf.strip_suffix('\n').unwrap_or(&buf);
        if text.trim().is_empty() {
            continue;
        }
        if trailer.is_some() {
            bail!("line {n}: data after the trailer line");
        }
        let row = match format::read_line(n, text).map_err(|e| anyhow!(e))? {
            Line::Trailer(t) => {
                trailer = Some(t);
                continue;
            }
            Line::Row(r) => r,
        };
        hash.update(text.as_bytes());
        hash.update(b"\n");
        let table = db::dump::table(&row.table).filter(|t| subject.is_none() || t.per_subject).ok_or_else(|| {
            anyhow!("line {n}: field table: '{}' is not a table a dump of this kind carries", row.table)
        })?;
        let row = checked_row(n, table, row.row, &manifest, &tenant)?;
        if pending.as_ref().is_some_and(|p| p.table.name != table.name || p.rows.len() >= INSERT_BATCH) {
            flush(&mut tx, &mut columns, pending.take(), merging.as_mut(), progress).await?;
        }
        let p = pending.get_or_insert_with(|| Pending { table, rows: Vec::new(), lines: Vec::new() });
        p.rows.push(row);
        p.lines.push(n);
        *counts.entry(table.name.to_string()).or_default() += 1;
    }
    flush(&mut tx, &mut columns, pending.take(), merging.as_mut(), progress).await?;
    let trailer = trailer.ok_or_else(|| anyhow!("line {n}: the file ends without its trailer line (truncated)"))?;
    let rows: u64 = counts.values().sum();
    if hex::encode(hash.finalize()) != trailer.sha256 {
        bail!("checksum mismatch: the file was changed or corrupted after export");
    }
    let expected: BTreeMap<String, u64> =
        manifest.tables.iter().filter(|(_, c)| **c > 0).map(|(k, c)| (k.clone(), *c)).collect();
    if rows != trailer.rows || counts != expected {
        bail!("row counts differ from the manifest ({counts:?} read, {expected:?} listed)");
    }
    let merged = merging.is_some();
    let skipped = match merging {
        Some(m) => m.finish(&mut tx).await?,
        None => BTreeMap::new(),
    };
    if subject.is_some() && !merged {
        db::tenants::ensure(&mut tx, &tenant).await?;
        db::dump::raise_chain_head(&mut tx, &tenant).await?;
    }
    tx.commit().await?;
    progress.finish();
    Ok(Summary { tenant_id: tenant, subject_id: subject, rows, tables: counts, merged, skipped })
}

/// A row ready to insert: its tenant and subject checked against the manifest, then set to
/// the target tenant.
fn checked_row(
    n: usize,
    table: &Table,
    mut row: serde_json::Map<String, Value>,
    manifest: &Manifest,
    tenant: &str,
) -> anyhow::Result<Value> {
    if row.get("tenant_id").and_then(Value::as_str) != Some(manifest.tenant_id.as_str()) {
        bail!("line {n}: field row.tenant_id: not the manifest's tenant '{}'", manifest.tenant_id);
    }
    if let (Some(s), true) = (&manifest.subject_id, table.per_subject) {
        if row.get("subject_id").and_then(Value::as_str) != Some(s.as_str()) {
            bail!("line {n}: field row.subject_id: not the manifest's subject '{s}'");
        }
    }
    row.insert("tenant_id".into(), Value::String(tenant.to_string()));
    Ok(Value::Object(row))
}

async fn flush(
    conn: &mut sqlx::PgConnection,
    columns: &mut BTreeMap<&'static str, Vec<String>>,
    pending: Option<Pending>,
    merging: Option<&mut merge::Merge>,
    progress: &dyn Progress,
) -> anyhow::Result<()> {
    let Some(p) = pending else { return Ok(()) };
    let (first, last) = (p.lines.first().copied().unwrap_or(0), p.lines.last().copied().unwrap_or(0));
    let read = p.rows.len() as u64;
    let rows = match merging {
        Some(m) => m.batch(conn, p.table, p.lines.into_iter().zip(p.rows).collect()).await?,
        None => p.rows,
    };
    if !rows.is_empty() {
        if !columns.contains_key(p.table.name) {
            columns.insert(p.table.name, db::dump::insert_columns(conn, p.table.name).await?);
        }
        let cols = columns.get(p.table.name).map(Vec::as_slice).unwrap_or_default();
        let json = serde_json::to_string(&rows)?;
        db::dump::insert_rows(conn, p.table, cols, &json)
            .await
            .with_context(|| format!("lines {first}-{last} (table {}): rows refused by the database", p.table.name))?;
    }
    progress.advance(read);
    Ok(())
}
