//! Large subjects' lexemes indexed in process, so a context call's two BM25 lanes are ranked by
//! the server before the call instead of by Postgres in it.
//!
//! On a large subject a task word held by hundreds of turns and memories made Postgres visit each
//! of those rows for its length and rank them all, about 7 ms of a 100k-memory subject's call
//! for one such word. The index holds, per source, each row's length, what its visibility at an
//! instant depends on, and the rows holding each lexeme, so ranking a lane reads only the rows
//! holding a task term. It is kept under the subject's state (`mnemo_lexical_state`: memory
//! version, latest seq, latest episode id). The call sends the lanes with that state and the
//! task's lexemes (`lexemes::english`); `mnemo_context` uses them only when the state is the
//! subject's and the lexemes are its own; otherwise it returns the lanes' hits, which the server
//! ranks with the same arithmetic ([`bm25`]) before calling again, so the call's rows never
//! depend on the index. A call that finds the index missing or of another state has
//! it brought up to date in the background (one refresh per subject at a time): only what
//! changed comes when the memories are unchanged or only episodes were added. A call on a
//! subject this server wrote turns of since its index was read brings the index up to date
//! first, when only turns were added (`LexicalCache::for_call`): an agent's turn and its next
//! call then meet a current index. The turns are kept as a base shared between the indexes of
//! successive states and a tail of the recent ones, so adding turns copies only the tail.
//!
//! The index holds lexemes and ids, no content; it lives in this process only and is never
//! logged.

pub mod bm25;
mod cache;
mod index;
mod postings;

pub use cache::{Counts, LexicalCache, DEFAULT_BYTES, INDEX_FROM_SEQ};
pub use index::{Builder, Index};
