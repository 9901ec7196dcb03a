//! `mnemo export` and `mnemo import`: moving subjects and tenants in and out directly against the
//! database (no server needed), with progress on stderr. Each import is all-or-nothing: one
//! transaction per file (a Statewave file is one subject), rolled back on any error, so a
//! failed run can simply be started again.

use std::io::{BufRead, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, ValueEnum};
use sqlx::PgPool;

use crate::config::{DbArgs, EmbedArgs};
use crate::embed::Embedder;
use crate::progress::Progress;
use crate::services::dump;
use crate::services::statewave_backup::{self as statewave, ExportDocument, ImportRequest, Imported};

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
            let doc = statewave::export(pool, &args.tenant, subject, &now)
                .await?
                .with_context(|| format!("No data found for subject '{subject}' in tenant '{}'", args.tenant))?;
            progress.start("exporting", (doc.episodes.len() + doc.memories.len()) as u64);
            write_document(&doc, out, progress)?;
            progress.finish();
            Ok((doc.episodes.len() + doc.memories.len()) as u64)
        }
    }
}

/// The document's JSON, members in Statewave's order, advancing `progress` per record.
fn write_document(doc: &ExportDocument, out: &mut (dyn Write + Send), progress: &dyn Progress) -> anyhow::Result<()> {
    let s = |v: &str| serde_json::to_string(v);
    write!(
        out,
        "{{\"format_version\":{},\"exported_at\":{},\"subject_id\":{},\"tenant_id\":{},\"counts\":{},\"episodes\":[",
        s(doc.format_version)?,
        s(&doc.exported_at)?,
        s(&doc.subject_id)?,
        s(&doc.tenant_id)?,
        serde_json::to_string(&doc.counts)?
    )?;
    for (i, e) in doc.episodes.iter().enumerate() {
        out.write_all(if i == 0 { b"" } else { b"," })?;
        serde_json::to_writer(&mut *out, e)?;
        progress.advance(1);
    }
    out.write_all(b"],\"memories\":[")?;
    for (i, m) in doc.memories.iter().enumerate() {
        out.write_all(if i == 0 { b"" } else { b"," })?;
        serde_json::to_writer(&mut *out, m)?;
        progress.advance(1);
    }
    writeln!(out, "],\"checksum\":{}}}", s(&doc.checksum)?)?;
    out.flush()?;
    Ok(())
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
        let summary = dump::import(pool, first, &mut input, args.tenant.as_deref(), progress)
            .await
            .with_context(|| format!("{name}: nothing was imported"))?;
        return Ok(Outcome::Mnemo(summary));
    }
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
        caller_tenant: crate::http::extract::DEFAULT_TENANT,
    };
    statewave::import(pool, embedder, req, progress).await.with_context(|| format!("{name}: nothing was imported"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::services::statewave_backup::records::{EpisodeRecord, ExportDocument};

    #[test]
    fn streamed_document_is_the_serialised_document() {
        let episode = EpisodeRecord {
            id: "00000000-0000-4000-8000-000000000001".into(),
            subject_id: "user:1".into(),
            tenant_id: "default".into(),
            source: "chat".into(),
            kind: "message".into(),
            payload: serde_json::json!({"text": "Zo\u{eb}", "x": 1.0}),
            metadata: serde_json::json!({}),
            provenance: serde_json::json!({}),
            created_at: "2026-01-01T00:00:00+00:00".into(),
            last_compiled_at: None,
        };
        let at = chrono::DateTime::from_timestamp(1_767_225_600, 0).unwrap();
        for episodes in [vec![], vec![episode.clone(), episode]] {
            let doc = ExportDocument::new("user:1", "default", &at, episodes, vec![]).unwrap();
            let mut out = Vec::new();
            write_document(&doc, &mut out, &crate::progress::Silent).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), serde_json::to_string(&doc).unwrap() + "\n");
        }
    }
}
