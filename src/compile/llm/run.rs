//! Compiling a batch of episodes with the model: packing, bounded parallel calls, retries with
//! backoff, splitting what the model cannot answer, and the heuristic fallback.
//!
//! Every episode ends in exactly one of three ways: the model's checked items, the heuristic
//! compiler (its answer failed even alone, recorded as `metadata.llm_fallback`), or the paths
//! the LLM never takes (agent-supplied candidates, empty text). Nothing is written here; the
//! caller writes all drafts in the batch's one transaction, so an episode is never lost nor
//! compiled twice.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::Semaphore;

use super::client::CallError;
use super::prompt::{messages, view, CurrentFact, EpisodeView};
use super::schema::{answer_schema, parse_answer, Item};
use super::validate::{drafts_for, guarded_summary, Dropped};
use super::LlmCompiler;
use crate::compile::claims::Registry;
use crate::compile::pipeline::{compile_episode, is_structured, sanitized_text, EpisodeInput, MemoryDraft};
use crate::model::memory::MemoryKind;

/// Longest backoff between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// What compiling one batch with the model produced and cost.
#[derive(Debug, Default)]
pub struct LlmBatch {
    pub drafts: Vec<MemoryDraft>,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// Requests sent.
    pub calls: u64,
    /// Episodes compiled by the model.
    pub llm_episodes: u64,
    /// Episodes the heuristic compiler took over.
    pub fallback_episodes: u64,
    /// Items and claims the server refused.
    pub dropped: Dropped,
}

/// How one episode was compiled.
#[derive(Debug, Clone, PartialEq)]
pub enum Provenance {
    /// The model answered; these are its items for the episode.
    Model(Vec<Item>),
    /// The model could not; the reason is recorded on the heuristic memories.
    Fallback(&'static str),
}

struct Ctx<'a> {
    views: Vec<EpisodeView>,
    facts: &'a [CurrentFact],
    claim_keys: Vec<&'a str>,
    permits: Semaphore,
    /// Calls left before every remaining episode falls back (a dead endpoint costs little).
    budget: AtomicU64,
    calls: AtomicU64,
    tokens_in: AtomicU64,
    tokens_out: AtomicU64,
}

type Solved = Vec<(usize, Provenance)>;

impl LlmCompiler {
    /// Compiles `episodes` (in order) into drafts; `facts` are the subject's current facts the
    /// model may say an item updates.
    pub async fn compile(&self, episodes: &[EpisodeInput], facts: &[CurrentFact], registry: &Registry) -> LlmBatch {
        let cfg = &self.config;
        let views: Vec<EpisodeView> = episodes.iter().map(|e| view(e, cfg.episode_chars)).collect();
        let mut asked = Vec::new();
        for (i, e) in episodes.iter().enumerate() {
            if !is_structured(&e.payload)
                && !views[i].text.is_empty()
                && !sanitized_text(&e.payload, e.voice).trim().is_empty()
            {
                asked.push(i);
            }
        }
        let batches = pack(&asked, &views, cfg.batch_chars, cfg.batch_episodes);
        let budget = (batches.len() as u64 * 2 + 2) * u64::from(cfg.retries + 1);
        let ctx = Ctx {
            views,
            facts,
            claim_keys: registry.scalar_keys(),
            permits: Semaphore::new(cfg.max_parallel),
            budget: AtomicU64::new(budget),
            calls: AtomicU64::new(0),
            tokens_in: AtomicU64::new(0),
            tokens_out: AtomicU64::new(0),
        };
        let solved: Vec<Solved> =
            futures_util::future::join_all(batches.into_iter().map(|b| self.solve(&ctx, b))).await;
        let mut answers: Vec<Option<Provenance>> = vec![None; episodes.len()];
        for (i, p) in solved.into_iter().flatten() {
            answers[i] = Some(p);
        }
        let mut out = LlmBatch {
            tokens_in: ctx.tokens_in.load(Ordering::Relaxed),
            tokens_out: ctx.tokens_out.load(Ordering::Relaxed),
            calls: ctx.calls.load(Ordering::Relaxed),
            ..LlmBatch::default()
        };
        for (i, e) in episodes.iter().enumerate() {
            match answers[i].take() {
                None => out.drafts.extend(compile_episode(e, registry)),
                Some(Provenance::Model(items)) => {
                    out.llm_episodes += 1;
                    let mut drafts =
                        drafts_for(e, &ctx.views[i], &items, ctx.facts, registry, self.model(), &mut out.dropped);
                    if !drafts.iter().any(|d| d.kind == MemoryKind::EpisodeSummary) {
                        // The episode keeps the summary every compiled episode has.
                        drafts.splice(0..0, guarded_summary(e, &ctx.views[i]));
                        for (n, d) in drafts.iter_mut().enumerate() {
                            d.order_tiebreak = format!("{:020}:{:04}", e.seq, n);
                        }
                    }
                    out.drafts.extend(drafts);
                }
                Some(Provenance::Fallback(reason)) => {
                    out.fallback_episodes += 1;
                    out.drafts.extend(compile_episode(e, registry).into_iter().map(|mut d| {
                        d.metadata.insert("llm_fallback".into(), json!(reason));
                        d
                    }));
                }
            }
        }
        crate::metrics::record_llm_compile(out.tokens_in, out.tokens_out, out.llm_episodes, out.fallback_episodes);
        out
    }

    /// Answers one batch: attempts with backoff, then halves, then the fallback.
    fn solve<'a>(&'a self, ctx: &'a Ctx<'a>, batch: Vec<usize>) -> Pin<Box<dyn Future<Output = Solved> + Send + 'a>> {
        Box::pin(async move {
            let cfg = &self.config;
            let views: Vec<&EpisodeView> = batch.iter().map(|&i| &ctx.views[i]).collect();
            let msgs = messages(&views, ctx.facts, &ctx.claim_keys);
            let mut reason = "unavailable";
            for attempt in 0..=cfg.retries {
                if attempt > 0 {
                    tokio::time::sleep(backoff(cfg.backoff, attempt)).await;
                }
                let left = ctx.budget.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| b.checked_sub(1));
                if left.is_err() {
                    reason = "budget";
                    break;
                }
                ctx.calls.fetch_add(1, Ordering::Relaxed);
                let started = Instant::now();
                let reply = {
                    let Ok(_permit) = ctx.permits.acquire().await else { break };
                    self.client.complete(msgs.clone(), answer_schema()).await
                };
                let outcome = match reply {
                    Ok(reply) => {
                        ctx.tokens_in.fetch_add(reply.tokens_in, Ordering::Relaxed);
                        ctx.tokens_out.fetch_add(reply.tokens_out, Ordering::Relaxed);
                        match parse_answer(&reply.content) {
                            Ok(items) => {
                                crate::metrics::record_llm_call("ok", started.elapsed());
                                return distribute(&batch, items);
                            }
                            Err(_) => CallError::Malformed("unparsable answer".into()),
                        }
                    }
                    Err(e) => e,
                };
                reason = outcome.reason();
                crate::metrics::record_llm_call(reason, started.elapsed());
                tracing::warn!(episodes = batch.len(), attempt, reason, error = %outcome, "LLM compile call failed");
                if matches!(outcome, CallError::Rejected(_)) {
                    break;
                }
            }
            if batch.len() > 1 && !matches!(reason, "rejected" | "budget") {
                let right = batch[batch.len() / 2..].to_vec();
                let left = batch[..batch.len() / 2].to_vec();
                let (a, b) = futures_util::future::join(self.solve(ctx, left), self.solve(ctx, right)).await;
                return a.into_iter().chain(b).collect();
            }
            tracing::warn!(episodes = batch.len(), reason, "LLM compiler fell back to the heuristic compiler");
            batch.into_iter().map(|i| (i, Provenance::Fallback(reason))).collect()
        })
    }
}

/// Items by episode; an index outside the batch is dropped.
fn distribute(batch: &[usize], items: Vec<Item>) -> Solved {
    let mut per: Vec<Vec<Item>> = vec![Vec::new(); batch.len()];
    for item in items {
        if let Some(slot) = per.get_mut(item.episode_index) {
            slot.push(item);
        }
    }
    batch.iter().copied().zip(per.into_iter().map(Provenance::Model)).collect()
}

/// Consecutive episodes, at most `max_chars` of text and `max_episodes` per batch (an episode
/// longer than the bound goes alone; its text is already capped).
fn pack(asked: &[usize], views: &[EpisodeView], max_chars: usize, max_episodes: usize) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut chars = 0;
    for &i in asked {
        let n = views[i].text.chars().count();
        match out.last_mut() {
            Some(b) if b.len() < max_episodes && chars + n <= max_chars => {
                b.push(i);
                chars += n;
            }
            _ => {
                out.push(vec![i]);
                chars = n;
            }
        }
    }
    out
}

/// `base * 2^(attempt-1)`, with up to 50% jitter, at most [`MAX_BACKOFF`].
fn backoff(base: Duration, attempt: u32) -> Duration {
    let exp = base.saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
    let jitter = exp.mul_f64(rand::random::<f64>() * 0.5);
    (exp + jitter).min(MAX_BACKOFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(n: usize) -> EpisodeView {
        EpisodeView { text: "x".repeat(n), user_text: String::new() }
    }

    #[test]
    fn packing_bounds_characters_and_episodes() {
        let views = vec![v(50), v(50), v(50), v(500), v(10), v(10), v(10)];
        let asked: Vec<usize> = (0..views.len()).collect();
        assert_eq!(pack(&asked, &views, 120, 2), vec![vec![0, 1], vec![2], vec![3], vec![4, 5], vec![6]]);
        assert_eq!(pack(&[], &views, 120, 2), Vec::<Vec<usize>>::new());
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let b = Duration::from_millis(100);
        assert!(backoff(b, 1) >= b && backoff(b, 1) <= b.mul_f64(1.5));
        assert!(backoff(b, 3) >= b * 4);
        assert_eq!(backoff(Duration::from_secs(60), 5), MAX_BACKOFF);
    }

    #[test]
    fn out_of_batch_indexes_are_dropped() {
        let item = |i| Item {
            kind: "profile_fact".into(),
            content: "x".into(),
            summary: None,
            confidence: None,
            episode_index: i,
            claim: None,
            updates: None,
        };
        let solved = distribute(&[4, 9], vec![item(1), item(7), item(0)]);
        assert_eq!(solved.len(), 2);
        assert!(matches!(&solved[1], (9, Provenance::Model(items)) if items.len() == 1));
    }
}
