//! canonical-v1: the byte-exact JSON text that receipt signatures cover.
//!
//! It reproduces Python's
//! `json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`
//! so receipts signed by the Python implementation verify here and vice versa. The same renderer
//! also gives Python's default `json.dumps(v, sort_keys=True)` text ([`python_sorted`]), which
//! Statewave's backup checksum covers.

use std::fmt::Write as _;

use serde_json::{Number, Value};
use sha2::{Digest, Sha256};

/// Serialises `value` exactly as Python's `json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`.
///
/// Non-finite floats cannot occur: `serde_json::Number` refuses NaN and ±Infinity (and `json!(f64::NAN)` is `null`),
/// so every float here is finite. Python would emit `NaN`/`Infinity`, which is not JSON; mnemo keeps scores finite.
pub fn canonical_v1(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, &COMPACT);
    out
}

/// Serialises `value` exactly as Python's `json.dumps(value, sort_keys=True)` with every other option at its
/// default: `", "` and `": "` separators and `ensure_ascii=True` (every code point outside U+0020-U+007E is a
/// lower-case `\uXXXX` escape, astral ones as a UTF-16 surrogate pair), so the text is pure ASCII.
pub fn python_sorted(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, &PYTHON_DEFAULT);
    out
}

/// Separators and escaping of one `json.dumps` configuration.
struct Style {
    item_sep: &'static str,
    key_sep: &'static str,
    ensure_ascii: bool,
}

const COMPACT: Style = Style { item_sep: ",", key_sep: ":", ensure_ascii: false };
const PYTHON_DEFAULT: Style = Style { item_sep: ", ", key_sep: ": ", ensure_ascii: true };

/// Reads stored receipt or certificate text back for verification or replay.
///
/// Every float must come back bit for bit, or the canonical text and its signature change:
/// serde_json's `float_roundtrip` feature (on in Cargo.toml) reads floats correctly rounded,
/// which the tests below hold it to (Python's canonical cases, random canonical documents).
pub fn parse_stored(text: &str) -> anyhow::Result<Value> {
    Ok(serde_json::from_str(text)?)
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn write_value(out: &mut String, value: &Value, style: &Style) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s, style.ensure_ascii),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                out.push_str(if i == 0 { "" } else { style.item_sep });
                write_value(out, item, style);
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
                out.push_str(if i == 0 { "" } else { style.item_sep });
                write_string(out, key, style.ensure_ascii);
                out.push_str(style.key_sep);
                write_value(out, item, style);
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

/// Python `json.dumps` string escaping: with `ensure_ascii=False` only `"`, `\` and C0 controls are escaped;
/// with `ensure_ascii=True` also DEL and every non-ASCII code point.
fn write_string(out: &mut String, s: &str, ensure_ascii: bool) {
    if ensure_ascii && s.chars().any(|c| c == '\u{7f}' || !c.is_ascii()) {
        return write_ascii_string(out, s);
    }
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

/// `ensure_ascii=True` escaping, one code point at a time (only for strings that need it).
fn write_ascii_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const CASES: &str = include_str!("../../tests/fixtures/receipts/canonical_cases.json");

    fn float(f: f64) -> String {
        canonical_v1(&Value::from(f))
    }

    #[test]
    fn escapes_match_python() {
        let s = "q\" b\\ n\n r\r t\t b\u{8} f\u{c} nul\u{0} soh\u{1} esc\u{1b} us\u{1f}";
        let expected = r#""q\" b\\ n\n r\r t\t b\b f\f nul\u0000 soh\u0001 esc\u001b us\u001f""#;
        assert_eq!(canonical_v1(&json!(s)), expected);
        // Python leaves these literal with ensure_ascii=False.
        assert_eq!(
            canonical_v1(&json!("a/b\u{7f}\u{2028}\u{2029}é👋\u{e000}")),
            "\"a/b\u{7f}\u{2028}\u{2029}é👋\u{e000}\""
        );
    }

    #[test]
    fn keys_sort_by_code_point() {
        let value = json!({"B": 1, "a": 2, "é": 3, "Z": 4, "aa": 5, "a_b": 6, "\u{1F600}": 7, "\u{FFFF}": 8,
            "\u{E000}": 9, "": 10, "_": 11});
        let expected =
            "{\"\":10,\"B\":1,\"Z\":4,\"_\":11,\"a\":2,\"a_b\":6,\"aa\":5,\"é\":3,\"\u{E000}\":9,\"\u{FFFF}\":8,\
                        \"\u{1F600}\":7}";
        assert_eq!(canonical_v1(&value), expected);
    }

    #[test]
    fn compact_structure() {
        let value = json!({"b": [1, 2.5, null, true, false, [], {}], "a": {"y": "", "x": -3}});
        assert_eq!(canonical_v1(&value), r#"{"a":{"x":-3,"y":""},"b":[1,2.5,null,true,false,[],{}]}"#);
    }

    #[test]
    fn float_repr_rules() {
        let table: &[(f64, &str)] = &[
            (1.0, "1.0"),
            (12.0, "12.0"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1.5e-7, "1.5e-07"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1234567890123456.0, "1234567890123456.0"),
            (123456789012345.0, "123456789012345.0"),
            (1e22, "1e+22"),
            (1e100, "1e+100"),
            (123456789.123, "123456789.123"),
            (17.345678, "17.345678"),
            (0.30000000000000004, "0.30000000000000004"),
            (-1.5, "-1.5"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (2.0f64.powi(60), "1.152921504606847e+18"),
            // Exact ties: Python rounds the last digit to even, Rust's shortest `{:e}` rounds up.
            (5702008043876709.0 / 4.0, "1425502010969177.2"),
            (421823707942549.0 / 16.0, "26363981746409.312"),
        ];
        for (f, expected) in table {
            assert_eq!(float(*f), *expected, "{f:e}");
        }
        assert_eq!(float(f64::NAN), "null");
    }

    #[test]
    fn integers_stay_integers() {
        assert_eq!(canonical_v1(&json!(12)), "12");
        assert_eq!(canonical_v1(&json!(12.0)), "12.0");
        assert_eq!(canonical_v1(&json!(u64::MAX)), "18446744073709551615");
        assert_eq!(canonical_v1(&json!(i64::MIN)), "-9223372036854775808");
    }

    #[test]
    fn serde_json_keeps_negative_zero_and_1e22_as_f64() {
        for (text, bits) in [("-0.0", (-0.0f64).to_bits()), ("1e+22", 1e22f64.to_bits())] {
            let value: Value = serde_json::from_str(text).unwrap();
            assert!(value.as_number().unwrap().is_f64());
            assert_eq!(value.as_f64().unwrap().to_bits(), bits);
            assert_eq!(canonical_v1(&value), text);
            assert_eq!(canonical_v1(&serde_json::to_value(f64::from_bits(bits)).unwrap()), text);
        }
    }

    #[test]
    fn python_canonical_cases_match_byte_for_byte() {
        let cases = parse_stored(CASES).unwrap();
        let cases = cases.as_array().unwrap();
        assert!(cases.len() > 300);
        for case in cases {
            let expected = case["canonical"].as_str().unwrap();
            assert_eq!(canonical_v1(&case["input"]), expected);
            assert_eq!(canonical_v1(&parse_stored(expected).unwrap()), expected);
        }
    }

    #[test]
    fn parse_stored_reads_floats_correctly_rounded() {
        // serde_json without `float_roundtrip` reads this 17-digit score one ulp off.
        let text = "0.9838114922314801";
        assert_eq!(parse_stored(text).unwrap().as_f64().unwrap().to_bits(), 0.9838114922314801f64.to_bits());
        assert_eq!(canonical_v1(&parse_stored(text).unwrap()), text);
    }

    #[test]
    fn parse_stored_accepts_json() {
        let text = " {\"a\" : [1, -0, 1.5E+3, -2e-3, 18446744073709551616, true, false, null],\n\t\"s\": \
                    \"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\udc4b\", \"k\": {\"k\": 1, \"k\": 2}} ";
        let value = parse_stored(text).unwrap();
        assert_eq!(
            canonical_v1(&value),
            "{\"a\":[1,-0.0,1500.0,-0.002,1.8446744073709552e+19,true,false,null],\"k\":{\"k\":2},\"s\":\"\\\"\\\\/\\b\\f\\n\\r\\té👋\"}"
        );
        // `-0` is a float, as serde_json reads it (canonical text never holds `-0`: it writes `-0.0`)
        assert!(value["a"][1].is_f64());
    }

    #[test]
    fn parse_stored_rejects_invalid_json() {
        let deep = "[".repeat(200) + &"]".repeat(200);
        for bad in [
            "",
            "01",
            "1.",
            ".5",
            "+1",
            "-",
            "1e",
            "NaN",
            "Infinity",
            "1e400",
            "[1,]",
            "{\"a\":1,}",
            "{a:1}",
            "[1 2]",
            "\"abc",
            "\"\u{1}\"",
            "\"\\x\"",
            "\"\\ud83d\"",
            "\"\\udc4b\"",
            "\"\\ud83dx\"",
            "\"\\u12g4\"",
            "tru",
            "1 2",
            &deep,
        ] {
            assert!(parse_stored(bad).is_err(), "{bad:?}");
        }
        let nested = "[".repeat(100) + &"]".repeat(100);
        assert!(parse_stored(&nested).is_ok());
    }

    #[test]
    fn sha256_hex_known_vector() {
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    /// Independent reference for Python's repr: the shortest correctly rounded (half-even) `{:.Ne}` that reads back,
    /// laid out with Rust's exact fixed-point formatting instead of digit splicing.
    fn reference_repr(f: f64) -> String {
        if f == 0.0 {
            return if f.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned();
        }
        let sci = (0..17).map(|p| format!("{f:.p$e}")).find(|s| s.parse::<f64>().unwrap() == f).unwrap();
        let (mantissa, exp) = sci.split_once('e').unwrap();
        let exp: i32 = exp.parse().unwrap();
        let sig_digits = mantissa.trim_start_matches('-').replace('.', "").len() as i32;
        if (-4..16).contains(&exp) {
            format!("{f:.prec$}", prec = (sig_digits - 1 - exp).max(1) as usize)
        } else {
            format!("{mantissa}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
        }
    }

    fn finite_f64() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<u64>().prop_map(f64::from_bits),
            -1.0f64..1.0,
            (1u64..1 << 54, -3i32..3).prop_map(|(m, e)| m as f64 * 2f64.powi(e)),
        ]
        .prop_filter("finite", |f| f.is_finite())
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            finite_f64().prop_map(Value::from),
            any::<String>().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(any::<String>(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn float_repr_round_trips_and_matches_reference(f in finite_f64()) {
            let out = float(f);
            prop_assert_eq!(out.parse::<f64>().unwrap().to_bits(), f.to_bits());
            prop_assert_eq!(parse_stored(&out).unwrap().as_f64().unwrap().to_bits(), f.to_bits());
            prop_assert_eq!(out, reference_repr(f));
        }

        #[test]
        fn string_order_is_code_point_order(a in any::<String>(), b in any::<String>()) {
            prop_assert_eq!(a.cmp(&b), a.chars().cmp(b.chars()));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn canonical_text_parses_back_to_the_same_canonical(value in arb_json()) {
            let text = canonical_v1(&value);
            let reparsed = parse_stored(&text).unwrap();
            prop_assert_eq!(&reparsed, &value);
            prop_assert_eq!(canonical_v1(&reparsed), text);
        }
    }
}
