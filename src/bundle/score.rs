//! The one deterministic score used to rank context items.
//!
//! Formula, exactly as implemented (inputs are first clamped: `lexical`, `context_boost` and
//! `confidence` to 0..1, `semantic` to -1..1, non-finite values to 0):
//!
//! ```text
//! fused     = w.semantic * max(0, semantic) + w.lexical * lexical    if semantic is Some
//!           = lexical                                                 if semantic is None
//! relevance = fused + (1 - fused) * w.context * context_boost
//! age_days  = max(0, as_of - at) in days (future items count as age 0)
//! recency   = 2 ^ (-age_days / HALF_LIFE_DAYS)           (halves every HALF_LIFE_DAYS)
//! base      = RELEVANCE_WEIGHT * relevance
//!           + kind_prior(kind)                     Fact 0.10, Procedure 0.07, Summary 0.04, Episode 0
//!           + RECENCY_WEIGHT * recency
//!           + SESSION_BOOST     if in_current_session
//!           + FAILED_BOOST      if outcome == Some(false)
//!           + CURRENT_CLAIM_BOOST if current_claim
//! score     = round(base * (CONFIDENCE_FLOOR + (1 - CONFIDENCE_FLOOR) * confidence) * 1e6) / 1e6
//! ```
//!
//! `w` is [`WEIGHTS`] (semantic 0.7, lexical 0.3, context 0.5). `lexical` is BM25 as a share of
//! the best candidate's, so the top lexical match always brings the full 0.3, while a cosine
//! of a clearly related MiniLM pair is about 0.4-0.6 (0.3-0.4 after weighting): the two lanes
//! count about equally. Conversation turns are short and name the people, places and things a
//! question asks about, so an exact rare word is as good a sign as a paraphrase. The weights
//! were chosen by leave-one-conversation-out cross-validation on real long conversations
//! (LoCoMo dev set, `bench/README.md`); 0.85/0.15 (mnemo-rank-3) came from a synthetic set.
//!
//! Relevance carries weight 1.0 while all priors together add at most 0.45, so any clearly
//! relevant item outranks irrelevant ones however recent. Recency is measured from the request's
//! `as_of`, never the wall clock, so the same signals always give the same bits.

use chrono::{DateTime, Utc};

/// Item kind, which sets a mild prior.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A stored fact about the subject.
    Fact,
    /// A stored procedure.
    Procedure,
    /// A summary of past episodes.
    Summary,
    /// A raw episode.
    Episode,
}

/// Everything the score depends on.
#[derive(Debug, Clone)]
pub struct Signals {
    /// Item kind.
    pub kind: Kind,
    /// Lexical relevance in 0..1 (already normalised by the caller, e.g. r/(1+r) of ts_rank_cd, or 0).
    pub lexical: f64,
    /// Cosine similarity in -1..1 when the embedder is semantic, else None.
    pub semantic: Option<f64>,
    /// Item time (memory valid_from / episode occurred_at); recency is measured from `as_of`, never the wall clock.
    pub at: DateTime<Utc>,
    /// The request's as_of.
    pub as_of: DateTime<Utc>,
    /// Confidence in 0..1 (episodes: 1.0).
    pub confidence: f64,
    /// True when the item belongs to the requesting session.
    pub in_current_session: bool,
    /// Extra relevance the caller derives from context (neighbouring turns of a strong match, sessions with several matches), 0..1.
    pub context_boost: f64,
    /// Episode outcome: Some(true) succeeded, Some(false) failed, None.
    pub outcome: Option<bool>,
    /// True when the memory is single-valued claim-current (every current single-valued claim is a strong fact).
    pub current_claim: bool,
}

/// The fusion weights of the score (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    /// Weight of the cosine (paraphrase).
    pub semantic: f64,
    /// Weight of the normalised lexical score (exact names and rare words).
    pub lexical: f64,
    /// How far context (neighbours, sessions, dates, speakers) lifts an item towards full relevance, never past it.
    pub context: f64,
}

/// The weights every context call uses.
pub const WEIGHTS: Weights = Weights { semantic: 0.7, lexical: 0.3, context: 0.5 };

/// Relevance dominates: an item's match to the task matters more than every prior combined.
const RELEVANCE_WEIGHT: f64 = 1.0;
/// Distilled knowledge is denser per token than raw chatter.
const PRIOR_FACT: f64 = 0.10;
/// Procedures are distilled but narrower than facts.
const PRIOR_PROCEDURE: f64 = 0.07;
/// Summaries compress episodes but are less precise than facts.
const PRIOR_SUMMARY: f64 = 0.04;
/// Raw episodes get no prior; they must earn their place by relevance or recency.
const PRIOR_EPISODE: f64 = 0.0;
/// Recency only breaks near-ties between similarly relevant items.
const RECENCY_WEIGHT: f64 = 0.10;
/// A month: last week's items still count, last year's barely do.
const HALF_LIFE_DAYS: f64 = 30.0;
/// The ongoing conversation is what the agent is most likely continuing.
const SESSION_BOOST: f64 = 0.15;
/// Failures are worth seeing so the agent does not repeat them.
const FAILED_BOOST: f64 = 0.05;
/// A current single-valued claim is the authoritative value of its attribute.
const CURRENT_CLAIM_BOOST: f64 = 0.05;
/// Low confidence trims the score by at most 20%, so it reorders neighbours but never buries relevance.
const CONFIDENCE_FLOOR: f64 = 0.8;
/// Milliseconds per day, for fractional ages.
const MS_PER_DAY: f64 = 86_400_000.0;
/// Rounding to 6 decimals makes equal-looking scores compare equal.
const ROUNDING: f64 = 1e6;

/// The score with [`WEIGHTS`], rounded to 6 decimals so ties compare exactly.
pub fn score(s: &Signals) -> f64 {
    score_with(s, &WEIGHTS)
}

/// The score with the given fusion weights (the benchmark varies them; calls use [`score`]).
pub fn score_with(s: &Signals, w: &Weights) -> f64 {
    let lexical = unit(s.lexical);
    let fused = match s.semantic {
        Some(cos) => (w.semantic * finite(cos).clamp(0.0, 1.0) + w.lexical * lexical).min(1.0),
        None => lexical,
    };
    let relevance = fused + (1.0 - fused) * w.context * unit(s.context_boost);
    let age_days = (s.as_of - s.at).num_milliseconds().max(0) as f64 / MS_PER_DAY;
    let recency = (-age_days / HALF_LIFE_DAYS).exp2();
    let mut base = RELEVANCE_WEIGHT * relevance + kind_prior(s.kind) + RECENCY_WEIGHT * recency;
    if s.in_current_session {
        base += SESSION_BOOST;
    }
    if s.outcome == Some(false) {
        base += FAILED_BOOST;
    }
    if s.current_claim {
        base += CURRENT_CLAIM_BOOST;
    }
    let scaled = base * (CONFIDENCE_FLOOR + (1.0 - CONFIDENCE_FLOOR) * unit(s.confidence));
    // `+ 0.0` folds -0.0 into 0.0 so equal scores also have equal bits.
    (scaled * ROUNDING).round() / ROUNDING + 0.0
}

/// Sorts `items` in place by score descending, then id ascending — a total order, so the result
/// never depends on the input order. Keys are computed once per item; NaN scores sort last.
pub fn rank<T>(items: &mut Vec<T>, key: impl Fn(&T) -> (f64, uuid::Uuid)) {
    let mut keyed: Vec<((f64, uuid::Uuid), T)> = items
        .drain(..)
        .map(|item| {
            let (s, id) = key(&item);
            let s = if s.is_nan() { f64::NEG_INFINITY } else { s + 0.0 };
            ((s, id), item)
        })
        .collect();
    keyed.sort_by(|((sa, ia), _), ((sb, ib), _)| sb.total_cmp(sa).then(ia.cmp(ib)));
    items.extend(keyed.into_iter().map(|(_, item)| item));
}

/// The kind's prior.
fn kind_prior(kind: Kind) -> f64 {
    match kind {
        Kind::Fact => PRIOR_FACT,
        Kind::Procedure => PRIOR_PROCEDURE,
        Kind::Summary => PRIOR_SUMMARY,
        Kind::Episode => PRIOR_EPISODE,
    }
}

/// Non-finite inputs count as 0 so one bad signal cannot poison the order.
fn finite(x: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        0.0
    }
}

/// Clamps to 0..1 after discarding non-finite values.
fn unit(x: f64) -> f64 {
    finite(x).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use chrono::{Duration, TimeZone};

    fn as_of() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 10, 9, 0, 0).single().unwrap()
    }

    fn base(kind: Kind) -> Signals {
        Signals {
            kind,
            lexical: 0.0,
            semantic: None,
            at: as_of(),
            as_of: as_of(),
            confidence: 1.0,
            in_current_session: false,
            context_boost: 0.0,
            outcome: None,
            current_claim: false,
        }
    }

    #[test]
    fn relevance_beats_recency() {
        let old_fact = Signals { lexical: 0.3, at: as_of() - Duration::days(400), confidence: 0.5, ..base(Kind::Fact) };
        let chatter = Signals { at: as_of(), in_current_session: true, ..base(Kind::Episode) };
        assert!(score(&old_fact) > score(&chatter), "{} vs {}", score(&old_fact), score(&chatter));
        let semantic_fact = Signals { semantic: Some(0.5), at: as_of() - Duration::days(400), ..base(Kind::Fact) };
        let recent = Signals { semantic: Some(-0.2), lexical: 0.0, ..base(Kind::Episode) };
        assert!(score(&semantic_fact) > score(&recent));
    }

    #[test]
    fn current_session_boost() {
        let out = base(Kind::Episode);
        let inside = Signals { in_current_session: true, ..base(Kind::Episode) };
        assert!(score(&inside) >= score(&out) + 0.1);
    }

    #[test]
    fn kind_prior_order_and_small_boosts() {
        let s = |k| score(&base(k));
        assert!(s(Kind::Fact) > s(Kind::Procedure));
        assert!(s(Kind::Procedure) > s(Kind::Summary));
        assert!(s(Kind::Summary) > s(Kind::Episode));
        let failed = Signals { outcome: Some(false), ..base(Kind::Episode) };
        let succeeded = Signals { outcome: Some(true), ..base(Kind::Episode) };
        assert!(score(&failed) > score(&succeeded));
        assert_eq!(score(&succeeded), score(&base(Kind::Episode)));
        let claim = Signals { current_claim: true, ..base(Kind::Fact) };
        assert!(score(&claim) > score(&base(Kind::Fact)));
        let unsure = Signals { confidence: 0.2, ..base(Kind::Fact) };
        assert!(score(&unsure) < score(&base(Kind::Fact)));
    }

    #[test]
    fn recency_is_from_as_of_and_future_counts_as_now() {
        let month_old = Signals { at: as_of() - Duration::days(30), ..base(Kind::Fact) };
        let future = Signals { at: as_of() + Duration::days(90), ..base(Kind::Fact) };
        assert_eq!(score(&future), score(&base(Kind::Fact)));
        // Exactly one half-life: recency term halves from 0.10 to 0.05.
        assert_eq!(score(&month_old), 0.15);
        assert_eq!(score(&base(Kind::Fact)), 0.2);
    }

    #[test]
    fn as_of_determinism() {
        let s = Signals {
            lexical: 0.37,
            semantic: Some(0.61),
            at: as_of() - Duration::minutes(12_345),
            context_boost: 0.2,
            confidence: 0.9,
            ..base(Kind::Summary)
        };
        let first = score(&s).to_bits();
        for _ in 0..100 {
            assert_eq!(score(&s.clone()).to_bits(), first);
        }
        // Rounded to 6 decimals.
        let v = score(&s);
        assert_eq!((v * 1e6).round() / 1e6, v);
    }

    #[test]
    fn monotone_in_lexical_and_semantic() {
        let mut prev_lex = -1.0;
        let mut prev_sem = -1.0;
        for i in 0..=20 {
            let x = f64::from(i) / 20.0;
            let lex = score(&Signals { lexical: x, ..base(Kind::Fact) });
            let sem = score(&Signals { semantic: Some(2.0 * x - 1.0), lexical: 0.4, ..base(Kind::Fact) });
            assert!(lex >= prev_lex && sem >= prev_sem);
            prev_lex = lex;
            prev_sem = sem;
        }
        assert!(score(&Signals { lexical: 1.0, ..base(Kind::Fact) }) > score(&base(Kind::Fact)));
        // A perfect cosine outweighs the best lexical match, and both lanes count.
        let sem_only = Signals { semantic: Some(1.0), ..base(Kind::Fact) };
        let lex_only = Signals { semantic: Some(0.0), lexical: 1.0, ..base(Kind::Fact) };
        let neither = Signals { semantic: Some(0.0), ..base(Kind::Fact) };
        assert!(score(&sem_only) > score(&lex_only));
        assert!(score(&lex_only) > score(&neither) + 0.2);
        // Fused relevance never exceeds 1 whatever the weights.
        let heavy = Weights { semantic: 1.0, lexical: 1.0, context: 0.5 };
        let both = Signals { semantic: Some(1.0), lexical: 1.0, ..base(Kind::Fact) };
        assert_eq!(score_with(&both, &heavy), score_with(&sem_only, &heavy));
    }

    #[test]
    fn non_finite_inputs_are_neutral() {
        let nan =
            Signals { lexical: f64::NAN, semantic: Some(f64::INFINITY), confidence: f64::NAN, ..base(Kind::Fact) };
        assert!(score(&nan).is_finite());
    }

    #[test]
    fn tie_order_by_id() {
        let id = uuid::Uuid::from_u128;
        let mut items = vec![
            (0.5, id(3)),
            (0.9, id(7)),
            (0.5, id(1)),
            (0.5, id(2)),
            (f64::NAN, id(0)),
            (-0.0, id(9)),
            (0.0, id(8)),
        ];
        rank(&mut items, |&(s, i)| (s, i));
        let ids: Vec<u128> = items.iter().map(|(_, i)| i.as_u128()).collect();
        assert_eq!(ids, vec![7, 1, 2, 3, 8, 9, 0]);
        // Input order does not matter.
        let mut reversed: Vec<_> = items.iter().rev().copied().collect();
        rank(&mut reversed, |&(s, i)| (s, i));
        let again: Vec<u128> = reversed.iter().map(|(_, i)| i.as_u128()).collect();
        assert_eq!(again, ids);
    }
}
