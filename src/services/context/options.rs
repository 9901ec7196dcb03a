//! Which retrieval techniques a context call runs, and the ranking's constants.

use crate::bundle::score::{Weights, WEIGHTS};
use crate::db;

/// Switches for each retrieval technique.
#[derive(Debug, Clone, Copy)]
pub struct RetrievalOptions {
    pub lexical: bool,
    pub semantic: bool,
    /// Neighbouring turns of the strongest matches inherit part of their relevance.
    pub neighbours: bool,
    pub session_matches: bool,
    pub dates: bool,
    /// Each turn's cosine is blended with its neighbours' in the same session.
    pub smoothing: bool,
    /// Turns by a speaker the task names (or the user's, for a task about their own words) get a boost.
    pub speakers: bool,
    /// Chat turns render without the repeated `[source/type]` label.
    pub compact: bool,
    /// The task is embedded without the names in it.
    pub unnamed_task_vector: bool,
    /// Compact bundles show long turns beyond the best few as excerpts.
    pub excerpts: bool,
    /// Subject size (episodes) from which vector candidates come from the HNSW indexes.
    pub approx_vectors_from: i64,
    /// The constants of the ranking (the benchmark varies them; calls use [`Tuning::DEFAULT`]).
    pub tuning: Tuning,
}

impl Default for RetrievalOptions {
    fn default() -> Self {
        RetrievalOptions {
            lexical: true,
            semantic: true,
            neighbours: true,
            session_matches: true,
            dates: true,
            smoothing: true,
            speakers: true,
            compact: true,
            unnamed_task_vector: true,
            excerpts: true,
            approx_vectors_from: db::context::APPROX_VECTORS_FROM,
            tuning: Tuning::DEFAULT,
        }
    }
}

/// The ranking's constants, in one place so the benchmark can cross-validate them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// Fusion weights of the score.
    pub weights: Weights,
    /// Weight of the previous turn's cosine in a turn's smoothed cosine (its own counts 1).
    pub smooth_prev: f64,
    /// Weight of the next turn's cosine.
    pub smooth_next: f64,
    /// Relevance a neighbouring turn inherits from a strong match (the answer often sits next to the question).
    pub neighbour_share: f64,
    /// How many of the best-matching episodes lend relevance to their neighbours.
    pub neighbour_sources: usize,
    /// Extra relevance for turns of a session holding several of the best matches (0 since
    /// rank-6: with excerpts it cost multi-hop questions the other sessions they need).
    pub session_boost: f64,
    /// How many of the best-matching episodes count towards a session's matches.
    pub session_top: usize,
    /// Extra relevance for turns by a speaker the task names, and for the user's turns when the
    /// task asks about the user's own words ("what did I mention…",
    /// [`super::signals::asks_own_words`]).
    pub speaker_boost: f64,
    /// Extra relevance for items dated on a day the task names.
    pub date_boost: f64,
    /// Extra relevance for items dated in a month the task names (without a day).
    pub month_boost: f64,
    /// How many of the best-ranked chat turns a compact bundle shows whole.
    pub whole_turns: usize,
    /// The share of the budget one of those turns may take (1/n, in tokens at four chars a
    /// token); a longer turn shows its sentences that share the task's words within that room,
    /// so a few long answers cannot fill the bundle by themselves.
    pub whole_share: usize,
    /// Room of the other turns' excerpts (the sentences sharing the task's words), in chars.
    pub turn_chars: usize,
    /// From this many turns on (in rank order, counting the whole ones), a turn's excerpt gets
    /// only `tail_chars`: the deeper a turn ranks, the less of it the bundle spends, so a task
    /// whose evidence is spread over many moments sees many of them.
    pub tail_from: usize,
    /// Room of a deeper turn's excerpt, in chars.
    pub tail_chars: usize,
    /// For a task about many moments of the history ([`crate::bundle::terms::spans_history`]:
    /// an order of events, a summary, progress over time): the whole turns, and the rank from
    /// which turns get `tail_chars`. One whole turn and short excerpts from the third: the
    /// bundle spends its room on many moments rather than on the best few.
    pub span_whole: usize,
    pub span_tail_from: usize,
    /// The room of those turns' excerpts, in chars: 40 (about seven words, what the moment was
    /// about) rather than `tail_chars`, so such a task sees more of its moments (BEAM dev chats
    /// 1-5 and 6-10 each gained at 2,000 and 4,000 tokens;
    /// bench/results/2026-12-07-spans-and-procedures.md).
    pub span_tail_chars: usize,
    /// For such a task, the sessions' digests ([`crate::compile::digest`]) lead the bundle within
    /// a `1/n` share of the budget (0: none leads; a digest then ranks as any summary).
    pub digest_share: usize,
    /// Tokens of the budget per candidate of each ranked lane (0: the longest lanes whatever the
    /// budget); see [`db::context::ranked_lane`].
    pub lane_tokens: usize,
}

impl Tuning {
    /// The constants every context call uses.
    pub const DEFAULT: Tuning = Tuning {
        weights: WEIGHTS,
        smooth_prev: 0.5,
        smooth_next: 0.5,
        neighbour_share: 0.5,
        neighbour_sources: 5,
        session_boost: 0.0,
        session_top: 20,
        speaker_boost: 0.6,
        date_boost: 0.5,
        month_boost: 0.25,
        whole_turns: 3,
        whole_share: 16,
        turn_chars: 130,
        tail_from: 10,
        tail_chars: 60,
        span_whole: 1,
        span_tail_from: 3,
        span_tail_chars: 40,
        digest_share: 4,
        lane_tokens: 20,
    };
}
