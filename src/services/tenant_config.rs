//! Tenant configuration documents: validation of partial updates, versioning, region pinning.
//!
//! A PATCH names only the keys it changes; unknown keys, bad values and a stale
//! `expected_version` are refused before anything is written. `null` resets a key to its
//! default (for `region`: unpinned).

use serde_json::{Map, Value};
use sqlx::PgPool;

use crate::compile::frames::validate_tenant_frames;
use crate::compile::registry::{validate_tenant_claim_keys, Registry};
use crate::db;
use crate::error::FieldError;
pub use crate::model::tenant_config::ConfigDoc;

/// A checked partial update.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Patch {
    /// Keys to set.
    pub set: Map<String, Value>,
    /// Keys to remove (sent as null).
    pub remove: Vec<String>,
    /// The version the caller saw (0 = the document must not exist yet).
    pub expected_version: Option<i64>,
    /// Pin a region other than this server's anyway.
    pub force_region_pin: bool,
}

/// Why a PATCH was refused.
#[derive(Debug, Clone)]
pub enum PatchError {
    /// 422 with field errors.
    Invalid(Vec<FieldError>),
    /// 422 `residency.invalid_pin`.
    InvalidPin(String),
    /// 409: the stored version is not the expected one.
    VersionConflict { expected: i64, actual: i64 },
}

fn field(name: &str, msg: impl Into<String>, kind: &'static str) -> FieldError {
    FieldError { loc: vec!["body".into(), name.into()], msg: msg.into(), kind }
}

fn check_value(key: &str, v: &Value) -> Result<(), FieldError> {
    let one_of = |allowed: &[&str]| match v.as_str() {
        Some(s) if allowed.contains(&s) => Ok(()),
        _ => Err(field(key, format!("must be one of {}", allowed.join(", ")), "enum")),
    };
    let int_in = |min: i64, max: i64| match v.as_i64() {
        Some(n) if (min..=max).contains(&n) && !v.is_f64() => Ok(()),
        _ => Err(field(key, format!("must be an integer in {min}..={max}"), "int_range")),
    };
    match key {
        "receipts" => one_of(&["always", "on_request", "never"]),
        "policy_mode" => one_of(&["log_only", "enforce"]),
        "receipt_retention_days" => int_in(0, 36500),
        "rate_limit_rpm" => int_in(0, 1_000_000),
        "require_caller_identity" | "auto_labeling" => {
            v.as_bool().map(|_| ()).ok_or_else(|| field(key, "must be a boolean", "bool_type"))
        }
        "region" => match v.as_str() {
            Some(s) if !s.is_empty() && s.chars().count() <= 64 => Ok(()),
            _ => Err(field(key, "must be a string of 1-64 characters, or null", "string_type")),
        },
        "receipt_signing_key_id" => match v.as_str() {
            Some(s) if !s.is_empty() && s.chars().count() <= 64 => Ok(()),
            _ => Err(field(key, "must be a string of 1-64 characters", "string_type")),
        },
        "claim_keys" => validate_tenant_claim_keys(v).map_err(|m| field(key, m, "value_error")),
        "attribute_frames" => validate_tenant_frames(v, &Registry::builtin()).map_err(|m| field(key, m, "value_error")),
        _ => Err(field(key, "extra inputs are not permitted", "extra_forbidden")),
    }
}

/// Checks a PATCH body against the known keys; `server_region` is this server's region.
pub fn parse_patch(body: &Value, server_region: Option<&str>) -> Result<Patch, PatchError> {
    let Some(obj) = body.as_object() else {
        return Err(PatchError::Invalid(vec![FieldError {
            loc: vec!["body".into()],
            msg: "must be a JSON object".into(),
            kind: "dict_type",
        }]));
    };
    let mut patch = Patch::default();
    let mut errors = Vec::new();
    for (k, v) in obj {
        // Postgres cannot store NUL in jsonb text: refuse it here rather than fail the write.
        if crate::model::text::contains_nul(v) {
            errors.push(field(k, "must not contain NUL bytes (\\u0000)", "string_nul"));
            continue;
        }
        match k.as_str() {
            "expected_version" => match v.as_i64().filter(|n| *n >= 0 && !v.is_f64()) {
                Some(n) => patch.expected_version = Some(n),
                None if v.is_null() => {}
                None => errors.push(field(k, "must be a non-negative integer", "int_type")),
            },
            "force_region_pin" => match v {
                Value::Bool(b) => patch.force_region_pin = *b,
                Value::Null => {}
                _ => errors.push(field(k, "must be a boolean", "bool_type")),
            },
            _ if v.is_null() => match check_value(k, &Value::Null) {
                // Null resets a known key; unknown keys stay refused.
                Err(e) if e.kind == "extra_forbidden" => errors.push(e),
                _ => patch.remove.push(k.clone()),
            },
            _ => match check_value(k, v) {
                Ok(()) => {
                    patch.set.insert(k.clone(), v.clone());
                }
                Err(e) => errors.push(e),
            },
        }
    }
    if !errors.is_empty() {
        return Err(PatchError::Invalid(errors));
    }
    if let (Some(server), Some(pin)) = (server_region, patch.set.get("region").and_then(Value::as_str)) {
        if pin != server && !patch.force_region_pin {
            return Err(PatchError::InvalidPin(format!(
                "region '{pin}' is not this server's region; send force_region_pin: true to pin it anyway"
            )));
        }
    }
    Ok(patch)
}

/// Merges a patch into a document (unspecified keys are kept).
pub fn merge(current: &Value, patch: &Patch) -> Value {
    let mut map = current.as_object().cloned().unwrap_or_default();
    for k in &patch.remove {
        map.remove(k);
    }
    for (k, v) in &patch.set {
        map.insert(k.clone(), v.clone());
    }
    Value::Object(map)
}

/// Every tenant mnemo has seen, with when it first wrote.
pub async fn list_tenants(pool: &PgPool) -> sqlx::Result<Vec<(String, chrono::DateTime<chrono::Utc>)>> {
    db::tenants::list_all(&mut *pool.acquire().await?).await
}

/// The tenant's document.
pub async fn get(pool: &PgPool, tenant: &str) -> anyhow::Result<ConfigDoc> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    Ok(db::tenants::config_doc(&mut tx, tenant).await?)
}

/// Applies a checked patch under the tenant's config lock; 409 when the version moved.
pub async fn update(pool: &PgPool, tenant: &str, patch: &Patch) -> anyhow::Result<Result<ConfigDoc, PatchError>> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    db::tenants::lock_config(&mut tx, tenant).await?;
    let current = db::tenants::config_doc(&mut tx, tenant).await?;
    if let Some(expected) = patch.expected_version {
        if expected != current.version {
            return Ok(Err(PatchError::VersionConflict { expected, actual: current.version }));
        }
    }
    db::tenants::ensure(&mut tx, tenant).await?;
    let merged = merge(&current.config, patch);
    let doc = db::tenants::write_config(&mut tx, tenant, &merged, current.version + 1).await?;
    tx.commit().await?;
    Ok(Ok(doc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn invalid_fields(body: Value) -> Vec<String> {
        match parse_patch(&body, None) {
            Err(PatchError::Invalid(errs)) => errs.into_iter().map(|e| e.loc[1].clone()).collect(),
            other => panic!("expected invalid, got {other:?}"),
        }
    }

    #[test]
    fn known_keys_with_good_values_are_accepted() {
        let p = parse_patch(
            &json!({"receipts": "always", "receipt_retention_days": 30, "policy_mode": "enforce",
                    "require_caller_identity": true, "region": "eu", "receipt_signing_key_id": "k1",
                    "claim_keys": {"billing.plan": "single"}, "rate_limit_rpm": 100, "expected_version": 3}),
            None,
        )
        .unwrap();
        assert_eq!(p.set.len(), 8);
        assert_eq!(p.expected_version, Some(3));
    }

    #[test]
    fn unknown_keys_and_bad_values_are_named() {
        let mut got = invalid_fields(json!({"receipts": "sometimes", "colour": "blue", "receipt_retention_days": 1.5,
                                            "region": "", "claim_keys": {"name": "single"}}));
        got.sort();
        assert_eq!(got, ["claim_keys", "colour", "receipt_retention_days", "receipts", "region"]);
        assert_eq!(invalid_fields(json!({"receipt_retention_days": 36501})), ["receipt_retention_days"]);
        assert_eq!(invalid_fields(json!({"unknown": null})), ["unknown"]);
        assert_eq!(invalid_fields(json!({"receipt_signing_key_id": "k\u{0}"})), ["receipt_signing_key_id"]);
        assert!(matches!(parse_patch(&json!([1]), None), Err(PatchError::Invalid(_))));
    }

    #[test]
    fn null_resets_a_key_and_merge_keeps_the_rest() {
        let p = parse_patch(&json!({"region": null, "receipts": "never"}), None).unwrap();
        let merged = merge(&json!({"region": "eu", "policy_mode": "enforce", "future_key": 1}), &p);
        assert_eq!(merged, json!({"policy_mode": "enforce", "future_key": 1, "receipts": "never"}));
    }

    #[test]
    fn pinning_another_region_needs_force() {
        assert!(parse_patch(&json!({"region": "eu"}), Some("eu")).is_ok());
        assert!(matches!(parse_patch(&json!({"region": "us"}), Some("eu")), Err(PatchError::InvalidPin(_))));
        assert!(parse_patch(&json!({"region": "us", "force_region_pin": true}), Some("eu")).is_ok());
        assert!(parse_patch(&json!({"region": "us"}), None).is_ok());
    }
}
