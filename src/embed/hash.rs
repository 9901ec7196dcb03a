//! Deterministic feature-hashing embedder: fast and dependency-free, but not semantic.

use std::collections::HashMap;

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

/// What one word adds to a vector: (bucket, signed weight) of the word and of each of its
/// trigrams, in the order they are added.
type WordFeatures = Vec<(usize, f32)>;

impl HashEmbedder {
    /// Creates an embedder producing `dims`-long vectors (a `dims` of 0 is treated as 1).
    pub fn new(dims: usize) -> Self {
        let dims = dims.max(1);
        Self { dims, model_id: format!("hash:{dims}") }
    }

    /// Embeds one text (the per-text step of `embed`).
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        self.embed_cached(text, &mut HashMap::new())
    }

    /// Embeds one text, reusing the features of words already seen in the same batch: the
    /// additions happen in the same order with the same values, so the vector is the same.
    fn embed_cached(&self, text: &str, seen: &mut HashMap<String, WordFeatures>) -> Vec<f32> {
        let mut v = vec![0f32; self.dims];
        for word in words(text) {
            let features = seen.entry(word).or_insert_with_key(|w| self.word_features(w));
            for &(bucket, x) in features.iter() {
                v[bucket] += x;
            }
        }
        if !l2_normalize(&mut v) {
            // Empty (or cancelled-out) text still needs a unit vector; e_0 is as good as any.
            v.iter_mut().for_each(|x| *x = 0.0);
            v[0] = 1.0;
        }
        v
    }

    /// The word itself, then the character trigrams of `<word>` (boundary markers give short
    /// words trigrams too and mark prefixes/suffixes).
    fn word_features(&self, word: &str) -> WordFeatures {
        let bracketed = format!("<{word}>");
        let starts: Vec<usize> =
            bracketed.char_indices().map(|(i, _)| i).chain(std::iter::once(bracketed.len())).collect();
        let mut out = Vec::with_capacity(starts.len());
        out.push(self.feature(b'w', word, 1.0));
        for w in starts.windows(4) {
            out.push(self.feature(b'g', &bracketed[w[0]..w[3]], TRIGRAM_WEIGHT));
        }
        out
    }

    fn feature(&self, kind: u8, feature: &str, weight: f32) -> (usize, f32) {
        // The kind prefix keeps the word "the" and the trigram "the" in different buckets.
        let digest = Sha256::new().chain_update([kind, b':']).chain_update(feature.as_bytes()).finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        let h = u64::from_le_bytes(first);
        // Low bits pick the bucket, the top bit the sign: independent enough for feature hashing.
        let bucket = (h % self.dims as u64) as usize;
        let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
        (bucket, sign * weight)
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
        let mut seen = HashMap::new();
        Ok(texts.iter().map(|t| self.embed_cached(t, &mut seen)).collect())
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

    /// The embedder as first written (a hash per feature occurrence, no cache).
    fn reference(e: &HashEmbedder, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; e.dims];
        let mut add = |kind: u8, feature: &str, weight: f32| {
            let digest = Sha256::new().chain_update([kind, b':']).chain_update(feature.as_bytes()).finalize();
            let h = u64::from_le_bytes(digest[..8].try_into().unwrap());
            v[(h % e.dims as u64) as usize] += if h >> 63 == 0 { weight } else { -weight };
        };
        for word in words(text) {
            add(b'w', &word, 1.0);
            let chars: Vec<char> = format!("<{word}>").chars().collect();
            for gram in chars.windows(3) {
                add(b'g', &gram.iter().collect::<String>(), TRIGRAM_WEIGHT);
            }
        }
        if !l2_normalize(&mut v) {
            v.iter_mut().for_each(|x| *x = 0.0);
            v[0] = 1.0;
        }
        v
    }

    #[test]
    fn a_batch_gives_the_vectors_of_the_reference_bit_for_bit() {
        let e = HashEmbedder::new(384);
        let texts: Vec<String> =
            ["I work at Globex. I work at GLOBEX!", "Ünïcode straße 42 ǅ 日本語", "", "a a a b", "x"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let batch = e.embed(&texts).unwrap();
        for (t, v) in texts.iter().zip(&batch) {
            let want = reference(&e, t);
            assert_eq!(
                v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                want.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
            );
            assert_eq!(v, &e.embed_one(t));
        }
    }

    #[test]
    fn zero_dims_is_clamped() {
        let e = HashEmbedder::new(0);
        assert_eq!(e.dims(), 1);
        assert_eq!(e.model_id(), "hash:1");
        assert_eq!(e.embed_one("x").len(), 1);
    }
}
