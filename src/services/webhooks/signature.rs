//! Webhook signatures: `X-Mnemo-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`.
//!
//! The MAC covers `"<t>.<raw body bytes>"` under the shared secret, so a receiver can check both
//! that the body is ours and unaltered and that the timestamp is fresh (replay protection).
//! Several `v1=` entries may appear (secret rotation); any one matching is enough.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The header carrying the signature.
pub const HEADER: &str = "X-Mnemo-Signature";

fn mac(secret: &[u8], timestamp: i64, body: &[u8]) -> Hmac<Sha256> {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut m = match Hmac::<Sha256>::new_from_slice(secret) {
        Ok(m) => m,
        Err(_) => unreachable!("HMAC takes keys of any length"),
    };
    m.update(timestamp.to_string().as_bytes());
    m.update(b".");
    m.update(body);
    m
}

/// The header value signing `body` at `timestamp`.
pub fn sign(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    format!("t={timestamp},v1={}", hex::encode(mac(secret, timestamp, body).finalize().into_bytes()))
}

/// Why a signature was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// No `t=` or no `v1=` part.
    Malformed,
    /// The timestamp is further from `now` than the tolerance.
    Stale,
    /// No `v1=` value matches.
    Mismatch,
}

/// Verifies a header value against the raw body, accepting timestamps within `tolerance_secs`
/// of `now` (what a receiver does; mnemo uses it in tests and documents it).
pub fn verify(secret: &[u8], header: &str, body: &[u8], now: i64, tolerance_secs: i64) -> Result<(), Invalid> {
    let mut timestamp = None;
    let mut candidates = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some(("v1", v)) => candidates.extend(hex::decode(v).ok()),
            _ => {}
        }
    }
    let Some(t) = timestamp else { return Err(Invalid::Malformed) };
    if candidates.is_empty() {
        return Err(Invalid::Malformed);
    }
    if (now - t).abs() > tolerance_secs {
        return Err(Invalid::Stale);
    }
    // verify_slice compares in constant time.
    if candidates.iter().any(|c| mac(secret, t, body).verify_slice(c).is_ok()) {
        Ok(())
    } else {
        Err(Invalid::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_an_independent_hmac() {
        // HMAC-SHA256("key", "1700000000.{}") computed with Python's hmac module.
        let sig = sign(b"key", 1_700_000_000, b"{}");
        assert_eq!(sig, "t=1700000000,v1=9d713ed406bb7076d4123f0dc2c39d2df5c654ed4b0cd56b52c8b4c940bd63ae");
    }

    #[test]
    fn verifies_fresh_untampered_bodies_only() {
        let body = br#"{"event":"episode.created"}"#;
        let header = sign(b"s3cret", 1000, body);
        assert_eq!(verify(b"s3cret", &header, body, 1100, 300), Ok(()));
        assert_eq!(verify(b"s3cret", &header, b"{\"event\":\"x\"}", 1100, 300), Err(Invalid::Mismatch));
        assert_eq!(verify(b"other", &header, body, 1100, 300), Err(Invalid::Mismatch));
        assert_eq!(verify(b"s3cret", &header, body, 2000, 300), Err(Invalid::Stale));
        assert_eq!(verify(b"s3cret", "v1=abcd", body, 1000, 300), Err(Invalid::Malformed));
        assert_eq!(verify(b"s3cret", "t=1000", body, 1000, 300), Err(Invalid::Malformed));
        // A rotated header with an old and a new signature passes on either secret.
        let new_sig = sign(b"new", 1000, body);
        let rotated = format!("{header},v1={}", new_sig.split_once("v1=").unwrap().1);
        assert_eq!(verify(b"new", &rotated, body, 1000, 300), Ok(()));
        assert_eq!(verify(b"s3cret", &rotated, body, 1000, 300), Ok(()));
    }
}
