//! Timestamps on the wire: ISO-8601 UTC with microseconds and a `Z` suffix.

use chrono::{DateTime, Utc};
use serde::Serializer;

/// Formats a timestamp the way every response does.
pub fn format(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_micros_and_z() {
        let t = DateTime::parse_from_rfc3339("2026-03-02T10:00:00.5+00:00").unwrap().with_timezone(&Utc);
        assert_eq!(format(&t), "2026-03-02T10:00:00.500000Z");
        assert_eq!(isoformat(&t), "2026-03-02T10:00:00.500000+00:00");
        let whole = DateTime::parse_from_rfc3339("2026-03-02T10:00:00Z").unwrap().with_timezone(&Utc);
        assert_eq!(isoformat(&whole), "2026-03-02T10:00:00+00:00");
    }
}
