//! Exact cl100k_base token counting for context bundles.
//!
//! The BPE table is embedded in `tiktoken-rs` and parsed once on first use. Counting uses
//! `encode_ordinary`: stored text is data, so strings such as `<|endoftext|>` count as plain text.
//!
//! Fallback: if the tokenizer panics on pathological input, that count becomes the estimate
//! `ceil(bytes / 2)` (the table itself is built-in data: one that fails to load is a bug and
//! fails loudly, see [`crate::patterns`]). English averages about four bytes per token, so the
//! estimate overshoots typical text, and because `truncate` and the packer measure with this same
//! function, `count(bundle) <= max_tokens` still holds for every bundle they produce.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::LazyLock;

use tiktoken_rs::CoreBPE;

/// Parsed once.
static BPE: LazyLock<CoreBPE> =
    LazyLock::new(|| crate::patterns::built("cl100k_base table", tiktoken_rs::cl100k_base()));

/// Token count of `text` under cl100k_base (or the documented byte estimate when the tokenizer panics).
///
/// The text is counted line by line ([`seams`]) and the counts of short lines are memoised: the
/// packer prices every candidate line and then the whole bundle on every context call, a
/// subject's lines recur from call to call, and BPE encoding through the pre-tokenising regex was
/// the largest CPU cost of a call. The sum is exact, not an estimate: cl100k_base encodes each
/// piece its pre-tokenising regex cuts separately, and no piece can cross a seam (see [`seams`]),
/// so the pieces of the whole text are the pieces of its lines. Counting is a pure function of
/// the text, so the memo never changes a result.
pub fn count(text: &str) -> usize {
    let mut total = 0;
    let mut start = 0;
    for end in seams(text).chain(std::iter::once(text.len())) {
        total += count_line(&text[start..end]);
        start = end;
    }
    total
}

/// The byte offsets where `text` may be cut without changing its token count: just after a
/// newline that a letter, a digit or ASCII punctuation follows.
///
/// Why no pre-tokenised piece crosses such a seam: tiktoken-rs's cl100k_base pattern is
/// `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s`.
/// Only the punctuation form and the whitespace forms can hold a newline, and each ends at a
/// newline or at whitespace, so none reaches past the seam's newline into the letter, digit or
/// punctuation mark after it. Nor does what follows change where the piece before the seam ends:
/// a whitespace run ending in the seam's newline is one piece either way (`\s++$` when the line
/// stands alone; `\s*[\r\n]`, which backtracks to the run's last newline, when more follows),
/// and the lookahead `(?!\S)` is never reached for it. The pattern has no lookbehind, so the
/// pieces after the seam are those of the rest alone. The property test below checks the sum
/// against whole-text counts, so a tokenizer upgrade that broke this would fail it.
fn seams(text: &str) -> impl Iterator<Item = usize> + '_ {
    text.match_indices('\n').filter_map(move |(i, _)| {
        let next = text[i + 1..].chars().next()?;
        (next.is_alphanumeric() || next.is_ascii_punctuation()).then_some(i + 1)
    })
}

/// Token count of one line (memoised when short).
fn count_line(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    if text.len() > MEMO_MAX_LEN {
        return count_uncached(text);
    }
    let key = memo_key(text);
    if let Some(n) = memo().get(&key) {
        return n;
    }
    let n = count_uncached(text);
    memo().insert(key, n);
    n
}

/// Texts up to this many bytes are memoised (a rendered line shows at most ~150 chars of text).
const MEMO_MAX_LEN: usize = 1024;
/// Entries kept (bounds memory at about a MiB; the least useful go first, S3-FIFO).
const MEMO_MAX_ENTRIES: usize = 20_000;

/// Token counts of short texts by their [`memo_key`], shared by all threads.
fn memo() -> &'static quick_cache::sync::Cache<MemoKey, usize> {
    static MEMO: LazyLock<quick_cache::sync::Cache<MemoKey, usize>> =
        LazyLock::new(|| quick_cache::sync::Cache::new(MEMO_MAX_ENTRIES));
    &MEMO
}

/// The key of a text in a process-wide memo.
pub type MemoKey = [u8; 16];

/// A text's key in a process-wide memo: the first 128 bits of its SHA-256. Memos hold keys, not
/// text, so nothing of a subject's content stays in the server's memory after its request (an
/// erased subject leaves no line or word behind in a cache); a collision, which would be needed
/// for a memo to answer for the wrong text, is as unlikely as one of SHA-256 itself.
pub fn memo_key(text: &str) -> MemoKey {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(text.as_bytes());
    let mut key = [0u8; 16];
    key.copy_from_slice(&digest[..16]);
    key
}

fn count_uncached(text: &str) -> usize {
    match encode(text) {
        Some(tokens) => tokens.len(),
        None => estimate(text),
    }
}

/// The longest prefix of `text` (on a char boundary) whose token count is at most `max_tokens`.
pub fn truncate(text: &str, max_tokens: usize) -> String {
    if max_tokens == 0 || text.is_empty() {
        return String::new();
    }
    let Some(tokens) = encode(text) else {
        return truncate_estimate(text, max_tokens);
    };
    if tokens.len() <= max_tokens {
        return text.to_owned();
    }
    // Decoding a token prefix yields a byte prefix of `text`; it may end inside a multi-byte char.
    let mut end = decoded_len(&tokens[..max_tokens]).min(text.len());
    end = floor_char_boundary(text, end);
    // Re-tokenising a cut piece can take more tokens than the tokens it came from, so back off.
    while end > 0 && count(&text[..end]) > max_tokens {
        end = floor_char_boundary(text, end - 1);
    }
    text[..end].to_owned()
}

/// Encodes with the BPE, or `None` when it panicked (regex stack limits on huge input).
fn encode(text: &str) -> Option<Vec<tiktoken_rs::Rank>> {
    let bpe = &*BPE;
    catch_unwind(AssertUnwindSafe(|| bpe.encode_ordinary(text))).ok()
}

/// Byte length of the decoded tokens; 0 if decoding fails, which makes `truncate` start from empty.
fn decoded_len(tokens: &[tiktoken_rs::Rank]) -> usize {
    BPE.decode_bytes(tokens).map_or(0, |bytes| bytes.len())
}

/// The fallback estimate, `ceil(bytes / 2)`.
fn estimate(text: &str) -> usize {
    text.len().div_ceil(2)
}

/// Truncation consistent with `estimate`: at most `2 * max_tokens` bytes, on a char boundary.
fn truncate_estimate(text: &str, max_tokens: usize) -> String {
    let end = floor_char_boundary(text, max_tokens.saturating_mul(2).min(text.len()));
    text[..end].to_owned()
}

/// Largest char boundary `<= index` (stable replacement for the unstable `str::floor_char_boundary`).
fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut i = index.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn pinned_counts_match_tiktoken() {
        // Values observed with tiktoken-rs 0.12.1 (cl100k_base), identical to OpenAI's tiktoken.
        assert_eq!(count("hello world"), 2);
        assert_eq!(count("## Task\n"), 3);
        assert_eq!(count("## Task\n\n"), 3);
        assert_eq!(count("\n"), 1);
        assert_eq!(count("## About this user\n"), 5);
        assert_eq!(count("- [2026-03-02] I work at Initech\n"), 15);
        assert_eq!(count(""), 0);
    }

    #[test]
    fn memoised_counts_equal_fresh_counts() {
        let long = "word ".repeat(400);
        for t in ["hello world", "## Task\n", "- [2026-03-02] I work at Initech\n", long.as_str()] {
            assert_eq!(count(t), count_uncached(t));
            assert_eq!(count(t), count_uncached(t));
        }
    }

    #[test]
    fn counts_by_line_equal_whole_text_counts() {
        // Seams after newlines, and the places where none may be made: blank lines, indented and
        // whitespace-led lines, punctuation before a newline, CR LF, non-ASCII starts.
        let texts = [
            "## Task\nT\n\n## Recent interactions\n### Session s1 · 2026-01-01\n- [chat/message] hi\n",
            "a.\n\nb!\n\n\n- c?\n's\n'tis\n123\n4567\n",
            "x \n  y\n\t z\n \n w\n",
            "end.\r\nnext\r\n\r\n#h\n",
            "日本語\n漢字です。\nÜber\n😀 face\n—dash\n",
            "\n\nleading\n",
            "trailing spaces   \n   \n",
        ];
        for t in texts {
            assert_eq!(count(t), count_uncached(t), "{t:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn counts_by_line_equal_whole_text_counts_on_any_text(
            lines in proptest::collection::vec("[ \\t\\r\\na-zA-Z0-9.,!?'#\\-\\[\\]:·é日😀]{0,24}", 0..12),
        ) {
            let text = lines.join("\n");
            proptest::prop_assert_eq!(count(&text), count_uncached(&text));
        }
    }

    #[test]
    fn special_token_text_counts_as_ordinary_text() {
        assert!(count("<|endoftext|>") > 1);
    }

    #[test]
    fn bpe_is_loaded() {
        LazyLock::force(&BPE);
    }

    #[test]
    fn truncate_returns_whole_text_when_it_fits() {
        assert_eq!(truncate("hello world", 2), "hello world");
        assert_eq!(truncate("hello world", 50), "hello world");
        assert_eq!(truncate("hello world", 1), "hello");
        assert_eq!(truncate("hello world", 0), "");
        assert_eq!(truncate("", 5), "");
    }

    #[test]
    fn truncate_respects_budget_and_char_boundaries() {
        let text = "日本語のテキスト 😀😀 emoji and ümlauts — mixed ✓ content 漢字";
        let total = count(text);
        for max in 0..=total + 1 {
            let t = truncate(text, max);
            assert!(count(&t) <= max, "max {max}: {t:?}");
            assert!(text.starts_with(&t));
            if max >= total {
                assert_eq!(t, text);
            }
        }
    }

    #[test]
    fn truncate_makes_progress_on_multibyte_tokens() {
        // Each emoji spans several tokens; a budget covering one whole emoji must keep it.
        let one = count("😀");
        assert_eq!(truncate("😀😀", one), "😀");
        assert_eq!(truncate("😀😀", one - 1), "");
    }

    #[test]
    fn estimate_fallback_is_consistent() {
        assert_eq!(estimate("abc"), 2);
        assert_eq!(truncate_estimate("abcdef", 2), "abcd");
        assert_eq!(truncate_estimate("ééé", 1), "é");
        assert!(estimate(&truncate_estimate("😀😀😀", 3)) <= 3);
    }
}
