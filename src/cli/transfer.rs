//! `mnemo export` and `mnemo import`: moving subjects and tenants in and out directly against the
//! database (no server needed), with progress on stderr. Each import is all-or-nothing: one
//! transaction per file (a Statewave file is one subject; a `--merge` too), rolled back on any
//! error, so a failed run can simply be started again. Exports stream: neither format is ever
//! held in memory.

use std::io::{BufRead, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, ValueEnum};
use sqlx::PgPool;

use crate::cli::{DbArgs, EmbedArgs};
use crate::embed::Embedder;
use crate::progress::Progress;
use crate::services::dump;
use crate::services::statewave_backup::{self as statewave, ImportRequest, Imported};

/// File formats `mnemo export` writes.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// Statewave's subject backup document (format_version 1.0), one subject per file.
    Statewave,
    /// mnemo's lossless dump: JSON Lines, every row of a subject or a whole tenant.
    Mnemo,
}

/// `mnemo export`.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// Tenant that owns the subject.
    #[arg(long, default_value = "default")]
    pub tenant: String,
    /// Subject to export (required for `statewave`; without it `mnemo` exports the whole tenant).
    #[arg(long)]
    pub subject: Option<String>,
    /// File format.
    #[arg(long, value_enum, default_value_t = Format::Statewave)]
    pub format: Format,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `mnemo import`.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// The file to import: a Statewave backup document or a mnemo dump (told apart by its first line).
    pub file: PathBuf,
    /// Tenant to import into (default: the file's tenant, else `default`).
    #[arg(long)]
    pub tenant: Option<String>,
    /// Subject to import into (default: the file's subject; Statewave files only).
    #[arg(long)]
    pub subject: Option<String>,
    /// Keep the file's record ids (refused when the tenant already uses one); default: new ids.
    /// A mnemo dump always keeps them.
    #[arg(long)]
    pub preserve_ids: bool,
    /// mnemo subject dumps: add the rows to a subject that already holds data (episodes appended
    /// after its own, known idempotency keys skipped, conflicting ids and sessions refused,
    /// receipts left out); still all-or-nothing. Statewave files are always added to the subject.
    #[arg(long)]
    pub merge: bool,
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub embed: EmbedArgs,
}

/// Writes the export to `out`; returns how many rows it holds.
pub async fn export(
    pool: &PgPool,
    args: &ExportArgs,
    out: &mut (dyn Write + Send),
    progress: &dyn Progress,
) -> anyhow::Result<u64> {
    match args.format {
        Format::Mnemo => Ok(dump::export(pool, &args.tenant, args.subject.as_deref(), out, progress).await?.rows),
        Format::Statewave => {
            let subject =
                args.subject.as_deref().context("--format statewave needs --subject (one subject per file)")?;
            let now = crate::model::time::now_micros();
            let export = statewave::stream::open(pool, &args.tenant, subject, &now)
                .await?
                .with_context(|| format!("No data found for subject '{subject}' in tenant '{}'", args.tenant))?;
            let rows = export.rows();
            export.write(&mut statewave::stream::WriteSink(&mut *out), progress).await?;
            out.write_all(b"\n")?;
            out.flush()?;
            Ok(rows)
        }
    }
}

/// What an import wrote.
#[derive(Debug, serde::Serialize)]
#[serde(untagged)]
pub enum Outcome {
    Statewave(Imported),
    Mnemo(dump::Summary),
}

/// Imports a file; a bad file is refused naming its line and column (invalid JSON) or its field.
pub async fn import(
    pool: &PgPool,
    embedder: &Arc<dyn Embedder>,
    args: &ImportArgs,
    progress: &dyn Progress,
) -> anyhow::Result<Outcome> {
    let name = args.file.display();
    let file = std::fs::File::open(&args.file).with_context(|| format!("reading {name}"))?;
    let mut input = std::io::BufReader::new(file);
    let mut first = String::new();
    input.read_line(&mut first).with_context(|| format!("reading {name}"))?;
    let first = first.trim_end_matches('\n');
    if is_dump_manifest(first) {
        anyhow::ensure!(
            args.subject.is_none(),
            "--subject applies to Statewave files; a mnemo dump keeps its subjects"
        );
        let summary = dump::import(pool, first, &mut input, args.tenant.as_deref(), args.merge, progress)
            .await
            .with_context(|| format!("{name}: nothing was imported"))?;
        return Ok(Outcome::Mnemo(summary));
    }
    anyhow::ensure!(
        !args.merge,
        "--merge applies to mnemo dumps; a Statewave file is always added to the subject's existing data"
    );
    let mut text = first.to_string();
    input.read_to_string(&mut text).with_context(|| format!("reading {name}"))?;
    statewave_import(pool, embedder, args, &text, progress).await.map(Outcome::Statewave)
}

/// True when the first line is a mnemo dump's manifest.
fn is_dump_manifest(line: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(line)
        .is_ok_and(|v| v.get("format").and_then(serde_json::Value::as_str) == Some(dump::format::FORMAT))
}

async fn statewave_import(
    pool: &PgPool,
    embedder: &Arc<dyn Embedder>,
    args: &ImportArgs,
    text: &str,
    progress: &dyn Progress,
) -> anyhow::Result<Imported> {
    let name = args.file.display();
    let document: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        anyhow::anyhow!("{name}: not a JSON document (line {} column {}: {e}); truncated?", e.line(), e.column())
    })?;
    let req = ImportRequest {
        document: &document,
        target_subject_id: args.subject.as_deref(),
        target_tenant_id: args.tenant.as_deref(),
        preserve_ids: args.preserve_ids,
        caller_tenant: crate::model::text::DEFAULT_TENANT,
        // The CLI runs with the database's credentials: an operator.
        any_tenant: true,
    };
    statewave::import(pool, embedder, req, progress).await.with_context(|| format!("{name}: nothing was imported"))
}
