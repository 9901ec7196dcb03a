//! Local all-MiniLM-L6-v2 sentence embeddings on CPU with candle, matching sentence-transformers
//! (BERT encoder, mean pooling over the attention mask, L2 normalisation).

use std::path::Path;

use anyhow::{anyhow, bail, Context};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use tokenizers::{Tokenizer, TruncationParams};

use super::bert::{Config, Encoder};
use super::{l2_normalize, Embedder};

/// Token limit per text: the model's `max_seq_length` in sentence-transformers (longer texts are truncated).
pub const MAX_TOKENS: usize = 256;
/// Texts per forward pass; batches are formed from texts of similar token length.
pub const BATCH_SIZE: usize = 32;
/// Output vector length of all-MiniLM-L6-v2.
pub const DIMS: usize = 384;
/// Files that must exist in the model directory.
pub const REQUIRED_FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];

const MODEL_ID: &str = "minilm:all-MiniLM-L6-v2";

/// all-MiniLM-L6-v2 loaded into memory; cheap to share behind an `Arc`.
pub struct MiniLmEmbedder {
    model: Encoder,
    tokenizer: Tokenizer,
    device: Device,
    pad_id: u32,
}

impl MiniLmEmbedder {
    /// Loads `model.safetensors`, `tokenizer.json` and `config.json` from `dir`.
    pub fn load(dir: &Path) -> anyhow::Result<Self> {
        for name in REQUIRED_FILES {
            let path = dir.join(name);
            if !path.is_file() {
                bail!(
                    "MiniLM model file {} is missing; run `scripts/bootstrap` to fetch all-MiniLM-L6-v2",
                    path.display()
                );
            }
        }
        let device = Device::Cpu;

        let config_path = dir.join("config.json");
        let config: Config = serde_json::from_slice(
            &std::fs::read(&config_path).with_context(|| format!("reading {}", config_path.display()))?,
        )
        .with_context(|| format!("parsing {}", config_path.display()))?;
        if config.hidden_size != DIMS {
            bail!(
                "{} has hidden_size {}, expected {DIMS} for all-MiniLM-L6-v2",
                config_path.display(),
                config.hidden_size
            );
        }

        let tok_path = dir.join("tokenizer.json");
        let mut tokenizer =
            Tokenizer::from_file(&tok_path).map_err(|e| anyhow!("loading {}: {e}", tok_path.display()))?;
        // tokenizer.json ships with truncation at 128 and fixed padding to 128; sentence-transformers
        // overrides both (max_seq_length 256, padding per batch), so do the same here.
        tokenizer
            .with_truncation(Some(TruncationParams { max_length: MAX_TOKENS, ..Default::default() }))
            .map_err(|e| anyhow!("configuring truncation: {e}"))?;
        tokenizer.with_padding(None);
        let pad_id = tokenizer.token_to_id("[PAD]").unwrap_or(0);

        // Read into memory rather than mmap: candle's mmap loader is `unsafe` and the crate forbids it.
        // The 90 MB buffer is dropped once the weights are copied into tensors.
        let weights_path = dir.join("model.safetensors");
        let bytes = std::fs::read(&weights_path).with_context(|| format!("reading {}", weights_path.display()))?;
        let vb = VarBuilder::from_buffered_safetensors(bytes, DType::F32, &device)
            .with_context(|| format!("parsing {}", weights_path.display()))?;
        let model = Encoder::load(vb, &config)
            .with_context(|| format!("loading BERT weights from {}", weights_path.display()))?;

        Ok(Self { model, tokenizer, device, pad_id })
    }

    /// Token ids (with [CLS]/[SEP], truncated to `MAX_TOKENS`) for each text.
    fn tokenize(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<u32>>> {
        let inputs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let encodings = self.tokenizer.encode_batch(inputs, true).map_err(|e| anyhow!("tokenizing: {e}"))?;
        Ok(encodings.iter().map(|e| e.get_ids().to_vec()).collect())
    }

    /// Runs one padded batch through BERT and mean-pools it; returns unit vectors in batch order.
    fn forward_batch(&self, batch: &[&[u32]]) -> anyhow::Result<Vec<Vec<f32>>> {
        let rows = batch.len();
        let width = batch.iter().map(|ids| ids.len()).max().unwrap_or(0);
        let mut ids = Vec::with_capacity(rows * width);
        let mut mask = Vec::with_capacity(rows * width);
        for seq in batch {
            // Right-pad to the batch width; the mask keeps padding out of attention and pooling.
            ids.extend_from_slice(seq);
            ids.resize(ids.len() + width - seq.len(), self.pad_id);
            mask.resize(mask.len() + seq.len(), 1u32);
            mask.resize(mask.len() + width - seq.len(), 0u32);
        }
        let ids = Tensor::from_vec(ids, (rows, width), &self.device)?;
        let mask = Tensor::from_vec(mask, (rows, width), &self.device)?;
        let hidden = self.model.forward(&ids, &mask)?; // (rows, width, 384)

        // Mean over real tokens only: padded positions are zeroed and excluded from the count.
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (rows, width, 1)
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?; // (rows, 384)
        let counts = mask.sum(1)?; // (rows, 1); never 0 because [CLS]/[SEP] are always present
        let pooled = summed.broadcast_div(&counts)?.to_vec2::<f32>()?;

        pooled
            .into_iter()
            .map(|mut v| {
                if l2_normalize(&mut v) {
                    Ok(v)
                } else {
                    Err(anyhow!("MiniLM produced a zero or non-finite embedding"))
                }
            })
            .collect()
    }
}

impl Embedder for MiniLmEmbedder {
    fn model_id(&self) -> &str {
        MODEL_ID
    }

    fn dims(&self) -> usize {
        DIMS
    }

    fn is_semantic(&self) -> bool {
        true
    }

    fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let tokens = self.tokenize(texts)?;
        // Sorting by length keeps padding (wasted compute) small inside each batch.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| tokens[i].len());

        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH_SIZE) {
            let batch: Vec<&[u32]> = chunk.iter().map(|&i| tokens[i].as_slice()).collect();
            // Run on one of rayon's workers: candle's matrix products split their work over
            // rayon's global pool, and from any other thread each of a forward pass's ~50 products
            // would hand its work over and park this thread (two thread wake-ups per product,
            // ~1 ms of a one-sentence task's 8). The arithmetic, and so every bit, is the same.
            let vectors = rayon::scope(|_| self.forward_batch(&batch))?;
            for (&i, v) in chunk.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is the test failure
mod tests {
    use super::super::cosine;
    use super::*;
    use std::path::PathBuf;
    use std::sync::OnceLock;
    use std::time::Instant;

    fn model_dir() -> Option<PathBuf> {
        let mut candidates = Vec::new();
        if let Ok(dir) = std::env::var("MNEMO_MINILM_DIR") {
            candidates.push(PathBuf::from(dir));
        }
        candidates.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".mnemo/models/all-MiniLM-L6-v2"));
        candidates.into_iter().find(|d| REQUIRED_FILES.iter().all(|f| d.join(f).is_file()))
    }

    /// The model, loaded once per test binary; None (after a skip message) when the files are absent.
    fn model() -> Option<&'static MiniLmEmbedder> {
        static MODEL: OnceLock<Option<MiniLmEmbedder>> = OnceLock::new();
        let m = MODEL.get_or_init(|| model_dir().map(|d| MiniLmEmbedder::load(&d).unwrap())).as_ref();
        if m.is_none() {
            // scripts/test sets this: there the model must be present, a skip would hide a gap.
            assert!(
                std::env::var("MNEMO_REQUIRE_MODEL").is_err(),
                "MNEMO_REQUIRE_MODEL is set but the model is missing"
            );
            eprintln!("SKIP: all-MiniLM-L6-v2 not found (set MNEMO_MINILM_DIR or run scripts/bootstrap)");
        }
        m
    }

    fn s(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|t| t.to_string()).collect()
    }

    fn norm(v: &[f32]) -> f32 {
        v.iter().map(|x| x * x).sum::<f32>().sqrt()
    }

    #[test]
    fn reproduces_sentence_transformers_similarity() {
        let Some(m) = model() else { return };
        let v = m
            .embed(&s(&["A man is eating food.", "A man is eating a piece of bread.", "The new movie is awesome."]))
            .unwrap();
        let related = cosine(&v[0], &v[1]);
        let unrelated = cosine(&v[0], &v[2]);
        eprintln!("cosine related {related:.4}, unrelated {unrelated:.4}");
        assert!((related - 0.7553).abs() < 0.005, "related cosine {related}");
        assert!(unrelated < 0.3, "unrelated cosine {unrelated}");
        assert!(related - unrelated > 0.4);
    }

    #[test]
    fn batch_matches_one_by_one_and_is_unit_norm() {
        let Some(m) = model() else { return };
        let mut texts = s(&[
            "",
            "Hi",
            "The quick brown fox jumps over the lazy dog near the riverbank at dawn.",
            "Rust is a systems programming language.",
            "Memory service for AI agents",
        ]);
        texts.push("lorem ipsum ".repeat(400)); // far past 256 tokens: must truncate, not fail
        for i in 0..40 {
            texts.push(format!("Sentence number {i} talks about topic {}.", i % 7));
        }
        let batched = m.embed(&texts).unwrap();
        assert_eq!(batched.len(), texts.len());
        for (t, b) in texts.iter().zip(&batched) {
            let single = m.embed(std::slice::from_ref(t)).unwrap().remove(0);
            assert_eq!(b.len(), DIMS);
            assert!((norm(b) - 1.0).abs() < 1e-5);
            let diff = b.iter().zip(&single).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
            assert!(diff < 1e-4, "batch vs single diff {diff} for {t:?}");
        }
        assert!(m.embed(&[]).unwrap().is_empty());
        assert_eq!(m.model_id(), "minilm:all-MiniLM-L6-v2");
        assert_eq!(m.dims(), 384);
        assert!(m.is_semantic());
    }

    #[test]
    fn a_forward_pass_on_a_rayon_worker_gives_the_same_bits_as_on_the_calling_thread() {
        let Some(m) = model() else { return };
        let texts = s(&[
            "Where did Caroline move after she finished college?",
            "ok",
            "The meeting with the landlord about the leaking roof is on Tuesday at 3pm, not Monday.",
        ]);
        let bits = |vs: Vec<Vec<f32>>| -> Vec<Vec<u32>> {
            vs.into_iter().map(|v| v.into_iter().map(f32::to_bits).collect()).collect()
        };
        for text in &texts {
            let tokens = m.tokenize(std::slice::from_ref(text)).unwrap();
            let batch = [tokens[0].as_slice()];
            let here = bits(m.forward_batch(&batch).unwrap());
            assert_eq!(here, bits(rayon::scope(|_| m.forward_batch(&batch)).unwrap()), "{text:?}");
            assert_eq!(here, bits(m.embed(std::slice::from_ref(text)).unwrap()), "{text:?}");
        }
        // A padded batch too: the same bits whichever thread runs it.
        let tokens = m.tokenize(&texts).unwrap();
        let batch: Vec<&[u32]> = tokens.iter().map(Vec::as_slice).collect();
        assert_eq!(bits(m.forward_batch(&batch).unwrap()), bits(rayon::scope(|_| m.forward_batch(&batch)).unwrap()));
    }

    /// What the encoder gives for fixed texts, alone and in one padded batch: components 0, 1,
    /// 100 and 383 of each vector, recorded from this encoder (which had given the same bits as
    /// candle-transformers' BERT it replaced). A change to the forward pass moves them by far
    /// more than the tolerance and fails here, so stored vectors stay comparable. Not to the bit:
    /// the matrix products (gemm) block their sums by the CPU's cache sizes, so the last bits
    /// differ between machines (some 1e-7; a hash of every bit failed on an AVX-512 machine).
    #[test]
    fn vectors_keep_their_recorded_values() {
        let Some(m) = model() else { return };
        let texts = s(&[
            "A man is eating food.",
            "ok",
            "The meeting with the landlord about the leaking roof is on Tuesday at 3pm, not Monday.",
            "Ich wohne jetzt in Zürich — 東京 was before that.",
        ]);
        let alone: Vec<Vec<f32>> = texts.iter().map(|t| m.embed(std::slice::from_ref(t)).unwrap().remove(0)).collect();
        let batch = m.embed(&texts).unwrap();
        for (i, v) in alone.iter().chain(&batch).enumerate() {
            let got = [v[0], v[1], v[100], v[383]];
            let want = RECORDED[i % texts.len()];
            for (g, w) in got.iter().zip(want) {
                assert!((g - w).abs() < 1e-5, "text {}: {got:?}, recorded {want:?}", i % texts.len());
            }
        }
    }

    const RECORDED: [[f32; 4]; 4] = [
        [0.033241548, 0.004406076, -0.006086825, -0.037564356],
        [-0.046124373, -0.059069395, 0.070979185, -0.027152289],
        [-0.01084265, 0.083023496, -0.033719774, 0.010444771],
        [0.03937443, 0.11022673, 0.02333255, 0.037608713],
    ];

    #[test]
    fn truncates_long_input() {
        let Some(m) = model() else { return };
        let tokens = m.tokenize(&s(&[&"word ".repeat(1000)])).unwrap();
        assert_eq!(tokens[0].len(), MAX_TOKENS);
    }

    /// Throughput numbers; run with `cargo test --release -- --ignored --nocapture minilm_bench`.
    #[test]
    #[ignore]
    fn minilm_bench() {
        let Some(dir) = model_dir() else { return };
        let t = Instant::now();
        let m = MiniLmEmbedder::load(&dir).unwrap();
        eprintln!("load: {:.0} ms", t.elapsed().as_secs_f64() * 1e3);

        let one = s(&["The quick brown fox jumps over the lazy dog again today."]);
        eprintln!("single text tokens: {}", m.tokenize(&one).unwrap()[0].len());
        m.embed(&one).unwrap(); // warm-up
        let n = 50;
        let t = Instant::now();
        for _ in 0..n {
            m.embed(&one).unwrap();
        }
        eprintln!("single: {:.2} ms/text", t.elapsed().as_secs_f64() * 1e3 / n as f64);

        let texts: Vec<String> = (0..256)
            .map(|i| format!("Agent memory entry {i}: the user prefers dark mode and short replies."))
            .collect();
        let toks = m.tokenize(&texts[..1]).unwrap()[0].len();
        m.embed(&texts[..32]).unwrap();
        let t = Instant::now();
        m.embed(&texts).unwrap();
        let secs = t.elapsed().as_secs_f64();
        eprintln!("batched ({toks} tokens each, batches of {BATCH_SIZE}): {:.0} texts/s", texts.len() as f64 / secs);
    }
}
