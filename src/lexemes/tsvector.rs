//! A `tsvector` the server worked out, kept in Postgres' binary form and bound as such.
//!
//! Sent as text (`$n::text::tsvector`), Postgres parses it (`tsvectorin`: quotes, positions, a
//! sort); sent in the binary form, it only reads it (`tsvectorrecv`). The form, the one
//! `tsvectorsend` writes: the number of lexemes (int4), then each lexeme's bytes and a NUL, the
//! number of its positions (int2) and each position (int2, the weight in the top two bits:
//! always D, zero, here). Lexemes are in Postgres' order (byte order, a prefix first), each
//! with its positions ascending; anything else `tsvectorrecv` would sort or refuse.

use std::fmt;

use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::types::Oid;
use sqlx::postgres::{PgArgumentBuffer, PgHasArrayType, PgTypeInfo};
use sqlx::{Encode, Postgres, Type};

use super::MAX_POSITIONS;

/// `tsvector` and `tsvector[]`: built-in types, whose ids never change.
const TSVECTOR: Oid = Oid(3614);
const TSVECTOR_ARRAY: Oid = Oid(3643);

/// A `tsvector` in its binary form (see the module).
#[derive(Clone, PartialEq, Eq)]
pub struct Tsvector(Vec<u8>);

impl Tsvector {
    /// The `tsvector` of `entries`: (lexeme, position) pairs sorted by lexeme then position,
    /// positions at most 16,383, lexemes without NUL. Each distinct lexeme becomes one entry.
    /// None when a lexeme has more positions than Postgres keeps (it drops the rest: left to it).
    pub(super) fn of_sorted<L: AsRef<str>>(entries: &[(L, u16)]) -> Option<Self> {
        let mut out = Vec::with_capacity(4 + entries.len() * 10);
        out.extend_from_slice(&[0; 4]);
        let mut lexemes: i32 = 0;
        let mut i = 0;
        while i < entries.len() {
            let lexeme = entries[i].0.as_ref();
            let n = entries[i..].iter().take_while(|(l, _)| l.as_ref() == lexeme).count();
            if n > MAX_POSITIONS {
                return None;
            }
            out.extend_from_slice(lexeme.as_bytes());
            out.push(0);
            out.extend_from_slice(&(n as u16).to_be_bytes());
            for (_, p) in &entries[i..i + n] {
                out.extend_from_slice(&p.to_be_bytes());
            }
            lexemes += 1;
            i += n;
        }
        out[..4].copy_from_slice(&lexemes.to_be_bytes());
        Some(Tsvector(out))
    }
}

/// The next lexeme of the binary form at `rest` and its positions (two bytes each); moves `rest`
/// past them. None at a malformed entry (never one [`Tsvector::of_sorted`] wrote).
fn next_entry<'a>(rest: &mut &'a [u8]) -> Option<(&'a str, &'a [u8])> {
    let end = rest.iter().position(|b| *b == 0)?;
    let lexeme = std::str::from_utf8(&rest[..end]).ok()?;
    let n = usize::from(u16::from_be_bytes([*rest.get(end + 1)?, *rest.get(end + 2)?]));
    let positions = rest.get(end + 3..end + 3 + 2 * n)?;
    *rest = &rest[end + 3 + 2 * n..];
    Some((lexeme, positions))
}

/// The text form, as `tsvector::text` prints it: `'lexeme':1,4 'other':2`.
impl fmt::Display for Tsvector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.0.get(..4).and_then(|b| b.try_into().ok()).map(i32::from_be_bytes).ok_or(fmt::Error)?;
        let mut rest = &self.0[4..];
        for k in 0..count {
            let (lexeme, positions) = next_entry(&mut rest).ok_or(fmt::Error)?;
            if k > 0 {
                f.write_str(" ")?;
            }
            f.write_str("'")?;
            for c in lexeme.chars() {
                if c == '\'' || c == '\\' {
                    write!(f, "{c}")?;
                }
                write!(f, "{c}")?;
            }
            f.write_str("'")?;
            for (j, p) in positions.chunks_exact(2).enumerate() {
                write!(f, "{}{}", if j == 0 { ':' } else { ',' }, u16::from_be_bytes([p[0], p[1]]))?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Tsvector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tsvector({self})")
    }
}

impl Type<Postgres> for Tsvector {
    fn type_info() -> PgTypeInfo {
        PgTypeInfo::with_oid(TSVECTOR)
    }
}

impl PgHasArrayType for Tsvector {
    fn array_type_info() -> PgTypeInfo {
        PgTypeInfo::with_oid(TSVECTOR_ARRAY)
    }
}

impl Encode<'_, Postgres> for Tsvector {
    fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
        buf.extend_from_slice(&self.0);
        Ok(IsNull::No)
    }

    fn size_hint(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binary_form_is_what_tsvectorsend_writes() {
        let t = Tsvector::of_sorted(&[("fat", 2), ("rat", 3), ("rat", 7)]).unwrap();
        let mut want = vec![0, 0, 0, 2];
        want.extend_from_slice(b"fat\0\x00\x01\x00\x02");
        want.extend_from_slice(b"rat\0\x00\x02\x00\x03\x00\x07");
        assert_eq!(t.0, want);
        assert_eq!(t.to_string(), "'fat':2 'rat':3,7");
    }

    #[test]
    fn no_lexeme_is_an_empty_tsvector() {
        let t = Tsvector::of_sorted::<&str>(&[]).unwrap();
        assert_eq!(t.0, [0, 0, 0, 0]);
        assert_eq!(t.to_string(), "");
    }

    #[test]
    fn quotes_and_backslashes_are_doubled_in_the_text_form() {
        assert_eq!(Tsvector::of_sorted(&[("a\\b", 2), ("it's", 1)]).unwrap().to_string(), "'a\\\\b':2 'it''s':1");
    }
}
