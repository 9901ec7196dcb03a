//! How an index holds one source's rows: per lexeme, the rows holding it; and a subject's turns
//! as a base shared between successive indexes and a tail of the turns added since.

use std::collections::HashMap;
use std::sync::Arc;

use uuid::Uuid;

/// One source's rows and, per lexeme, the indexes of the rows holding it (ascending).
#[derive(Debug, Clone)]
pub(super) struct Postings<T> {
    pub(super) rows: Vec<T>,
    pub(super) holding: HashMap<Box<str>, Vec<u32>>,
}

impl<T> Default for Postings<T> {
    fn default() -> Self {
        Postings { rows: Vec::new(), holding: HashMap::new() }
    }
}

impl<T> Postings<T> {
    pub(super) fn add(&mut self, row: T, lexemes: Vec<String>) {
        let at = u32::try_from(self.rows.len()).unwrap_or(u32::MAX);
        self.rows.push(row);
        for l in lexemes {
            self.holding.entry(l.into_boxed_str()).or_default().push(at);
        }
    }

    pub(super) fn bytes(&self) -> usize {
        let postings: usize = self.holding.iter().map(|(l, v)| 48 + l.len() + 4 * v.len()).sum();
        self.rows.len() * std::mem::size_of::<T>() + postings
    }

    /// The BM25 hits of `terms` (at most [`MAX_TERMS`]) among the rows `visible` admits: (id,
    /// length, terms held as bits).
    pub(super) fn hits(
        &self,
        terms: &[String],
        visible: impl Fn(&T) -> bool,
        id_len: impl Fn(&T) -> (Uuid, u32),
    ) -> Vec<(Uuid, f64, u128)> {
        let lists: Vec<&[u32]> =
            terms.iter().map(|t| self.holding.get(t.as_str()).map(Vec::as_slice).unwrap_or_default()).collect();
        let mut at: HashMap<u32, usize> = HashMap::with_capacity(lists.iter().map(|l| l.len()).sum());
        let mut hits: Vec<(Uuid, f64, u128)> = Vec::new();
        for (t, list) in lists.iter().enumerate() {
            for &i in *list {
                let row = &self.rows[i as usize];
                if !visible(row) {
                    continue;
                }
                let h = *at.entry(i).or_insert_with(|| {
                    let (id, dl) = id_len(row);
                    hits.push((id, f64::from(dl), 0));
                    hits.len() - 1
                });
                hits[h].2 |= 1u128 << t;
            }
        }
        hits
    }
}

/// Turns after this many are folded into a new base (or after an eighth of the base, if more).
pub(super) const TAIL_ROWS: usize = 4096;

/// A subject's turns in seq order: a base shared by the indexes of later states, and the turns
/// written since it was made. A refresh with only new turns copies the tail, not the base.
#[derive(Debug)]
pub(super) struct Turns<T> {
    pub(super) base: Arc<Postings<T>>,
    pub(super) tail: Postings<T>,
}

impl<T: Clone> Turns<T> {
    /// Every turn, latest first.
    pub(super) fn latest_first(&self) -> impl Iterator<Item = &T> {
        self.tail.rows.iter().rev().chain(self.base.rows.iter().rev())
    }

    pub(super) fn len(&self) -> usize {
        self.base.rows.len() + self.tail.rows.len()
    }

    /// The tail folded into the base once it is long enough to slow the lanes down.
    pub(super) fn settled(self) -> Turns<T> {
        if self.base.rows.is_empty() {
            return Turns { base: Arc::new(self.tail), tail: Postings::default() };
        }
        if self.tail.rows.len() <= TAIL_ROWS.max(self.base.rows.len() / 8) {
            return self;
        }
        let mut base = (*self.base).clone();
        let offset = u32::try_from(base.rows.len()).unwrap_or(u32::MAX);
        base.rows.extend(self.tail.rows);
        for (lexeme, rows) in self.tail.holding {
            base.holding.entry(lexeme).or_default().extend(rows.into_iter().map(|r| r + offset));
        }
        Turns { base: Arc::new(base), tail: Postings::default() }
    }
}
