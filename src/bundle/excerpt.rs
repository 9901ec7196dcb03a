//! Query-biased excerpts of long turns: the sentences that share the most words with the task,
//! in their order, with "…" where sentences were left out.
//!
//! A long turn often holds one sentence that matters to the task among greetings and asides; a
//! bundle that shows every long turn whole fits a third fewer turns. Search engines show
//! query-biased snippets for the same reason. Words are compared after Snowball stemming (the
//! algorithm Postgres' `english` configuration uses, so the excerpt agrees with the lexical lane).

use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock};

use rust_stemmers::{Algorithm, Stemmer};

use crate::bundle::terms::content_words;
use crate::bundle::tokens::{memo_key, MemoKey};

const ELLIPSIS: &str = "…";

/// The stems of the task's content words, as the [`memo_key`]s of the stems (sorted, distinct).
pub struct TaskStems {
    stems: Vec<MemoKey>,
    stemmer: Stemmer,
}

impl TaskStems {
    /// The stems of the task's content words.
    pub fn new(task: &str) -> Self {
        let stemmer = Stemmer::create(Algorithm::English);
        let stems: BTreeSet<MemoKey> = content_words(task).iter().map(|w| memo_key(&stemmer.stem(w))).collect();
        TaskStems { stems: stems.into_iter().collect(), stemmer }
    }

    /// How many of the task's stems each sentence of `text` holds, in sentence order: a lookup
    /// per task stem in the text's index, not a search per sentence.
    fn shared(&self, text: &Analysis) -> Vec<usize> {
        let mut hits = vec![0; text.spans.len()];
        for stem in &self.stems {
            for &i in text.holding(stem) {
                hits[i as usize] += 1;
            }
        }
        hits
    }
}

/// A text as excerpts read it: its sentences ([`sentences`], as byte ranges) and, for each stem
/// of its words (its [`memo_key`]), the sentences holding it. What a call compares with its task
/// is then one lookup per task stem.
///
/// One call's excerpts read every sentence of a hundred or more candidate turns, and a long
/// chat's turns are 2-4 KB: splitting and stemming them was most of the time a call spent
/// packing. A subject's turns come back call after call, so each text is read once and kept
/// under its key ([`analysis`]). The stems depend on the text alone, never on the task.
struct Analysis {
    spans: Vec<(usize, usize)>,
    /// The distinct stems, sorted, each with where its sentences start in `sentences`.
    stems: Box<[(MemoKey, u32)]>,
    /// Per stem, in the order of `stems`, the sentences holding it (ascending, each once).
    sentences: Box<[u32]>,
}

impl Analysis {
    fn of(text: &str, stemmer: &Stemmer) -> Self {
        let mut lower = String::new();
        let mut spans = Vec::new();
        let mut pairs: Vec<(MemoKey, u32)> = Vec::new();
        for (at, sentence) in sentences(text).into_iter().enumerate() {
            let start = sentence.as_ptr() as usize - text.as_ptr() as usize;
            spans.push((start, start + sentence.len()));
            let at = u32::try_from(at).unwrap_or(u32::MAX);
            let keys = sentence.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(|w| {
                lower.clear();
                if w.is_ascii() {
                    lower.push_str(w);
                    lower.make_ascii_lowercase();
                } else {
                    lower.push_str(&w.to_lowercase()); // str's rules (a final sigma), not char by char
                }
                stem_key(stemmer, &lower)
            });
            pairs.extend(keys.map(|k| (k, at)));
        }
        pairs.sort_unstable();
        pairs.dedup();
        let mut stems: Vec<(MemoKey, u32)> = Vec::new();
        for (i, (key, _)) in pairs.iter().enumerate() {
            if stems.last().is_none_or(|(last, _)| last != key) {
                stems.push((*key, u32::try_from(i).unwrap_or(u32::MAX)));
            }
        }
        let sentences = pairs.into_iter().map(|(_, at)| at).collect();
        Analysis { spans, stems: stems.into_boxed_slice(), sentences }
    }

    /// The sentences holding `stem` (ascending).
    fn holding(&self, stem: &MemoKey) -> &[u32] {
        let Ok(i) = self.stems.binary_search_by(|(k, _)| k.cmp(stem)) else {
            return &[];
        };
        let from = self.stems[i].1 as usize;
        let to = self.stems.get(i + 1).map_or(self.sentences.len(), |(_, start)| *start as usize);
        &self.sentences[from..to]
    }

    /// About the bytes it takes (the weight of its entry).
    fn bytes(&self) -> u64 {
        (64 + 16 * self.spans.len() + 20 * self.stems.len() + 4 * self.sentences.len()) as u64
    }
}

/// Weight of a kept [`Analysis`]: its bytes.
#[derive(Clone)]
struct AnalysisBytes;

impl quick_cache::Weighter<MemoKey, Arc<Analysis>> for AnalysisBytes {
    fn weight(&self, _key: &MemoKey, val: &Arc<Analysis>) -> u64 {
        val.bytes()
    }
}

/// Bytes the kept analyses may take (an estimate): some 8,000 long turns.
const ANALYSIS_BYTES: u64 = 32 << 20;

fn analyses() -> &'static quick_cache::sync::Cache<MemoKey, Arc<Analysis>, AnalysisBytes> {
    static KEPT: LazyLock<quick_cache::sync::Cache<MemoKey, Arc<Analysis>, AnalysisBytes>> =
        LazyLock::new(|| quick_cache::sync::Cache::with_weighter(8192, ANALYSIS_BYTES, AnalysisBytes));
    &KEPT
}

/// The analysis of `text`, kept under the text's [`memo_key`]: it holds byte offsets and keys,
/// no words.
fn analysis(text: &str, stemmer: &Stemmer) -> Arc<Analysis> {
    let key = memo_key(text);
    if let Some(hit) = analyses().get(&key) {
        return hit;
    }
    let made = Arc::new(Analysis::of(text, stemmer));
    analyses().insert(key, Arc::clone(&made));
    made
}

/// Drops every kept analysis (after an erasure: nothing derived from erased text stays).
pub fn forget_texts() {
    analyses().clear();
}

/// Whether no text's analysis is kept.
pub fn no_texts_kept() -> bool {
    analyses().is_empty()
}

/// The [`memo_key`] of a lower-cased word's English Snowball stem, memoised across calls by the
/// word's key: each new text's words are stemmed once ([`Analysis::of`]), and a subject's texts
/// share most of their words. Stemming is a pure function, so the memo never changes a result,
/// and it holds keys only, no words.
fn stem_key(stemmer: &Stemmer, lower: &str) -> MemoKey {
    static MEMO: LazyLock<quick_cache::sync::Cache<MemoKey, MemoKey>> =
        LazyLock::new(|| quick_cache::sync::Cache::new(STEM_MEMO_ENTRIES));
    let word = memo_key(lower);
    if let Some(hit) = MEMO.get(&word) {
        return hit;
    }
    let stem = memo_key(&stemmer.stem(lower));
    MEMO.insert(word, stem);
    stem
}

/// Distinct words whose stems are kept (about 2 MiB).
const STEM_MEMO_ENTRIES: usize = 50_000;

/// One message of a turn: its speaker prefix ("Maria: ", or "" for plain text) and its text.
pub struct Part<'a> {
    pub prefix: &'a str,
    pub text: &'a str,
}

/// The turn in at most about `chars` chars (plus prefixes and ellipses): whole when it fits;
/// else the sentences with the most task stems, best first until the room is spent, shown in
/// their order; else (no sentence shares a word with the task) its opening, cut at `chars`.
pub fn excerpt(parts: &[Part<'_>], stems: &TaskStems, chars: usize) -> String {
    excerpt_at(parts, stems, chars, None)
}

/// [`excerpt`], where `focus` (a char offset in the turn's text as compile reads it: each part
/// as "prefix" + text, parts joined by a newline) marks the passage whose vector found the turn:
/// when no sentence shares a word with the task, the excerpt shows the sentences from that
/// passage on instead of the opening.
pub fn excerpt_at(parts: &[Part<'_>], stems: &TaskStems, chars: usize, focus: Option<usize>) -> String {
    // The whole turn's length, counted without building it: most candidate turns of a long
    // chat are far longer than their room.
    let whole_chars = parts.iter().map(|p| p.prefix.chars().count() + p.text.trim().chars().count()).sum::<usize>()
        + parts.len().saturating_sub(1);
    if whole_chars <= chars {
        return join_whole(parts);
    }
    let read: Vec<Arc<Analysis>> = parts.iter().map(|p| analysis(p.text, &stems.stemmer)).collect();
    let sentences: Vec<(usize, &str)> = read
        .iter()
        .enumerate()
        .flat_map(|(p, a)| a.spans.iter().map(move |&(from, to)| (p, &parts[p].text[from..to])))
        .collect();
    let hits: Vec<usize> = read.iter().flat_map(|a| stems.shared(a)).collect();
    if hits.iter().all(|h| *h == 0) {
        return match focus.and_then(|f| focused_sentence(parts, &read, f)) {
            Some(first) => {
                let mut chosen = BTreeSet::new();
                let mut used = 0;
                for (i, (_, s)) in sentences.iter().enumerate().skip(first) {
                    let len = s.chars().count();
                    if !chosen.is_empty() && used + len > chars {
                        break;
                    }
                    used += len + 1;
                    chosen.insert(i);
                }
                render(parts, &sentences, &chosen, chars)
            }
            None => opening(&join_whole(parts), chars),
        };
    }
    let mut order: Vec<usize> = (0..sentences.len()).collect();
    order.sort_by(|a, b| hits[*b].cmp(&hits[*a]).then(a.cmp(b)));
    let mut chosen = BTreeSet::new();
    let mut used = 0;
    for i in order {
        let len = sentences[i].1.chars().count();
        if hits[i] == 0 || (!chosen.is_empty() && used + len > chars) {
            continue;
        }
        used += len + 1;
        chosen.insert(i);
    }
    render(parts, &sentences, &chosen, chars)
}

/// The index (over every part's sentences) of the sentence holding char `focus` of the turn's
/// text (see [`excerpt_at`]), or the next one; None when `focus` lies beyond the text.
fn focused_sentence(parts: &[Part<'_>], read: &[Arc<Analysis>], focus: usize) -> Option<usize> {
    let mut base = 0;
    let mut before = 0;
    for (p, part) in parts.iter().enumerate() {
        let (prefix, len) = (part.prefix.chars().count(), part.text.chars().count());
        if focus < base + prefix + len {
            let at = focus.saturating_sub(base + prefix);
            let byte = part.text.char_indices().nth(at).map_or(part.text.len(), |(b, _)| b);
            let within = read[p].spans.iter().position(|&(_, to)| to > byte)?;
            return Some(before + within);
        }
        base += prefix + len + 1;
        before += read[p].spans.len();
    }
    None
}

/// The chosen sentences in order, each part's prefix before its first one, "…" for gaps.
fn render(parts: &[Part<'_>], sentences: &[(usize, &str)], chosen: &BTreeSet<usize>, chars: usize) -> String {
    let mut out = String::new();
    let mut last: Option<usize> = None;
    let mut part_open: Option<usize> = None;
    for &i in chosen {
        let (p, s) = sentences[i];
        let gap = match last {
            None => i > 0,
            Some(l) => i > l + 1,
        };
        if !out.is_empty() {
            out.push(' ');
        }
        if part_open != Some(p) {
            out.push_str(parts[p].prefix);
            part_open = Some(p);
        }
        if gap {
            out.push_str(ELLIPSIS);
            out.push(' ');
        }
        // one sentence longer than the room is cut like an opening
        if chosen.len() == 1 && s.chars().count() > chars {
            out.push_str(&opening(s, chars));
        } else {
            out.push_str(s);
        }
        last = Some(i);
    }
    if last.is_some_and(|l| l + 1 < sentences.len()) && !out.ends_with(ELLIPSIS) {
        out.push(' ');
        out.push_str(ELLIPSIS);
    }
    out
}

/// Every part with its prefix, on one line.
fn join_whole(parts: &[Part<'_>]) -> String {
    parts.iter().map(|p| format!("{}{}", p.prefix, p.text.trim())).collect::<Vec<_>>().join(" ")
}

/// The first `chars` chars, cut back to a word boundary when one is near, ending in "…".
fn opening(text: &str, chars: usize) -> String {
    let cut: String = text.chars().take(chars).collect();
    let cut = match cut.rfind(char::is_whitespace) {
        Some(at) if at > cut.len() / 2 => &cut[..at],
        _ => cut.as_str(),
    };
    format!("{} {ELLIPSIS}", cut.trim_end())
}

/// The text's sentences: split after ".", "!" or "?" followed by a space, at newlines, and
/// around bracketed asides ("[shares a photo: …]"), which are sentences of their own.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    // Peeking rather than collecting the chars first: a 4 KB answer would cost a 64 KB buffer
    // for every excerpt of every candidate.
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let end_here = match c {
            '.' | '!' | '?' => next.is_none_or(char::is_whitespace),
            '\n' | ']' => true,
            _ => false,
        };
        let open_here = c == '[' && at > start;
        if open_here {
            push_trimmed(&mut out, &text[start..at]);
            start = at;
        }
        if end_here {
            let end = at + c.len_utf8();
            push_trimmed(&mut out, &text[start..end]);
            start = end;
        }
    }
    push_trimmed(&mut out, &text[start..]);
    out
}

fn push_trimmed<'a>(out: &mut Vec<&'a str>, s: &'a str) {
    let s = s.trim();
    if !s.is_empty() {
        out.push(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one<'a>(prefix: &'a str, text: &'a str) -> Vec<Part<'a>> {
        vec![Part { prefix, text }]
    }

    #[test]
    fn a_kept_analysis_holds_the_sentences_and_gives_the_same_excerpt() {
        let text = "Kept-analysis check: the migration to Postgres 16 finished on Tuesday. Nothing else \
                    changed in the cluster.\nThe replicas caught up [graph: lag over time] within minutes!";
        let stems = TaskStems::new("When did the Postgres migration finish?");
        let read = Analysis::of(text, &stems.stemmer);
        let spans: Vec<&str> = read.spans.iter().map(|&(from, to)| &text[from..to]).collect();
        assert_eq!(spans, sentences(text));
        assert!(read.stems.windows(2).all(|w| w[0].0 < w[1].0), "stems sorted and distinct");
        assert!(read.stems.iter().all(|(k, _)| read.holding(k).windows(2).all(|w| w[0] < w[1])), "sentences ascending");
        assert!(read.holding(&memo_key("absent")).is_empty());
        assert_eq!(stems.shared(&read), [3, 0, 0, 0, 0]);
        let first = excerpt(&one("", text), &stems, 60);
        assert!(analyses().get(&memo_key(text)).is_some(), "kept under the text's key");
        assert_eq!(excerpt(&one("", text), &stems, 60), first);
        assert_eq!(first, "Kept-analysis check: the migration to Postgres 16 finished …");
        forget_texts();
        assert!(analyses().get(&memo_key(text)).is_none(), "gone after an erasure");
    }

    #[test]
    fn short_turns_stay_whole() {
        let stems = TaskStems::new("what pottery did she make");
        assert_eq!(excerpt(&one("Mel: ", "I made a bowl."), &stems, 150), "Mel: I made a bowl.");
    }

    #[test]
    fn picks_the_sentences_sharing_the_task_words_in_order() {
        let text = "Hey, good to see you! Things have been busy at work and at home. Last week I signed up for a \
                    pottery class and made my first bowls. It was so relaxing. Anyway, how are the kids doing these days?";
        let stems = TaskStems::new("What did Melanie make in her pottery class?");
        let got = excerpt(&one("Melanie: ", text), &stems, 90);
        assert_eq!(got, "Melanie: … Last week I signed up for a pottery class and made my first bowls. …");
    }

    #[test]
    fn stems_match_inflections_and_gaps_are_marked() {
        let text = "We went camping in the mountains. The weather was awful all weekend long, rain and wind. \
                    The kids loved hiking the trails though.";
        let stems = TaskStems::new("Where has the family camped and hiked?");
        let got = excerpt(&one("", text), &stems, 80);
        assert_eq!(got, "We went camping in the mountains. … The kids loved hiking the trails though.");
    }

    #[test]
    fn no_shared_word_gives_the_opening() {
        let text = "A long message about nothing in particular that goes on and on without any of the words at all.";
        let got = excerpt(&one("x: ", text), &TaskStems::new("database migration"), 40);
        assert!(got.starts_with("x: A long message about"), "{got}");
        assert!(got.ends_with('…'));
        assert!(got.chars().count() <= 48, "{got}");
    }

    #[test]
    fn photo_captions_are_sentences_and_prefixes_follow_their_parts() {
        let parts = vec![
            Part {
                prefix: "user: ",
                text: "Look at this! [shares a photo: a sunset over a lake] I painted it last year.",
            },
            Part { prefix: "assistant: ", text: "That is lovely. What kind of paint do you use for sunsets?" },
        ];
        let stems = TaskStems::new("what did she paint");
        let got = excerpt(&parts, &stems, 40);
        assert_eq!(got, "user: … I painted it last year. …");
        let got = excerpt(&parts, &stems, 80);
        assert_eq!(got, "user: … I painted it last year. assistant: … What kind of paint do you use for sunsets?");
    }

    #[test]
    fn a_focus_shows_the_passage_that_found_the_turn_when_no_word_is_shared() {
        let text = "Boil the pasta for nine minutes. Keep some water. Big news: Ana marries in Lisbon in June. \
            The oven runs hot. Spices sit on the shelf.";
        let prefix = "assistant: ";
        let focus = prefix.chars().count() + text.find("Big news").unwrap();
        let got = excerpt_at(&one(prefix, text), &TaskStems::new("wedding city"), 40, Some(focus));
        assert!(got.starts_with("assistant: … Big news: Ana marries in Lisbon"), "{got}");
        assert!(got.ends_with('…'), "{got}");
        // Without a focus, the opening; with task words, the sentences that share them.
        assert!(excerpt_at(&one(prefix, text), &TaskStems::new("wedding city"), 40, None).contains("Boil"));
        let worded = excerpt_at(&one(prefix, text), &TaskStems::new("is my oven hot?"), 40, Some(focus));
        assert!(worded.contains("The oven runs hot.") && !worded.contains("Lisbon"), "{worded}");
        // A focus beyond the text falls back to the opening.
        assert!(excerpt_at(&one(prefix, text), &TaskStems::new("wedding city"), 40, Some(10_000)).contains("Boil"));
    }
}
