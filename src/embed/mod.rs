//! Text embedding: the `Embedder` trait, its three implementations and the factory.

pub mod bert;
pub mod hash;
pub mod minilm;
pub mod openai;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::bail;

/// Turns texts into unit-length vectors. Implementations are blocking (CPU or HTTP); callers run them on a blocking thread.
pub trait Embedder: Send + Sync {
    /// Stable model identifier stored beside every vector, e.g. "minilm:all-MiniLM-L6-v2", "hash:384", "openai:text-embedding-3-small".
    fn model_id(&self) -> &str;
    /// Length of every vector this embedder returns (0 while an OpenAI embedder has not learned it yet).
    fn dims(&self) -> usize;
    /// True when cosine similarity between outputs means semantic similarity (false for hash).
    fn is_semantic(&self) -> bool;
    /// Embeds a batch; output order = input order; every vector L2-normalised, length dims().
    fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>>;
}

/// Which embedder to build, and its settings.
#[derive(Clone, PartialEq, Eq)]
pub enum EmbedderConfig {
    /// Feature-hashing embedder with `dims` buckets (not semantic; for tests and offline use).
    Hash {
        /// Vector length.
        dims: usize,
    },
    /// Local all-MiniLM-L6-v2 loaded from `model_dir`.
    MiniLm {
        /// Directory holding `model.safetensors`, `tokenizer.json` and `config.json`.
        model_dir: PathBuf,
    },
    /// OpenAI-compatible `/v1/embeddings` HTTP endpoint.
    OpenAi {
        /// Base URL, e.g. `https://api.openai.com` (see `openai::endpoint_url` for accepted forms).
        url: String,
        /// Model name sent in the request.
        model: String,
        /// Bearer token; `None` sends no Authorization header.
        api_key: Option<String>,
        /// Expected vector length; `None` learns it from the first response.
        dims: Option<usize>,
    },
}

// Hand-written so the API key never lands in a log line via `{:?}`.
impl fmt::Debug for EmbedderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Hash { dims } => f.debug_struct("Hash").field("dims", dims).finish(),
            Self::MiniLm { model_dir } => f.debug_struct("MiniLm").field("model_dir", model_dir).finish(),
            Self::OpenAi { url, model, api_key, dims } => f
                .debug_struct("OpenAi")
                .field("url", url)
                .field("model", model)
                .field("api_key", &api_key.as_ref().map(|_| "<redacted>"))
                .field("dims", dims)
                .finish(),
        }
    }
}

/// Builds the configured embedder; a MiniLM dir without the files yields an error that names the missing file and says to run `scripts/bootstrap`.
pub fn build(config: &EmbedderConfig) -> anyhow::Result<Arc<dyn Embedder>> {
    Ok(match config {
        EmbedderConfig::Hash { dims } => {
            if *dims == 0 {
                bail!("hash embedder dims must be at least 1");
            }
            Arc::new(hash::HashEmbedder::new(*dims))
        }
        EmbedderConfig::MiniLm { model_dir } => Arc::new(minilm::MiniLmEmbedder::load(model_dir)?),
        EmbedderConfig::OpenAi { url, model, api_key, dims } => {
            Arc::new(openai::OpenAiEmbedder::new(url.clone(), model.clone(), api_key.clone(), *dims)?)
        }
    })
}

/// Scales `v` to unit L2 norm in place; returns false (leaving `v` unchanged) when its norm is zero or not finite.
pub fn l2_normalize(v: &mut [f32]) -> bool {
    // Accumulate in f64 so long vectors don't lose precision.
    let norm = v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return false;
    }
    for x in v.iter_mut() {
        *x = (f64::from(*x) / norm) as f32;
    }
    true
}

/// Cosine similarity of two equal-length vectors (0 when either is zero or lengths differ).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    (dot / (na.sqrt() * nb.sqrt())) as f32
}

/// Embeds texts on the blocking pool, de-duplicating identical texts.
pub async fn embed_texts(embedder: &Arc<dyn Embedder>, texts: Vec<String>) -> anyhow::Result<Vec<Vec<f32>>> {
    let mut unique: Vec<String> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let slots: Vec<usize> = texts
        .iter()
        .map(|t| {
            *index.entry(t.clone()).or_insert_with(|| {
                unique.push(t.clone());
                unique.len() - 1
            })
        })
        .collect();
    let e = embedder.clone();
    let started = std::time::Instant::now();
    let vectors = tokio::task::spawn_blocking(move || e.embed(&unique)).await??;
    crate::metrics::record_embedding(started.elapsed());
    slots
        .into_iter()
        .map(|i| vectors.get(i).cloned().ok_or_else(|| anyhow::anyhow!("embedder returned too few vectors")))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is the test failure
mod tests {
    use super::*;

    #[test]
    fn normalize_and_cosine() {
        let mut v = vec![3.0, 4.0];
        assert!(l2_normalize(&mut v));
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        let mut z = vec![0.0, 0.0];
        assert!(!l2_normalize(&mut z));
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 1.0]), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
    }

    #[test]
    fn build_hash_and_reject_zero_dims() {
        let e = build(&EmbedderConfig::Hash { dims: 64 }).unwrap();
        assert_eq!(e.model_id(), "hash:64");
        assert_eq!(e.dims(), 64);
        assert!(!e.is_semantic());
        assert!(build(&EmbedderConfig::Hash { dims: 0 }).is_err());
    }

    #[test]
    fn build_minilm_missing_files_names_file_and_bootstrap() {
        let dir = std::env::temp_dir().join(format!("mnemo-embed-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let err = build(&EmbedderConfig::MiniLm { model_dir: dir.clone() }).err().unwrap().to_string();
        assert!(err.contains("model.safetensors"), "{err}");
        assert!(err.contains("scripts/bootstrap"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn debug_redacts_api_key() {
        let cfg = EmbedderConfig::OpenAi {
            url: "http://x".into(),
            model: "m".into(),
            api_key: Some("sk-secret".into()),
            dims: None,
        };
        let s = format!("{cfg:?}");
        assert!(!s.contains("sk-secret") && s.contains("redacted"), "{s}");
        let e = build(&cfg).unwrap();
        assert_eq!(e.model_id(), "openai:m");
        assert_eq!(e.dims(), 0);
    }
}
