//! Template field types and the strict check of one value against its type.

/// Longest accepted value, in characters.
pub const MAX_VALUE_CHARS: usize = 4000;

/// What a field holds. Values always arrive as strings; the type says which strings are valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    /// Free text.
    Text,
    /// A decimal number: `-12`, `3.5` (no exponents, no `inf`/`NaN`).
    Number,
    /// A whole number.
    Integer,
    /// A calendar date `YYYY-MM-DD`.
    Date,
    /// An e-mail address `local@domain.tld`.
    Email,
    /// A phone number: digits with `+ - ( ) .` and spaces, 5-20 digits.
    Phone,
    /// An absolute http(s) URL.
    Url,
    /// `true` or `false`.
    Boolean,
    /// One of fixed options (case-insensitive; stored as listed).
    Enum(&'static [&'static str]),
}

impl FieldType {
    /// The wire name (`type` in the template document).
    pub fn as_str(&self) -> &'static str {
        match self {
            FieldType::Text => "text",
            FieldType::Number => "number",
            FieldType::Integer => "integer",
            FieldType::Date => "date",
            FieldType::Email => "email",
            FieldType::Phone => "phone",
            FieldType::Url => "url",
            FieldType::Boolean => "boolean",
            FieldType::Enum(_) => "enum",
        }
    }

    /// Checks a trimmed, non-empty value; Ok is the value as stored, Err is (error kind, message).
    pub fn check(&self, v: &str) -> Result<String, (&'static str, String)> {
        let bad = |kind: &'static str, msg: &str| Err((kind, msg.to_string()));
        match self {
            FieldType::Text => Ok(v.to_string()),
            FieldType::Number if is_decimal(v) => Ok(v.to_string()),
            FieldType::Number => bad("number_parsing", "must be a decimal number such as 42 or 3.5"),
            FieldType::Integer if is_integer(v) => Ok(v.to_string()),
            FieldType::Integer => bad("int_parsing", "must be a whole number"),
            FieldType::Date => match chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d") {
                Ok(d) if d.format("%Y-%m-%d").to_string() == v => Ok(v.to_string()),
                _ => bad("date_parsing", "must be a calendar date YYYY-MM-DD"),
            },
            FieldType::Email if is_email(v) => Ok(v.to_string()),
            FieldType::Email => bad("email_parsing", "must be an e-mail address such as name@example.com"),
            FieldType::Phone if is_phone(v) => Ok(v.to_string()),
            FieldType::Phone => bad("phone_parsing", "must be a phone number (5-20 digits, + - ( ) . and spaces)"),
            FieldType::Url if is_url(v) => Ok(v.to_string()),
            FieldType::Url => bad("url_parsing", "must be an absolute http:// or https:// URL"),
            FieldType::Boolean => match v.to_ascii_lowercase().as_str() {
                b @ ("true" | "false") => Ok(b.to_string()),
                _ => bad("bool_parsing", "must be true or false"),
            },
            FieldType::Enum(options) => match options.iter().find(|o| o.eq_ignore_ascii_case(v)) {
                Some(o) => Ok((*o).to_string()),
                None => Err(("enum", format!("must be one of: {}", options.join(", ")))),
            },
        }
    }
}

fn is_integer(v: &str) -> bool {
    let digits = v.strip_prefix('-').unwrap_or(v);
    !digits.is_empty() && digits.len() <= 18 && digits.chars().all(|c| c.is_ascii_digit())
}

fn is_decimal(v: &str) -> bool {
    match v.split_once('.') {
        Some((whole, frac)) => {
            is_integer(whole) && !frac.is_empty() && frac.len() <= 18 && frac.chars().all(|c| c.is_ascii_digit())
        }
        None => is_integer(v),
    }
}

fn is_email(v: &str) -> bool {
    let Some((local, domain)) = v.split_once('@') else { return false };
    let labels: Vec<&str> = domain.split('.').collect();
    v.len() <= 254
        && !local.is_empty()
        && local.len() <= 64
        && !local.chars().any(|c| c.is_whitespace() || c.is_control() || c == '@' || c == '<' || c == '>')
        && labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_alphanumeric() || c == '-')
        })
}

fn is_phone(v: &str) -> bool {
    let digits = v.chars().filter(char::is_ascii_digit).count();
    let allowed = v.chars().all(|c| c.is_ascii_digit() || " +-().".contains(c));
    let plus_ok = v.rfind('+').is_none_or(|i| i == 0);
    allowed && plus_ok && (5..=20).contains(&digits)
}

fn is_url(v: &str) -> bool {
    let rest = v.strip_prefix("https://").or_else(|| v.strip_prefix("http://"));
    rest.is_some_and(|r| {
        let host = r.split(['/', '?', '#']).next().unwrap_or("");
        !host.is_empty() && !host.starts_with(':')
    }) && !v.chars().any(|c| c.is_whitespace() || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(t: FieldType, v: &str) -> String {
        t.check(v).unwrap_or_else(|e| panic!("{v:?} refused as {}: {e:?}", t.as_str()))
    }

    fn refused(t: FieldType, v: &str) -> &'static str {
        match t.check(v) {
            Ok(s) => panic!("{v:?} accepted as {} ({s})", t.as_str()),
            Err((kind, _)) => kind,
        }
    }

    #[test]
    fn numbers_are_plain_decimals() {
        for v in ["0", "42", "-7", "3.5", "-0.25"] {
            ok(FieldType::Number, v);
        }
        for v in ["1e5", "inf", "NaN", "1.", ".5", "1,5", "+3", "12 kg", "0x10"] {
            assert_eq!(refused(FieldType::Number, v), "number_parsing", "{v}");
        }
        ok(FieldType::Integer, "-12");
        assert_eq!(refused(FieldType::Integer, "1.0"), "int_parsing");
        assert_eq!(refused(FieldType::Integer, "9999999999999999999999"), "int_parsing");
    }

    #[test]
    fn dates_are_real_calendar_days() {
        ok(FieldType::Date, "2024-02-29");
        for v in ["2023-02-29", "2024-2-9", "02/03/2024", "2024-02-29T10:00:00Z", "tomorrow"] {
            assert_eq!(refused(FieldType::Date, v), "date_parsing", "{v}");
        }
    }

    #[test]
    fn emails_phones_and_urls() {
        ok(FieldType::Email, "dana.reyes+work@mail.example.com");
        for v in ["dana", "dana@", "@example.com", "dana@example", "da na@example.com", "a@b@c.com", "a@-x.com"] {
            assert_eq!(refused(FieldType::Email, v), "email_parsing", "{v}");
        }
        ok(FieldType::Phone, "+47 22 33 44 55");
        ok(FieldType::Phone, "(555) 010-9999");
        for v in ["1234", "call me", "47+22334455", "+1 555 CALL NOW"] {
            assert_eq!(refused(FieldType::Phone, v), "phone_parsing", "{v}");
        }
        ok(FieldType::Url, "https://runbooks.example/deploy#step-2");
        for v in ["runbooks.example", "ftp://x.example", "https://", "https:// x", "javascript:alert(1)"] {
            assert_eq!(refused(FieldType::Url, v), "url_parsing", "{v}");
        }
    }

    #[test]
    fn booleans_and_enums_are_normalised() {
        assert_eq!(ok(FieldType::Boolean, "TRUE"), "true");
        assert_eq!(refused(FieldType::Boolean, "yes"), "bool_parsing");
        let status = FieldType::Enum(&["open", "resolved"]);
        assert_eq!(ok(status, "Resolved"), "resolved");
        assert_eq!(refused(status, "closed"), "enum");
    }
}
