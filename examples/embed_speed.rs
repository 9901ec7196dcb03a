//! Task embedding cost in isolation: `cargo run --release --example embed_speed [-- N]`.
//! Embeds N one-sentence tasks one at a time with the local MiniLM and prints the median,
//! p90 and min per call (what a context call with a new task pays before it reaches Postgres).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Instant;

use mnemo::embed::{build, EmbedderConfig};

fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(200);
    let dir = std::env::var("MNEMO_MINILM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".mnemo/models/all-MiniLM-L6-v2"));
    let e = build(&EmbedderConfig::MiniLm { model_dir: dir })?;
    let words = ["where", "did", "the", "user", "move", "after", "college", "and", "what", "job", "pets", "hobby"];
    let mut ms = Vec::with_capacity(n);
    for i in 0..n {
        let task: Vec<&str> = (0..9).map(|k| words[(i * 7 + k * 3) % words.len()]).collect();
        let t = Instant::now();
        e.embed(&[format!("{} {i}?", task.join(" "))])?;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    ms.sort_by(|a, b| a.total_cmp(b));
    println!("{n} calls: median {:.2} ms, p90 {:.2} ms, min {:.2} ms", ms[n / 2], ms[n * 9 / 10], ms[0]);
    Ok(())
}
