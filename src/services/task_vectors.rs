//! Task embeddings already computed: context calls repeat their tasks, and embedding is the
//! most expensive step of a semantic context call.

use std::collections::HashMap;
use std::sync::Arc;

use crate::embed::Embedder;
use crate::services::compile::{embed_texts, vector_literal};

/// Task vectors by (model, task): repeated tasks are embedded once.
#[derive(Default)]
pub struct TaskVectorCache(std::sync::Mutex<HashMap<(String, String), String>>);

const CACHE_CAP: usize = 4096;

impl TaskVectorCache {
    /// The task's vector in pgvector text form, embedding it on a miss.
    pub async fn get(&self, embedder: &Arc<dyn Embedder>, task: &str) -> anyhow::Result<String> {
        let key = (embedder.model_id().to_string(), task.to_string());
        if let Some(v) = self.0.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(v);
        }
        let mut vs = embed_texts(embedder, vec![task.to_string()]).await?;
        let v = vector_literal(&vs.pop().ok_or_else(|| anyhow::anyhow!("no vector for the task"))?);
        if let Ok(mut m) = self.0.lock() {
            if m.len() >= CACHE_CAP {
                m.clear();
            }
            m.insert(key, v.clone());
        }
        Ok(v)
    }
}
