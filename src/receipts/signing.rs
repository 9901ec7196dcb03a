//! HMAC-SHA256 signatures over canonical-v1 receipt bodies, compatible with the Python signer.

use std::collections::BTreeMap;
use std::fmt;

use anyhow::{anyhow, bail};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use subtle::ConstantTimeEq;

use super::canonical::canonical_v1;

/// Algorithm identifier stored in `receipt_signature_algorithm`.
pub const ALGORITHM: &str = "hmac-sha256-canonical-v1";

/// Body field holding the hex signature; it is the only field the signature does not cover.
const SIGNATURE_FIELD: &str = "receipt_signature";
/// Body field naming the key used; covered by the signature.
const KEY_ID_FIELD: &str = "receipt_signature_key_id";
/// Body field naming the algorithm; covered by the signature.
const ALGORITHM_FIELD: &str = "receipt_signature_algorithm";

/// HMAC keys shorter than this are rejected: below the SHA-256 output size they weaken the MAC.
const MIN_KEY_BYTES: usize = 32;

/// Operator signing keys, parsed from JSON {key_id: base64}; each must decode (strict standard base64) to >= 32 bytes.
#[derive(Clone, Default)]
pub struct SigningKeys {
    keys: BTreeMap<String, Vec<u8>>,
}

impl fmt::Debug for SigningKeys {
    // Only ids are shown so keys can never leak through logs or panic messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKeys").field("ids", &self.keys.keys().collect::<Vec<_>>()).finish_non_exhaustive()
    }
}

impl SigningKeys {
    /// Parses `{"key_id": "<standard base64>", ...}`; errors name the offending key id but never echo key material.
    pub fn parse(json: &str) -> anyhow::Result<SigningKeys> {
        // serde_json's message is not reused: only its position, so no fragment of the input reaches the error.
        let value: Value = serde_json::from_str(json).map_err(|e| {
            anyhow!("signing keys: invalid JSON at line {} column {} (expected an object)", e.line(), e.column())
        })?;
        let Value::Object(map) = value else {
            bail!("signing keys: expected a JSON object of key_id -> base64 key");
        };
        let mut keys = BTreeMap::new();
        for (id, encoded) in map {
            if id.is_empty() {
                bail!("signing keys: key id must not be empty");
            }
            let Value::String(encoded) = encoded else {
                bail!("signing key {id:?}: value must be a base64 string");
            };
            // The base64 error text quotes the offending byte, so it is deliberately dropped.
            let Ok(bytes) = STANDARD.decode(encoded.as_bytes()) else {
                bail!("signing key {id:?}: not valid standard (padded) base64");
            };
            if bytes.len() < MIN_KEY_BYTES {
                bail!("signing key {id:?}: decodes to {} bytes, at least {MIN_KEY_BYTES} required", bytes.len());
            }
            keys.insert(id, bytes);
        }
        Ok(SigningKeys { keys })
    }

    /// A key set with no keys: signing is disabled and verification reports `key_unavailable`.
    pub fn empty() -> SigningKeys {
        SigningKeys::default()
    }

    /// Whether a key with this id is loaded.
    pub fn contains(&self, key_id: &str) -> bool {
        self.keys.contains_key(key_id)
    }

    /// Loaded key ids, sorted.
    pub fn ids(&self) -> Vec<String> {
        self.keys.keys().cloned().collect()
    }

    /// A fresh HMAC-SHA256 keyed with `key_id`, or None if it is not loaded.
    fn mac(&self, key_id: &str) -> Option<Hmac<Sha256>> {
        // HMAC accepts keys of any length, so construction cannot fail for a loaded key.
        Hmac::<Sha256>::new_from_slice(self.keys.get(key_id)?).ok()
    }
}

/// Signs a receipt body in place (key id and algorithm are set first so they are covered); false if it cannot.
///
/// The signature is lower-case hex HMAC-SHA256(key, canonical_v1(body without `receipt_signature`)). Returns false,
/// leaving the body unchanged, if the key id is not loaded or the body is not a JSON object.
pub fn sign(body: &mut Value, keys: &SigningKeys, key_id: &str) -> bool {
    let Some(mut mac) = keys.mac(key_id) else {
        return false;
    };
    let Value::Object(map) = body else {
        return false;
    };
    map.insert(KEY_ID_FIELD.to_owned(), Value::String(key_id.to_owned()));
    map.insert(ALGORITHM_FIELD.to_owned(), Value::String(ALGORITHM.to_owned()));
    map.remove(SIGNATURE_FIELD);
    mac.update(canonical_v1(body).as_bytes());
    let signature = hex::encode(mac.finalize().into_bytes());
    if let Value::Object(map) = body {
        map.insert(SIGNATURE_FIELD.to_owned(), Value::String(signature));
    }
    true
}

/// HMAC over arbitrary bytes (for other signed documents, e.g. erasure certificates); None if the key is not loaded.
pub fn hmac_hex(keys: &SigningKeys, key_id: &str, bytes: &[u8]) -> Option<String> {
    let mut mac = keys.mac(key_id)?;
    mac.update(bytes);
    Some(hex::encode(mac.finalize().into_bytes()))
}

/// Outcome of verifying a stored receipt body.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Verification {
    /// true/false when checked; null when the signature could not be checked.
    pub valid: Option<bool>,
    /// Key id named by the body, if it is signed.
    pub key_id: Option<String>,
    /// Algorithm named by the body (a missing/null algorithm is reported as [`ALGORITHM`]).
    pub algorithm: Option<String>,
    /// One of `ok`, `signature_mismatch`, `key_unavailable`, `unsupported_algorithm`, `no_signature`.
    pub reason: &'static str,
}

impl Verification {
    fn new(valid: Option<bool>, key_id: Option<String>, algorithm: Option<String>, reason: &'static str) -> Self {
        Verification { valid, key_id, algorithm, reason }
    }
}

/// Verifies a stored receipt body against the loaded keys, comparing signatures in constant time.
///
/// A missing, null, empty or non-string signature or key id means `no_signature` (valid null); an algorithm other
/// than [`ALGORITHM`] (null or missing counts as v1) means `unsupported_algorithm`; a key that is not loaded means
/// `key_unavailable`; otherwise `ok` (valid true) or `signature_mismatch` (valid false).
pub fn verify(body: &Value, keys: &SigningKeys) -> Verification {
    let non_empty_str = |field: &str| body.get(field).and_then(Value::as_str).filter(|s| !s.is_empty());
    let (Some(signature), Some(key_id)) = (non_empty_str(SIGNATURE_FIELD), non_empty_str(KEY_ID_FIELD)) else {
        return Verification::new(None, None, None, "no_signature");
    };
    let key_id = Some(key_id.to_owned());
    let algorithm = match body.get(ALGORITHM_FIELD) {
        None | Some(Value::Null) => ALGORITHM.to_owned(),
        Some(Value::String(s)) => s.clone(),
        // Report a malformed algorithm as its JSON text rather than hide it.
        Some(other) => other.to_string(),
    };
    if algorithm != ALGORITHM {
        return Verification::new(None, key_id, Some(algorithm), "unsupported_algorithm");
    }
    let Some(mut mac) = key_id.as_deref().and_then(|id| keys.mac(id)) else {
        return Verification::new(None, key_id, Some(algorithm), "key_unavailable");
    };
    let mut unsigned = body.clone();
    if let Value::Object(map) = &mut unsigned {
        map.remove(SIGNATURE_FIELD);
    }
    mac.update(canonical_v1(&unsigned).as_bytes());
    let expected = hex::encode(mac.finalize().into_bytes());
    // Hex text is compared exactly (as Python's hmac.compare_digest on str does), so upper-case hex does not match.
    if bool::from(expected.as_bytes().ct_eq(signature.as_bytes())) {
        Verification::new(Some(true), key_id, Some(algorithm), "ok")
    } else {
        Verification::new(Some(false), key_id, Some(algorithm), "signature_mismatch")
    }
}
