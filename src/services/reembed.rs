//! `mnemo reembed`: moves every vector to the configured model, resumably, with progress.
//!
//! Rows are visited in key order and skipped once they carry the current model id, so an
//! interrupted run simply continues where it stopped when started again.

use std::sync::Arc;

use sqlx::PgPool;
use uuid::Uuid;

use crate::compile::text::{embedded_text, episode_text};
use crate::db;
use crate::db::reembed::Key;
use crate::embed::embed_texts;
use crate::embed::Embedder;
use crate::progress::Progress;

/// Re-embeds all memories and episodes not embedded with the embedder's model.
pub async fn run(
    pool: &PgPool,
    embedder: &Arc<dyn Embedder>,
    batch: i64,
    progress: &dyn Progress,
) -> anyhow::Result<()> {
    let model = embedder.model_id().to_string();
    let mut conn = pool.acquire().await?;
    let (mem_total, ep_total) = db::reembed::count(&mut conn, &model).await?;
    let start: Key = (String::new(), String::new(), Uuid::nil());

    let mut after = start.clone();
    progress.start("memories", u64::try_from(mem_total).unwrap_or(0));
    loop {
        let rows = db::reembed::memories(&mut conn, &model, &after, batch).await?;
        let Some(last) = rows.last() else { break };
        after = (last.tenant_id.clone(), last.subject_id.clone(), last.id);
        let texts: Vec<String> = rows.iter().map(|r| r.content.as_str().unwrap_or_default().to_string()).collect();
        let vectors = embed_texts(embedder, texts).await?;
        let mut tx = pool.begin().await?;
        for (row, v) in rows.iter().zip(&vectors) {
            db::reembed::set_memory_embedding(&mut tx, row, &pgvector::Vector::from(v.clone()), &model).await?;
        }
        tx.commit().await?;
        progress.advance(rows.len() as u64);
    }
    progress.finish();

    let mut after = start;
    progress.start("episodes", u64::try_from(ep_total).unwrap_or(0));
    loop {
        let rows = db::reembed::episodes(&mut conn, &model, &after, batch).await?;
        let Some(last) = rows.last() else { break };
        after = (last.tenant_id.clone(), last.subject_id.clone(), last.id);
        // Each episode's opening, as compile embeds it; its passages wait for a vector again.
        let with_text: Vec<(&db::reembed::Pending, String)> =
            rows.iter().map(|r| (r, episode_text(&r.content))).filter(|(_, t)| !t.trim().is_empty()).collect();
        let vectors =
            embed_texts(embedder, with_text.iter().map(|(_, t)| embedded_text(t).to_string()).collect()).await?;
        let mut tx = pool.begin().await?;
        for ((row, text), v) in with_text.iter().zip(&vectors) {
            let (tenant, subject) = (&row.tenant_id, &row.subject_id);
            let vector = pgvector::Vector::from(v.clone());
            db::compile::insert_episode_embeddings(&mut tx, tenant, subject, &[row.id], &[vector], &model).await?;
            db::erase_items::delete_passages(&mut tx, tenant, subject, &[row.id]).await?;
            let ranges = crate::services::passages::ranges(row.id, text);
            db::passages::insert(&mut tx, tenant, subject, &ranges).await?;
        }
        tx.commit().await?;
        progress.advance(rows.len() as u64);
    }
    progress.finish();
    // Waiting passages (these episodes', and any a stopped server left) get their vectors now.
    let filled = crate::services::passages::fill_all(pool, embedder).await?;
    tracing::info!(model = %model, passages = filled, "re-embedding complete");
    Ok(())
}
