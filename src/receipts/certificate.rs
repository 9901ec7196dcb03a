//! Erasure certificates: a signed statement of what a subject deletion (or the erasure of
//! chosen episodes and memories of a subject) removed.
//!
//! The certificate never names the subject, only sha256(tenant \x1f subject), so it can be
//! kept and shown to auditors after the subject is gone. An item erasure's certificate names
//! the erased episodes and memories by id (ids, never their content). When a signing key is available the
//! certificate carries an HMAC-SHA256 over its canonical JSON without the `signature` field
//! (the key id and algorithm are covered), the same construction receipts use.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use subtle::ConstantTimeEq;

use super::canonical::{canonical_v1, sha256_hex};
use super::signing::{hmac_hex, SigningKeys, ALGORITHM};
use crate::model::time::isoformat;

/// Identifies the certificate layout.
pub const CERTIFICATE_VERSION: &str = "mnemo-erasure-v1";
/// Identifies the layout of an item erasure's certificate (chosen episodes and memories).
pub const ITEMS_CERTIFICATE_VERSION: &str = "mnemo-erasure-items-v1";

/// sha256 of (tenant, subject): names an erased subject without revealing it.
pub fn subject_digest(tenant: &str, subject_id: &str) -> String {
    sha256_hex(format!("{tenant}\u{1f}{subject_id}").as_bytes())
}

/// What an erasure did, before it is written down.
#[derive(Debug, Clone)]
pub struct ErasureFacts<'a> {
    pub erasure_id: &'a str,
    pub tenant: &'a str,
    pub subject_sha256: &'a str,
    pub erased_at: DateTime<Utc>,
    /// Rows deleted (or, for receipts, tombstoned) per table.
    pub counts: &'a BTreeMap<String, u64>,
    /// Tables the catalog check found zero remaining rows in.
    pub verified_tables: &'a [String],
}

/// Builds the certificate; signs it with `key_id` when that key is loaded.
pub fn build(facts: &ErasureFacts<'_>, keys: &SigningKeys, key_id: Option<&str>) -> Value {
    let total: u64 = facts.counts.values().sum();
    let mut cert = json!({
        "certificate_version": CERTIFICATE_VERSION,
        "erasure_id": facts.erasure_id,
        "tenant_id": facts.tenant,
        "subject_sha256": facts.subject_sha256,
        "erased_at": isoformat(&facts.erased_at),
        "counts": facts.counts,
        "total_rows": total,
        "verified_tables": facts.verified_tables,
        "rows_remaining": 0,
        "signature_key_id": null,
        "signature_algorithm": null,
        "signature": null,
    });
    sign(&mut cert, keys, key_id);
    cert
}

/// What an item erasure did, before it is written down.
#[derive(Debug, Clone)]
pub struct ItemErasureFacts<'a> {
    pub erasure_id: &'a str,
    pub tenant: &'a str,
    pub subject_sha256: &'a str,
    pub erased_at: DateTime<Utc>,
    /// Episodes deleted, by id (sorted).
    pub episode_ids: &'a [String],
    /// Memories deleted, by id (sorted): those asked for and those derived from the episodes.
    pub memory_ids: &'a [String],
    /// Rows deleted (or, for receipts, tombstoned) per table.
    pub counts: &'a BTreeMap<String, u64>,
    /// Tables checked for none of the erased ids remaining.
    pub verified_tables: &'a [String],
}

/// Builds an item erasure's certificate; signs it with `key_id` when that key is loaded.
pub fn build_items(facts: &ItemErasureFacts<'_>, keys: &SigningKeys, key_id: Option<&str>) -> Value {
    let total: u64 = facts.counts.values().sum();
    let mut cert = json!({
        "certificate_version": ITEMS_CERTIFICATE_VERSION,
        "erasure_id": facts.erasure_id,
        "tenant_id": facts.tenant,
        "subject_sha256": facts.subject_sha256,
        "erased_at": isoformat(&facts.erased_at),
        "episode_ids": facts.episode_ids,
        "memory_ids": facts.memory_ids,
        "counts": facts.counts,
        "total_rows": total,
        "verified_tables": facts.verified_tables,
        "rows_remaining": 0,
        "signature_key_id": null,
        "signature_algorithm": null,
        "signature": null,
    });
    sign(&mut cert, keys, key_id);
    cert
}

/// Signs `cert` in place with `key_id` when that key is loaded (otherwise it stays unsigned).
fn sign(cert: &mut Value, keys: &SigningKeys, key_id: Option<&str>) {
    if let Some(key_id) = key_id.filter(|k| keys.contains(k)) {
        cert["signature_key_id"] = json!(key_id);
        cert["signature_algorithm"] = json!(ALGORITHM);
        let unsigned = without_signature(cert);
        if let Some(sig) = hmac_hex(keys, key_id, canonical_v1(&unsigned).as_bytes()) {
            cert["signature"] = json!(sig);
        }
    }
}

/// The key a tenant's certificates are signed with: its receipt key, else the first loaded key.
pub fn signing_key_for<'a>(tenant_config: &'a Value, keys: &'a SigningKeys) -> Option<String> {
    match tenant_config.get("receipt_signing_key_id").and_then(Value::as_str) {
        Some(k) => Some(k.to_string()),
        None => keys.ids().into_iter().next(),
    }
}

/// Outcome of checking a stored certificate's signature.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct CertificateCheck {
    /// true/false when checked; null when it could not be.
    pub valid: Option<bool>,
    /// `ok`, `signature_mismatch`, `key_unavailable`, `unsupported_algorithm` or `unsigned`.
    #[schema(value_type = String)]
    pub reason: &'static str,
}

/// Verifies a certificate's signature against the loaded keys (constant-time comparison).
pub fn verify(cert: &Value, keys: &SigningKeys) -> CertificateCheck {
    let check = |valid, reason| CertificateCheck { valid, reason };
    let (Some(sig), Some(key_id)) =
        (cert.get("signature").and_then(Value::as_str), cert.get("signature_key_id").and_then(Value::as_str))
    else {
        return check(None, "unsigned");
    };
    if cert.get("signature_algorithm").and_then(Value::as_str) != Some(ALGORITHM) {
        return check(None, "unsupported_algorithm");
    }
    let Some(expected) = hmac_hex(keys, key_id, canonical_v1(&without_signature(cert)).as_bytes()) else {
        return check(None, "key_unavailable");
    };
    if bool::from(expected.as_bytes().ct_eq(sig.as_bytes())) {
        check(Some(true), "ok")
    } else {
        check(Some(false), "signature_mismatch")
    }
}

fn without_signature(cert: &Value) -> Value {
    let mut v = cert.clone();
    if let Value::Object(m) = &mut v {
        m.remove("signature");
    }
    v
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine as _;

    fn keys() -> SigningKeys {
        SigningKeys::parse(&json!({"k1": STANDARD.encode([7u8; 32]), "k2": STANDARD.encode([9u8; 32])}).to_string())
            .unwrap()
    }

    fn sample(keys: &SigningKeys, key: Option<&str>) -> Value {
        let counts: BTreeMap<String, u64> = [("episodes".to_string(), 3), ("memories".to_string(), 2)].into();
        let tables = vec!["episodes".to_string(), "memories".to_string()];
        let digest = subject_digest("acme", "user:42");
        let facts = ErasureFacts {
            erasure_id: "01ABC",
            tenant: "acme",
            subject_sha256: &digest,
            erased_at: DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
            counts: &counts,
            verified_tables: &tables,
        };
        build(&facts, keys, key)
    }

    #[test]
    fn digest_separates_tenant_and_subject() {
        assert_ne!(subject_digest("ab", "c"), subject_digest("a", "bc"));
        assert_eq!(subject_digest("a", "b").len(), 64);
    }

    #[test]
    fn signed_certificate_verifies_and_holds_no_subject() {
        let k = keys();
        let cert = sample(&k, Some("k1"));
        assert_eq!(verify(&cert, &k), CertificateCheck { valid: Some(true), reason: "ok" });
        assert_eq!(cert["total_rows"], 5);
        assert!(!canonical_v1(&cert).contains("user:42"));
    }

    #[test]
    fn tampering_or_missing_key_is_reported() {
        let k = keys();
        let mut cert = sample(&k, Some("k2"));
        cert["counts"]["episodes"] = json!(0);
        assert_eq!(verify(&cert, &k).reason, "signature_mismatch");
        assert_eq!(verify(&sample(&k, Some("k2")), &SigningKeys::empty()).reason, "key_unavailable");
        let mut bad_alg = sample(&k, Some("k1"));
        bad_alg["signature_algorithm"] = json!("md5");
        assert_eq!(verify(&bad_alg, &k).reason, "unsupported_algorithm");
    }

    #[test]
    fn unknown_or_absent_key_leaves_it_unsigned() {
        let k = keys();
        assert_eq!(verify(&sample(&k, Some("nope")), &k).reason, "unsigned");
        assert_eq!(sample(&k, None)["signature"], Value::Null);
    }

    #[test]
    fn an_item_certificate_names_ids_verifies_and_detects_tampering() {
        let k = keys();
        let counts: BTreeMap<String, u64> = [("episodes".to_string(), 1), ("memories".to_string(), 2)].into();
        let (episodes, memories) = (vec!["e1".to_string()], vec!["m1".to_string(), "m2".to_string()]);
        let digest = subject_digest("acme", "user:42");
        let facts = ItemErasureFacts {
            erasure_id: "01ABD",
            tenant: "acme",
            subject_sha256: &digest,
            erased_at: DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
            episode_ids: &episodes,
            memory_ids: &memories,
            counts: &counts,
            verified_tables: &[],
        };
        let mut cert = build_items(&facts, &k, Some("k1"));
        assert_eq!(cert["certificate_version"], ITEMS_CERTIFICATE_VERSION);
        assert_eq!((cert["total_rows"].clone(), cert["memory_ids"][1].clone()), (json!(3), json!("m2")));
        assert_eq!(verify(&cert, &k).reason, "ok");
        assert!(!canonical_v1(&cert).contains("user:42"));
        cert["memory_ids"] = json!(["m1"]);
        assert_eq!(verify(&cert, &k).reason, "signature_mismatch");
    }

    #[test]
    fn key_choice_prefers_the_tenant_key() {
        let k = keys();
        assert_eq!(signing_key_for(&json!({"receipt_signing_key_id": "k2"}), &k).as_deref(), Some("k2"));
        assert_eq!(signing_key_for(&json!({}), &k).as_deref(), Some("k1"));
        assert_eq!(signing_key_for(&json!({}), &SigningKeys::empty()), None);
    }
}
