//! Deterministic feature-hashing embedder: fast and dependency-free, but not semantic.

use sha2::{Digest, Sha256};

use super::{l2_normalize, Embedder};

/// Weight of a character trigram relative to a whole word, so shared words dominate shared fragments.
const TRIGRAM_WEIGHT: f32 = 0.5;

/// Hashes lower-cased words and their character trigrams into `dims` signed buckets.
#[derive(Debug, Clone)]
pub struct HashEmbedder {
    dims: usize,
    model_id: String,
}

impl HashEmbedder {
    /// Creates an embedder producing `dims`-long vectors (a `dims` of 0 is treated as 1).
    pub fn new(dims: usize) -> Self {
        let dims = dims.max(1);
        Self { dims, model_id: format!("hash:{dims}") }
    }

    /// Embeds one text (the per-text step of `embed`).
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dims];
        for word in words(text) {
            self.add_feature(&mut v, b'w', &word, 1.0);
            // Boundary markers give short words trigrams too and mark prefixes/suffixes.
            let chars: Vec<char> = format!("<{word}>").chars().collect();
            for gram in chars.windows(3) {
                let gram: String = gram.iter().collect();
                self.add_feature(&mut v, b'g', &gram, TRIGRAM_WEIGHT);
            }
        }
        if !l2_normalize(&mut v) {
            // Empty (or cancelled-out) text still needs a unit vector; e_0 is as good as any.
            v.iter_mut().for_each(|x| *x = 0.0);
            v[0] = 1.0;
        }
        v
    }

    fn add_feature(&self, v: &mut [f32], kind: u8, feature: &str, weight: f32) {
        // The kind prefix keeps the word "the" and the trigram "the" in different buckets.
        let digest = Sha256::new().chain_update([kind, b':']).chain_update(feature.as_bytes()).finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        let h = u64::from_le_bytes(first);
        // Low bits pick the bucket, the top bit the sign: independent enough for feature hashing.
        let bucket = (h % self.dims as u64) as usize;
        let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
        v[bucket] += sign * weight;
    }
}

/// Lower-cased alphanumeric runs of `text`.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase)
}

impl Embedder for HashEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dims(&self) -> usize {
        self.dims
    }

    fn is_semantic(&self) -> bool {
        false
    }

    fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is the test failure
mod tests {
    use super::super::cosine;
    use super::*;

    fn norm(v: &[f32]) -> f32 {
        v.iter().map(|x| x * x).sum::<f32>().sqrt()
    }

    #[test]
    fn deterministic_unit_vectors() {
        let e = HashEmbedder::new(384);
        let texts: Vec<String> = ["Hello, World!", "hello world", "", "   ...  ", "Ünïcode straße 42"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let a = e.embed(&texts).unwrap();
        let b = e.embed(&texts).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.len(), texts.len());
        for v in &a {
            assert_eq!(v.len(), 384);
            assert!((norm(v) - 1.0).abs() < 1e-5);
        }
        // Case and punctuation don't matter; empty texts map to e_0.
        assert_eq!(a[0], a[1]);
        assert_eq!(a[2][0], 1.0);
        assert_eq!(a[2], a[3]);
    }

    #[test]
    fn shared_words_give_positive_cosine() {
        let e = HashEmbedder::new(384);
        let a = e.embed_one("the database migration failed last night");
        let b = e.embed_one("database migration succeeded today");
        let c = e.embed_one("purple elephants juggle");
        let ab = cosine(&a, &b);
        assert!(ab > 0.2, "{ab}");
        assert!(ab > cosine(&a, &c));
    }

    #[test]
    fn zero_dims_is_clamped() {
        let e = HashEmbedder::new(0);
        assert_eq!(e.dims(), 1);
        assert_eq!(e.model_id(), "hash:1");
        assert_eq!(e.embed_one("x").len(), 1);
    }
}
