//! Task embeddings already computed: context calls repeat their tasks, and embedding is the
//! most expensive step of a semantic context call.

use std::sync::Arc;

use quick_cache::sync::Cache;

use crate::embed::Embedder;
use pgvector::Vector;

use crate::bundle::tokens::{memo_key, MemoKey};
use crate::embed::embed_texts;

/// Task vectors by (model, task): repeated tasks are embedded once. Bounded, evicting the
/// least useful entries (S3-FIFO), so a burst of one-off tasks does not flush the hot ones.
/// Keyed by [`memo_key`] of model and task, so the cache holds no task text.
pub struct TaskVectorCache(Cache<MemoKey, Arc<Vector>>);

const CACHE_CAP: usize = 4096;

impl Default for TaskVectorCache {
    fn default() -> Self {
        TaskVectorCache(Cache::new(CACHE_CAP))
    }
}

impl TaskVectorCache {
    /// The task's vector, embedding it on a miss.
    pub async fn get(&self, embedder: &Arc<dyn Embedder>, task: &str) -> anyhow::Result<Vector> {
        let key = memo_key(&format!("{}\u{0}{task}", embedder.model_id()));
        if let Some(v) = self.0.get(&key) {
            return Ok(Vector::clone(&v));
        }
        let mut vs = embed_texts(embedder, vec![task.to_string()]).await?;
        let v = Vector::from(vs.pop().ok_or_else(|| anyhow::anyhow!("no vector for the task"))?);
        self.0.insert(key, Arc::new(v.clone()));
        Ok(v)
    }
}
