//! Reading stored JSON text exactly: every float correctly rounded, so a receipt or certificate
//! read back renders to the same canonical bytes its signature covers.

use anyhow::anyhow;
use serde_json::{Map, Number, Value};

/// Parses JSON text like `serde_json::from_str`, but reads every float correctly rounded (and `-0` as the int 0).
///
/// Plain serde_json (without its `float_roundtrip` feature) parses 17-significant-digit floats only approximately,
/// e.g. about 1 in 10 random scores in [0, 1) come back one ulp off, which changes canonical_v1 and breaks the
/// signature. Use this to read stored receipt text that will be verified. Integers outside i64/u64 become f64, as in
/// serde_json; nesting is limited to 128 levels.
pub fn parse_exact(text: &str) -> anyhow::Result<Value> {
    let mut parser = Parser { text, pos: 0 };
    parser.skip_ws();
    let value = parser.value(0)?;
    parser.skip_ws();
    if parser.pos != text.len() {
        return Err(parser.error("trailing characters"));
    }
    Ok(value)
}

/// Deepest nesting `parse_exact` accepts; bounds recursion like serde_json's own limit.
const MAX_DEPTH: usize = 128;

/// Recursive-descent JSON reader over `text` (RFC 8259 grammar, as serde_json accepts).
struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn error(&self, what: &str) -> anyhow::Error {
        anyhow!("invalid JSON: {what} at byte {}", self.pos)
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    /// Consumes `prefix` if the input continues with it.
    fn eat(&mut self, prefix: &str) -> bool {
        let found = self.text.as_bytes()[self.pos..].starts_with(prefix.as_bytes());
        if found {
            self.pos += prefix.len();
        }
        found
    }

    fn expect(&mut self, prefix: &str) -> anyhow::Result<()> {
        if self.eat(prefix) {
            Ok(())
        } else {
            Err(self.error(&format!("expected {prefix:?}")))
        }
    }

    fn value(&mut self, depth: usize) -> anyhow::Result<Value> {
        if depth > MAX_DEPTH {
            return Err(self.error("nesting too deep"));
        }
        match self.peek() {
            Some(b'{') => {
                let mut map = Map::new();
                self.list("{", "}", |p| {
                    let key = p.string()?;
                    p.skip_ws();
                    p.expect(":")?;
                    p.skip_ws();
                    // Duplicate keys: the last one wins, as in Python's json.loads and serde_json.
                    map.insert(key, p.value(depth + 1)?);
                    Ok(())
                })?;
                Ok(Value::Object(map))
            }
            Some(b'[') => {
                let mut items = Vec::new();
                self.list("[", "]", |p| p.value(depth + 1).map(|v| items.push(v)))?;
                Ok(Value::Array(items))
            }
            Some(b'"') => self.string().map(Value::String),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ if self.eat("true") => Ok(Value::Bool(true)),
            _ if self.eat("false") => Ok(Value::Bool(false)),
            _ if self.eat("null") => Ok(Value::Null),
            _ => Err(self.error("expected a value")),
        }
    }

    /// Reads `open item (, item)* close`, calling `item` with the parser positioned at each item.
    fn list(
        &mut self,
        open: &str,
        close: &str,
        mut item: impl FnMut(&mut Self) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        self.expect(open)?;
        self.skip_ws();
        if self.eat(close) {
            return Ok(());
        }
        loop {
            self.skip_ws();
            item(self)?;
            self.skip_ws();
            if self.eat(close) {
                return Ok(());
            }
            self.expect(",")?;
        }
    }

    fn string(&mut self) -> anyhow::Result<String> {
        self.expect("\"")?;
        let mut out = String::new();
        loop {
            let start = self.pos;
            while matches!(self.peek(), Some(b) if b != b'"' && b != b'\\' && b >= 0x20) {
                self.pos += 1;
            }
            // The scan stops only at ASCII bytes or the end, so both ends are char boundaries.
            out.push_str(&self.text[start..self.pos]);
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    out.push(self.escape()?);
                }
                Some(_) => return Err(self.error("control character in string")),
                None => return Err(self.error("unterminated string")),
            }
        }
    }

    fn escape(&mut self) -> anyhow::Result<char> {
        let byte = self.peek().ok_or_else(|| self.error("unterminated escape"))?;
        self.pos += 1;
        Ok(match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let mut code = self.hex4()?;
                if (0xD800..0xDC00).contains(&code) {
                    // A high surrogate must be followed by an escaped low surrogate; together they are one char.
                    self.expect("\\u")?;
                    let low = self.hex4()?;
                    if !(0xDC00..0xE000).contains(&low) {
                        return Err(self.error("unpaired surrogate"));
                    }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                }
                char::from_u32(code).ok_or_else(|| self.error("unpaired surrogate"))?
            }
            _ => return Err(self.error("invalid escape")),
        })
    }

    fn hex4(&mut self) -> anyhow::Result<u32> {
        let digits = self.text.get(self.pos..self.pos + 4).filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()));
        let code = digits.and_then(|d| u32::from_str_radix(d, 16).ok()).ok_or_else(|| self.error("bad \\u escape"))?;
        self.pos += 4;
        Ok(code)
    }

    fn number(&mut self) -> anyhow::Result<Value> {
        let start = self.pos;
        self.eat("-");
        // JSON forbids leading zeros, so "0" stands alone and anything else starts with 1-9.
        if !self.eat("0") && self.digits(b'1') == 0 {
            return Err(self.error("invalid number"));
        }
        let mut is_float = false;
        if self.eat(".") {
            is_float = true;
            self.require_digits()?;
        }
        if self.eat("e") || self.eat("E") {
            is_float = true;
            let _ = self.eat("+") || self.eat("-");
            self.require_digits()?;
        }
        let token = &self.text[start..self.pos];
        if !is_float {
            // Like Python, "-0" is the int 0 (serde_json would make it the float -0.0).
            if let Ok(n) = token.parse::<u64>() {
                return Ok(Value::from(n));
            }
            if let Ok(n) = token.parse::<i64>() {
                return Ok(Value::from(n));
            }
        }
        // Rust's str::parse::<f64> is correctly rounded for every input, which serde_json's default path is not.
        let float = token.parse::<f64>().map_err(|_| self.error("invalid number"))?;
        Number::from_f64(float).map(Value::Number).ok_or_else(|| self.error("number out of range"))
    }

    /// Consumes a run of digits whose first is at least `first`; returns how many.
    fn digits(&mut self, first: u8) -> usize {
        let start = self.pos;
        if matches!(self.peek(), Some(b) if (first..=b'9').contains(&b)) {
            self.pos += 1;
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.pos += 1;
            }
        }
        self.pos - start
    }

    fn require_digits(&mut self) -> anyhow::Result<()> {
        if self.digits(b'0') == 0 {
            return Err(self.error("expected digits"));
        }
        Ok(())
    }
}
