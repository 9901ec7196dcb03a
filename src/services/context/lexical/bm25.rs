//! BM25, the one place it is computed: a lexical lane's hits (an item's id, its length in
//! lexemes, the task terms it holds) ranked over the subject's size (k1 1.2, b 0.75), scores
//! rounded to nine decimals, the best `limit` by score and then id. The hits come from the
//! server's index of a large subject ([`super::Index`]), from a small subject's kept rows
//! ([`crate::services::context::lanes`]), or from Postgres (`mnemo_memory_hits`,
//! `mnemo_episode_hits`, returned by `mnemo_context` for [`from_hits`]).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use uuid::Uuid;

use crate::db::context::{Hit, LexicalHits, LexicalLanes};

/// The lexical lanes of a call ranked on the hits Postgres returned for it, each of `limit`
/// items.
pub fn from_hits(h: &LexicalHits, limit: usize) -> LexicalLanes {
    let lane = |hits: &[Hit], terms: usize| -> (Vec<Uuid>, Vec<f64>) {
        // Each item once, with the terms it holds in ascending order.
        let mut items: BTreeMap<Uuid, (f64, Vec<usize>)> = BTreeMap::new();
        for hit in hits.iter().filter(|h| h.term < terms) {
            items.entry(hit.id).or_insert_with(|| (hit.dl, Vec::new())).1.push(hit.term);
        }
        let hits: Vec<(Uuid, f64, Vec<usize>)> = items
            .into_iter()
            .map(|(id, (dl, mut held))| {
                held.sort_unstable();
                held.dedup();
                (id, dl, held)
            })
            .collect();
        ranked(&hits, terms, h.size, limit).into_iter().unzip()
    };
    LexicalLanes {
        state: None,
        memories: lane(&h.memories, h.memory_terms.len()),
        episodes: lane(&h.episodes, h.episode_terms.len()),
        memory_terms: h.memory_terms.clone(),
        episode_terms: h.episode_terms.clone(),
    }
}

/// The task terms an item holds, as indexes into the lane's terms, visited in ascending order
/// (the order Postgres sums them in).
pub trait Held {
    fn each(&self, f: impl FnMut(usize));
}

impl Held for Vec<usize> {
    fn each(&self, f: impl FnMut(usize)) {
        self.iter().copied().for_each(f);
    }
}

/// Terms by bit (term `t` is bit `t`).
impl Held for u128 {
    fn each(&self, mut f: impl FnMut(usize)) {
        let mut bits = *self;
        while bits != 0 {
            f(bits.trailing_zeros() as usize);
            bits &= bits - 1;
        }
    }
}

/// BM25 over `hits` (an item's id, its length in lexemes and the task terms of `terms` it holds,
/// each item once) on a subject of `size` items (or as many as hold a term, if more): idf
/// `ln(1 + (n - df + 0.5) / (df + 0.5))`, term weight `idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 *
/// dl / avgdl))` with avgdl over the hits; the best `limit` by score (rounded to nine decimals,
/// as Postgres's `round(x::numeric, 9)` did when it ranked), then id, in that order. Only the
/// items within 2e-9 of the `limit`-th best raw score are rounded: rounding moves a score by at
/// most 5e-10, so no item further below can reach the lane.
pub fn ranked<H: Held>(hits: &[(Uuid, f64, H)], terms: usize, size: f64, limit: usize) -> Vec<(Uuid, f64)> {
    if hits.is_empty() || limit == 0 {
        return Vec::new();
    }
    let n = size.max(hits.len() as f64);
    let avgdl = (hits.iter().map(|h| h.1).sum::<f64>() / hits.len() as f64).max(1.0);
    let mut df = vec![0.0f64; terms];
    for h in hits {
        h.2.each(|t| df[t] += 1.0);
    }
    let idf: Vec<f64> = df.iter().map(|&d| (1.0 + (n - d + 0.5) / (d + 0.5)).ln()).collect();
    let mut raw: Vec<(Uuid, f64)> = hits
        .iter()
        .map(|(id, dl, held)| {
            let mut sum = 0.0;
            held.each(|t| sum += idf[t] * 2.2 / (1.0 + 1.2 * (0.25 + 0.75 * dl / avgdl)));
            (*id, sum)
        })
        .collect();
    if raw.len() > limit {
        let (_, kth, _) =
            raw.select_nth_unstable_by(limit - 1, |a, b| b.1.partial_cmp(&a.1).unwrap_or(Ordering::Equal));
        let cut = kth.1 - 2e-9;
        raw.retain(|r| r.1 >= cut);
    }
    let mut scored: Vec<(Uuid, f64)> = raw.into_iter().map(|(id, r)| (id, round9(r))).collect();
    scored.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(Ordering::Equal).then(a.0.cmp(&b.0)));
    scored.truncate(limit);
    scored
}

/// `round(x::numeric, 9)::float8` as Postgres computes it: the double converted to numeric
/// through its 15 significant digits (`float8_numeric`), rounded half away from zero at the
/// ninth decimal, read back as the nearest double.
pub fn round9(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let text = format!("{x:.14e}");
    let Some((mantissa, exp)) = text.split_once('e') else { return x };
    let Ok(exp) = exp.parse::<i32>() else { return x };
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let Ok(d) = digits.parse::<u128>() else { return x };
    // x = d * 10^(exp - 14); in units of 10^-9 that is d * 10^(exp - 5).
    let shift = exp - 5;
    let units: u128 = if shift >= 0 {
        return format!("{}{digits}e{}", if negative { "-" } else { "" }, exp - 14).parse().unwrap_or(x);
    } else if shift < -20 {
        0
    } else {
        let div = 10u128.pow(shift.unsigned_abs());
        d / div + u128::from((d % div) * 2 >= div)
    };
    if units == 0 {
        return 0.0;
    }
    format!("{}{units}e-9", if negative { "-" } else { "" }).parse().unwrap_or(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round9_rounds_the_fifteen_digit_decimal_half_away_from_zero() {
        assert_eq!(round9(1.0), 1.0);
        assert_eq!(round9(0.1234567894), 0.123456789);
        assert_eq!(round9(0.1234567895), 0.12345679);
        assert_eq!(round9(-0.1234567895), -0.12345679);
        assert_eq!(round9(7.125_000_000_499_9), 7.125);
        assert_eq!(round9(1e-12), 0.0);
        assert!(round9(-1e-12).is_sign_positive());
        // Fifteen significant digits first: 123456789.123457, then nothing left to round.
        assert_eq!(round9(123_456_789.123_456_78), 123_456_789.123_457);
        assert_eq!(round9(1e20), 1e20);
        // 0.3 + 0.6 is 0.8999999999999999 as a double; fifteen digits make it 0.9 first.
        assert_eq!(round9(0.3 + 0.6), 0.9);
    }

    const GOLDEN: [f64; 4] = [3.551230819, 2.003063122, 1.548167696, 0.642974519];

    #[test]
    fn hits_rank_as_the_items_they_make() {
        let id = |n: u128| Uuid::from_u128(n);
        let hit = |n: u128, term: usize, dl: f64| Hit { id: id(n), term, dl };
        // Item 1 holds both terms, item 2 the rarer one only, item 3 the common one in a long text.
        let h = LexicalHits {
            state: None,
            memory_terms: vec!["kafka".into(), "lag".into()],
            episode_terms: vec![],
            size: 10.0,
            memories: vec![hit(3, 0, 40.0), hit(1, 1, 5.0), hit(1, 0, 5.0), hit(2, 1, 5.0), hit(4, 0, 5.0)],
            episodes: vec![],
        };
        let lanes = from_hits(&h, 10);
        assert_eq!(lanes.state, None);
        assert_eq!(lanes.memories.0[0], id(1), "both terms first");
        assert_eq!(lanes.memories.0.last(), Some(&id(3)), "the long item last");
        let direct = ranked(
            &[(id(1), 5.0, vec![0, 1]), (id(2), 5.0, vec![1]), (id(3), 40.0, vec![0]), (id(4), 5.0, vec![0])],
            2,
            10.0,
            10,
        );
        let (ids, scores): (Vec<Uuid>, Vec<f64>) = direct.into_iter().unzip();
        assert_eq!((ids, scores), lanes.memories, "the hits' order does not matter");
        assert_eq!(from_hits(&h, 2).memories.0.len(), 2);
        assert!(lanes.episodes.0.is_empty());
        // The scores of the first ranking function (migration 0015's `mnemo_bm25_rank`, which a
        // test compared with this one row for row on 300 random lanes while that migration existed).
        assert_eq!(lanes.memories.1, GOLDEN);
    }
}
