//! The BERT encoder that all-MiniLM-L6-v2 is, written on candle-nn's layers: embeddings, then
//! `num_hidden_layers` blocks of self-attention and a GELU feed-forward, each closed by a residual
//! sum and LayerNorm. Only what a sentence encoder needs (no pooler, no heads, no dropout: this
//! is inference). Its vectors are bit-for-bit those of the reference implementation mnemo used
//! before (`minilm` tests pin them), so stored vectors stay comparable.

use candle_core::{DType, Module, Result, Tensor, D};
use candle_nn::{embedding, layer_norm, linear, Embedding, LayerNorm, Linear, VarBuilder};
use serde::Deserialize;

/// The fields of a Hugging Face BERT `config.json` that the encoder reads.
#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub hidden_act: String,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub layer_norm_eps: f64,
}

/// One encoder block: self-attention, then the feed-forward, each with its residual LayerNorm.
struct Block {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    expand: Linear,
    contract: Linear,
    output_norm: LayerNorm,
    heads: usize,
    head_size: usize,
}

impl Block {
    fn load(vb: VarBuilder, c: &Config) -> Result<Self> {
        let (h, attention) = (c.hidden_size, vb.pp("attention"));
        Ok(Self {
            query: linear(h, h, attention.pp("self.query"))?,
            key: linear(h, h, attention.pp("self.key"))?,
            value: linear(h, h, attention.pp("self.value"))?,
            attention_out: linear(h, h, attention.pp("output.dense"))?,
            attention_norm: layer_norm(h, c.layer_norm_eps, attention.pp("output.LayerNorm"))?,
            expand: linear(h, c.intermediate_size, vb.pp("intermediate.dense"))?,
            contract: linear(c.intermediate_size, h, vb.pp("output.dense"))?,
            output_norm: layer_norm(h, c.layer_norm_eps, vb.pp("output.LayerNorm"))?,
            heads: c.num_attention_heads,
            head_size: h / c.num_attention_heads,
        })
    }

    /// (rows, width, hidden) -> (rows, heads, width, head_size), laid out for matrix products.
    fn split_heads(&self, xs: &Tensor) -> Result<Tensor> {
        let (rows, width, _) = xs.dims3()?;
        xs.reshape((rows, width, self.heads, self.head_size))?.transpose(1, 2)?.contiguous()
    }

    /// `mask_bias` is 0 where a key position is real and f32::MIN where it is padding.
    fn forward(&self, xs: &Tensor, mask_bias: &Tensor) -> Result<Tensor> {
        let q = self.split_heads(&self.query.forward(xs)?)?;
        let k = self.split_heads(&self.key.forward(xs)?)?;
        let v = self.split_heads(&self.value.forward(xs)?)?;
        let scores = (q.matmul(&k.t()?)? / (self.head_size as f64).sqrt())?.broadcast_add(mask_bias)?;
        let weights = candle_nn::ops::softmax(&scores, D::Minus1)?;
        let mixed = weights.matmul(&v)?.transpose(1, 2)?.contiguous()?.flatten_from(D::Minus2)?;
        let attended = self.attention_norm.forward(&(self.attention_out.forward(&mixed)? + xs)?)?;
        let inner = self.expand.forward(&attended)?.gelu_erf()?;
        self.output_norm.forward(&(self.contract.forward(&inner)? + attended)?)
    }
}

/// A loaded BERT encoder; `forward` gives the last hidden state of every token.
pub struct Encoder {
    words: Embedding,
    positions: Embedding,
    token_types: Embedding,
    embedding_norm: LayerNorm,
    blocks: Vec<Block>,
}

impl Encoder {
    /// Reads the weights under `embeddings.*` and `encoder.layer.N.*` (the names Hugging Face
    /// checkpoints use); fails on an activation other than exact GELU, the only one MiniLM has.
    pub fn load(vb: VarBuilder, c: &Config) -> Result<Self> {
        if c.hidden_act != "gelu" {
            candle_core::bail!("unsupported hidden_act {:?}: this encoder implements \"gelu\"", c.hidden_act);
        }
        let e = vb.pp("embeddings");
        let layers = vb.pp("encoder.layer");
        Ok(Self {
            words: embedding(c.vocab_size, c.hidden_size, e.pp("word_embeddings"))?,
            positions: embedding(c.max_position_embeddings, c.hidden_size, e.pp("position_embeddings"))?,
            token_types: embedding(c.type_vocab_size, c.hidden_size, e.pp("token_type_embeddings"))?,
            embedding_norm: layer_norm(c.hidden_size, c.layer_norm_eps, e.pp("LayerNorm"))?,
            blocks: (0..c.num_hidden_layers).map(|i| Block::load(layers.pp(i), c)).collect::<Result<_>>()?,
        })
    }

    /// `ids` and `mask` are (rows, width) u32 tensors (mask 1 for a real token, 0 for padding);
    /// every text is one segment (token type 0). Returns (rows, width, hidden).
    pub fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (_, width) = ids.dims2()?;
        let positions = Tensor::new((0..width as u32).collect::<Vec<_>>().as_slice(), ids.device())?;
        let summed = (self.words.forward(ids)? + self.token_types.forward(&ids.zeros_like()?)?)?
            .broadcast_add(&self.positions.forward(&positions)?)?;
        let mut xs = self.embedding_norm.forward(&summed)?;

        // (rows, 1, 1, width): added to every head's scores, so padding gets no attention.
        let mask = mask.unsqueeze(1)?.unsqueeze(1)?.to_dtype(DType::F32)?;
        let mask_bias = (mask.ones_like()? - &mask)?.broadcast_mul(&Tensor::new(f32::MIN, ids.device())?)?;
        for block in &self.blocks {
            xs = block.forward(&xs, &mask_bias)?;
        }
        Ok(xs)
    }
}
