//! Doubts: the earlier memories a change that retired nothing is likely about, by shared words
//! or, with a semantic embedder, by meaning.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::Older;

/// Least cosine similarity between a change and an earlier memory for a [`Doubt`] that no
/// shared word explains, and by how much the earlier memory must beat those of every other
/// message (MiniLM; measured on the update suites and checked on the BEAM dev chats, see
/// docs/compile.md).
pub(super) const DOUBT_SIMILARITY: f32 = 0.20;
pub(super) const DOUBT_MARGIN: f32 = 0.05;
/// At most this many earlier messages tie as what a change may be about: more is no signal.
pub(super) const MAX_DOUBTED: usize = 2;
/// Longest message (in chars), new or earlier, a doubt reads: weaker evidence than a retirement
/// needs a plainer statement. On the BEAM dev chats every doubt between longer messages was
/// wrong (questions and plans about one's studies and work sharing a word or a theme, 138 to
/// 325 chars); the update suites' user messages are at most 224 chars, 99% under 170.
pub(super) const DOUBT_CHARS: usize = 160;

/// Whether a message is short enough for a doubt ([`DOUBT_CHARS`]).
pub(super) fn short(text: &str) -> bool {
    text.chars().count() <= DOUBT_CHARS
}

/// The earlier memories a change that retired nothing may be about, by shared words: those of
/// the earlier messages it bears on best, when at most [`MAX_DOUBTED`] tie.
pub(super) fn doubted_by_words(unsure: &BTreeMap<&str, ((bool, usize), Vec<Uuid>)>) -> Option<Vec<Uuid>> {
    let best = unsure.values().map(|(key, _)| *key).max()?;
    let top: Vec<&Vec<Uuid>> = unsure.values().filter(|(key, _)| *key == best).map(|(_, ids)| ids).collect();
    (top.len() <= MAX_DOUBTED).then(|| top.into_iter().flatten().copied().collect())
}

/// The earlier memories a change that shares no word with any is about by meaning: the most
/// similar one, when similar enough, with the nearest of any other message within the margin
/// of it (at most [`MAX_DOUBTED`] messages, else no signal).
pub(super) fn doubted_by_meaning<'a>(
    vector: Option<&[f32]>,
    older: impl Iterator<Item = &'a Older>,
) -> Option<Vec<Uuid>> {
    let vector = vector?;
    let mut scored: Vec<(f32, &Older)> =
        older.filter_map(|o| o.vector.as_deref().map(|v| (cosine(vector, v), o))).collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
    let best = scored.first()?.0;
    if best < DOUBT_SIMILARITY {
        return None;
    }
    // The nearest memory of each message near the best (a value changed twice is near both of
    // its earlier values); beyond the margin another message is no rival.
    let mut groups: Vec<&str> = Vec::new();
    let mut doubted = Vec::new();
    for (sim, o) in scored.iter().take_while(|(sim, _)| best - sim < DOUBT_MARGIN) {
        if *sim >= DOUBT_SIMILARITY && !groups.contains(&o.group.as_str()) {
            groups.push(&o.group);
            doubted.push(o.id);
        }
    }
    (groups.len() <= MAX_DOUBTED).then_some(doubted)
}

/// Cosine similarity of two vectors (0 when either is zero).
pub(super) fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let n = norm(a) * norm(b);
    if n == 0.0 {
        0.0
    } else {
        dot / n
    }
}
