//! Timestamps on the wire: ISO-8601 UTC with microseconds and a `Z` suffix.

use std::sync::LazyLock;

use chrono::format::{Item, StrftimeItems};
use chrono::{DateTime, NaiveDateTime, Utc};
use serde::Serializer;

/// The wire format, parsed once: `DateTime::format` parses its pattern again on every call, and
/// a context response formats a few hundred timestamps.
static WIRE: LazyLock<Vec<Item<'static>>> =
    LazyLock::new(|| crate::patterns::built("timestamp format", StrftimeItems::new("%Y-%m-%dT%H:%M:%S%.6fZ").parse()));

/// Formats a timestamp the way every response does.
pub fn format(t: &DateTime<Utc>) -> String {
    t.format_with_items(WIRE.iter()).to_string()
}

/// Serde helper for `DateTime<Utc>` fields.
pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format(t))
}

/// Serde helper for `Option<DateTime<Utc>>` fields.
pub mod option {
    use super::*;

    /// Serialises `None` as null.
    pub fn serialize<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_str(&super::format(t)),
            None => s.serialize_none(),
        }
    }
}

/// Python `datetime.isoformat()` of a UTC value: `+00:00`, microseconds only when non-zero
/// (the format receipt bodies use, for byte compatibility with Statewave).
pub fn isoformat(t: &DateTime<Utc>) -> String {
    if t.timestamp_subsec_micros() == 0 {
        t.format("%Y-%m-%dT%H:%M:%S+00:00").to_string()
    } else {
        t.format("%Y-%m-%dT%H:%M:%S%.6f+00:00").to_string()
    }
}

/// Current time truncated to microseconds, the precision Postgres stores.
pub fn now_micros() -> DateTime<Utc> {
    truncate_micros(Utc::now())
}

/// Drops sub-microsecond precision so in-memory and stored values compare equal.
pub fn truncate_micros(t: DateTime<Utc>) -> DateTime<Utc> {
    let micros = t.timestamp_micros();
    DateTime::from_timestamp_micros(micros).unwrap_or(t)
}

/// Parses an ISO-8601 timestamp; naive values are UTC. Years outside 1..=9999 are refused
/// (Postgres cannot store every year chrono can parse).
pub fn parse_datetime(s: &str) -> Option<DateTime<Utc>> {
    use chrono::Datelike;
    parse_any_datetime(s).filter(|t| (1..=9999).contains(&t.year()))
}

fn parse_any_datetime(s: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M"] {
        if let Ok(n) = NaiveDateTime::parse_from_str(s, fmt) {
            return Some(n.and_utc());
        }
    }
    if let Ok(t) = DateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f%:z") {
        return Some(t.with_timezone(&Utc));
    }
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok().and_then(|d| d.and_hms_opt(0, 0, 0)).map(|n| n.and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetimes_parse_with_and_without_offset() {
        let a = parse_datetime("2026-03-02T10:00:00Z").unwrap();
        let b = parse_datetime("2026-03-02T10:00:00").unwrap();
        let c = parse_datetime("2026-03-02T12:00:00+02:00").unwrap();
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert!(parse_datetime("yesterday").is_none());
    }

    #[test]
    fn formats_with_micros_and_z() {
        let t = DateTime::parse_from_rfc3339("2026-03-02T10:00:00.5+00:00").unwrap().with_timezone(&Utc);
        assert_eq!(format(&t), "2026-03-02T10:00:00.500000Z");
        assert_eq!(isoformat(&t), "2026-03-02T10:00:00.500000+00:00");
        let whole = DateTime::parse_from_rfc3339("2026-03-02T10:00:00Z").unwrap().with_timezone(&Utc);
        assert_eq!(isoformat(&whole), "2026-03-02T10:00:00+00:00");
    }
}
