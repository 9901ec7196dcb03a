//! Memory search (text, semantic, hybrid) and label edits.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use sqlx::PgPool;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db;
use crate::embed::embed_texts;
use crate::embed::Embedder;
use crate::model::memory::{Memory, MemoryKind};
use crate::telemetry::{self, MemoryOp};

/// A search request after validation.
#[derive(Debug, Clone)]
pub struct SearchQuery {
    pub subject_id: String,
    pub q: Option<String>,
    pub kind: KindFilter,
    pub semantic: bool,
    pub hybrid: bool,
    pub limit: i64,
}

/// The `kind` a search keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum KindFilter {
    /// No filter (absent or empty).
    #[default]
    Any,
    /// Only memories of this kind.
    Only(MemoryKind),
    /// A kind no memory has: the search finds nothing (not an error).
    Unknown,
}

impl KindFilter {
    /// The filter of a request's `kind` (already length-checked).
    pub fn from_param(kind: Option<&str>) -> Self {
        match kind.filter(|k| !k.is_empty()) {
            None => KindFilter::Any,
            Some(k) => MemoryKind::parse(k).map_or(KindFilter::Unknown, KindFilter::Only),
        }
    }

    /// The lanes' `kind` argument (None = any); None when nothing can match.
    fn lane(self) -> Option<Option<MemoryKind>> {
        match self {
            KindFilter::Any => Some(None),
            KindFilter::Only(k) => Some(Some(k)),
            KindFilter::Unknown => None,
        }
    }
}

/// Which search ran (`text_fallback`: semantic was asked for but unavailable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    Text,
    Semantic,
    TextFallback,
}

/// Weight of the semantic lane in hybrid search (the full-text lane gets the rest).
const SEMANTIC_WEIGHT: f64 = 0.6;

/// Runs a search; returns the memories and which mode ran.
pub async fn search(
    pool: &PgPool,
    embedder: &std::sync::Arc<dyn Embedder>,
    tenant: &str,
    query: &SearchQuery,
) -> anyhow::Result<(Vec<Memory>, SearchMode)> {
    let span = telemetry::memory_span(MemoryOp::Search, tenant);
    telemetry::traced(span, search_in(pool, embedder, tenant, query), |(rows, _)| rows.len()).await
}

async fn search_in(
    pool: &PgPool,
    embedder: &std::sync::Arc<dyn Embedder>,
    tenant: &str,
    query: &SearchQuery,
) -> anyhow::Result<(Vec<Memory>, SearchMode)> {
    let mut conn = db::scope::begin(pool, tenant).await?;
    let text_search = |mode| async move {
        let mut conn = db::scope::begin(pool, tenant).await?;
        let Some(kind) = query.kind.lane() else { return anyhow::Ok((Vec::new(), mode)) };
        let rows =
            db::memories::search_text(&mut conn, tenant, &query.subject_id, query.q.as_deref(), kind, query.limit)
                .await?;
        anyhow::Ok((rows, mode))
    };
    let Some(q) = query.q.as_deref().filter(|q| query.semantic && !q.trim().is_empty()) else {
        return text_search(SearchMode::Text).await;
    };
    if !embedder.is_semantic() {
        return text_search(SearchMode::TextFallback).await;
    }
    let vector = match embed_texts(embedder, vec![q.to_string()]).await {
        Ok(mut v) if !v.is_empty() => pgvector::Vector::from(v.remove(0)),
        Ok(_) | Err(_) => return text_search(SearchMode::TextFallback).await,
    };
    let Some(kind) = query.kind.lane() else { return Ok((Vec::new(), SearchMode::Semantic)) };
    let pool_size = query.limit * 4;
    let semantic =
        db::memories::nearest(&mut conn, tenant, &query.subject_id, &vector, embedder.model_id(), kind, pool_size)
            .await?;
    let mut scores: HashMap<Uuid, f64> = HashMap::new();
    if query.hybrid {
        let lexical = db::memories::full_text(&mut conn, tenant, &query.subject_id, q, kind, pool_size).await?;
        for (id, sim) in &semantic {
            *scores.entry(*id).or_default() += SEMANTIC_WEIGHT * sim;
        }
        for (id, r) in &lexical {
            *scores.entry(*id).or_default() += (1.0 - SEMANTIC_WEIGHT) * (r / (1.0 + r));
        }
    } else {
        scores.extend(semantic.iter().copied());
    }
    // Rounded scores with id as the tie-break give a total, repeatable order.
    let mut ranked: Vec<(i64, Uuid)> = scores.into_iter().map(|(id, s)| (-(s * 1e6).round() as i64, id)).collect();
    ranked.sort();
    ranked.truncate(query.limit as usize);
    let ids: Vec<Uuid> = ranked.iter().map(|(_, id)| *id).collect();
    let mut by_id: BTreeMap<Uuid, Memory> =
        db::memories::by_ids(&mut conn, tenant, &ids).await?.into_iter().map(|m| (m.id, m)).collect();
    let rows = ids.iter().filter_map(|id| by_id.remove(id)).collect();
    Ok((rows, SearchMode::Semantic))
}

/// Replaces a memory's (already normalised) labels; None when the tenant has no such memory.
pub async fn set_labels(pool: &PgPool, tenant: &str, id: Uuid, labels: &[String]) -> sqlx::Result<Option<Memory>> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    let updated = db::memories::set_labels(&mut tx, tenant, id, labels).await?;
    tx.commit().await?;
    Ok(updated)
}

/// Forgets one memory of the tenant's subject (tombstoned); None when there is no such live memory.
pub async fn forget(pool: &PgPool, tenant: &str, subject_id: &str, id: Uuid) -> sqlx::Result<Option<Memory>> {
    let span = telemetry::memory_span(MemoryOp::Delete, tenant);
    telemetry::record_id(&span, &id.to_string());
    telemetry::traced(span, forget_in(pool, tenant, subject_id, id), |m| usize::from(m.is_some())).await
}

async fn forget_in(pool: &PgPool, tenant: &str, subject_id: &str, id: Uuid) -> sqlx::Result<Option<Memory>> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    let forgotten = db::memories::tombstone(&mut tx, tenant, subject_id, id).await?;
    tx.commit().await?;
    Ok(forgotten)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_filters_of_params() {
        assert_eq!(KindFilter::from_param(None), KindFilter::Any);
        assert_eq!(KindFilter::from_param(Some("")), KindFilter::Any);
        assert_eq!(KindFilter::from_param(Some("procedure")), KindFilter::Only(MemoryKind::Procedure));
        assert_eq!(KindFilter::from_param(Some("Procedure")), KindFilter::Unknown);
        assert_eq!(KindFilter::Unknown.lane(), None);
        assert_eq!(KindFilter::Any.lane(), Some(None));
    }

    #[test]
    fn search_modes_keep_their_wire_names() {
        let names = [SearchMode::Text, SearchMode::Semantic, SearchMode::TextFallback].map(|m| serde_json::json!(m));
        assert_eq!(names, ["text", "semantic", "text_fallback"]);
    }
}
