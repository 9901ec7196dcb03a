//! canonical-v1: the byte-exact JSON text that receipt signatures cover.
//!
//! It reproduces Python's
//! `json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`
//! so receipts signed by the Python implementation verify here and vice versa.

use std::fmt::Write as _;

use serde_json::{Number, Value};
use sha2::{Digest, Sha256};

/// Serialises `value` exactly as Python's `json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`.
///
/// Non-finite floats cannot occur: `serde_json::Number` refuses NaN and ±Infinity (and `json!(f64::NAN)` is `null`),
/// so every float here is finite. Python would emit `NaN`/`Infinity`, which is not JSON; mnemo keeps scores finite.
pub fn canonical_v1(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Sort explicitly: if any crate in the build enables serde_json's `preserve_order`, `Map` keeps insertion
            // order instead of being a BTreeMap. `str` ordering is by UTF-8 bytes, which equals code-point order and
            // therefore Python's `sorted()` on str (unlike UTF-16 order, astral characters sort after U+FFFF).
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

fn write_number(out: &mut String, n: &Number) {
    match n.as_f64() {
        // Integer variants print as Python ints; only the f64 variant uses float repr (so 12.0 stays "12.0").
        Some(f) if n.is_f64() => write_float(out, f),
        _ => {
            let _ = write!(out, "{n}");
        }
    }
}

/// Python `json.dumps` string escaping with `ensure_ascii=False`: only `"`, `\` and C0 controls are escaped.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    let mut rest = s;
    // Copy unescaped runs in one go; every escaped character is ASCII so byte indices are char boundaries.
    while let Some(pos) = rest.bytes().position(|b| b == b'"' || b == b'\\' || b < 0x20) {
        out.push_str(&rest[..pos]);
        match rest.as_bytes()[pos] {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            // Python uses lower-case hex here (e.g. `\u001b`).
            other => {
                let _ = write!(out, "\\u{other:04x}");
            }
        }
        rest = &rest[pos + 1..];
    }
    out.push_str(rest);
    out.push('"');
}

/// Python `repr(float)` for a finite f64.
fn write_float(out: &mut String, f: f64) {
    if !f.is_finite() {
        // Unreachable through serde_json::Number; mirror serde_json, which serialises non-finite floats as null.
        out.push_str("null");
        return;
    }
    if f.is_sign_negative() {
        out.push('-');
    }
    if f == 0.0 {
        out.push_str("0.0");
        return;
    }
    match shortest_digits(f.abs()) {
        Some((digits, exp)) => push_python_repr(out, &digits, exp),
        // Not reachable: `{:e}` always has the parsed shape. Fall back to a round-trippable form rather than panic.
        None => {
            let _ = write!(out, "{:?}", f.abs());
        }
    }
}

/// Shortest round-trip decimal digits of a finite positive f64 (no leading/trailing zeros) and the decimal exponent
/// of the first digit, i.e. `f == d1.d2d3... * 10^exp`, chosen as Python's repr (David Gay's dtoa, mode 0) does:
/// the shortest digit string that reads back as `f`, and of those the closest to `f`, ties to even.
fn shortest_digits(f: f64) -> Option<(String, i32)> {
    let (digits, exp) = split_scientific(&format!("{f:e}"))?;
    // Rust's shortest `{:e}` breaks exact ties upward (1425502010969177.25 -> ...177.3) where Python picks the even
    // neighbour (...177.2). `{:.Ne}` is correctly rounded half-to-even, so at the same length it gives the closest
    // string; use it whenever it still reads back as `f` (near powers of two it may not, and then Rust's is right).
    let even = format!("{f:.prec$e}", prec = digits.len() - 1);
    if even.parse::<f64>().ok() == Some(f) {
        return split_scientific(&even);
    }
    Some((digits, exp))
}

/// Splits Rust's `{:e}` output (`d.ddde[-]x`) into its significant digits (trailing zeros dropped) and exponent.
fn split_scientific(sci: &str) -> Option<(String, i32)> {
    let (mantissa, exp) = sci.split_once('e')?;
    let exp: i32 = exp.parse().ok()?;
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let digits = digits.trim_end_matches('0');
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.starts_with('0') {
        return None;
    }
    Some((digits.to_owned(), exp))
}

/// Lays out digits the way CPython's `float_repr` does (format code 'r', with `.0` added to integral values):
/// scientific when the exponent is < -4 or >= 16, with a sign and at least two exponent digits.
fn push_python_repr(out: &mut String, digits: &str, exp: i32) {
    let (first, tail) = digits.split_at(1);
    if !(-4..16).contains(&exp) {
        out.push_str(first);
        if !tail.is_empty() {
            out.push('.');
            out.push_str(tail);
        }
        let sign = if exp < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exp.unsigned_abs());
    } else if exp < 0 {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(digits);
    } else {
        // exp is in 0..16 here, so the cast cannot truncate.
        let int_len = exp as usize + 1;
        if digits.len() > int_len {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        } else {
            out.push_str(digits);
            for _ in digits.len()..int_len {
                out.push('0');
            }
            out.push_str(".0");
        }
    }
}
