//! Tenant configuration documents: validation of partial updates, versioning, region pinning.
//!
//! A PATCH names only the keys it changes; unknown keys, bad values and a stale
//! `expected_version` are refused before anything is written. `null` resets a key to its
//! default (for `region`: unpinned).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sqlx::PgPool;
use utoipa::ToSchema;

use crate::compile::registry::{validate_tenant_claim_keys, validate_tenant_frames, Cardinality, Registry};
use crate::compile::topic::UpdateWords;
use crate::db;
use crate::error::FieldError;
use crate::input::rules::{between, bounded, NUL_IN_JSON};
use crate::input::{self, Leaves, Setting};
pub use crate::model::tenant_config::ConfigDoc;
use crate::model::voice::{Voice, MAX_SOURCE_CHARS, MAX_TENANT_SOURCES};
use crate::policy::eval::PolicyMode;
use crate::services::receipts::ReceiptsMode;

/// `PATCH /admin/tenants/{tenant_id}/config`: the keys sent are set, a key sent as `null` is
/// reset to its default (`region`: unpinned), the rest are kept. Unknown keys are refused.
#[derive(Debug, Default, Deserialize, ToSchema, garde::Validate)]
#[serde(deny_unknown_fields)]
pub struct TenantConfigPatch {
    /// When context calls write receipts (default `on_request`).
    #[serde(default)]
    #[schema(value_type = Option<ReceiptsMode>)]
    #[garde(skip)]
    pub receipts: Setting<ReceiptsMode>,
    /// Days receipts are kept; 0 keeps them for ever.
    #[serde(default)]
    #[schema(value_type = Option<i64>, minimum = 0, maximum = 36500)]
    #[garde(custom(between(0, 36500)))]
    pub receipt_retention_days: Setting<i64>,
    /// Whether policy decisions are only recorded or also applied (default `log_only`).
    #[serde(default)]
    #[schema(value_type = Option<PolicyMode>)]
    #[garde(skip)]
    pub policy_mode: Setting<PolicyMode>,
    /// Refuse context calls that do not name their caller.
    #[serde(default)]
    #[schema(value_type = Option<bool>)]
    #[garde(skip)]
    pub require_caller_identity: Setting<bool>,
    /// The region the tenant's data is pinned to.
    #[serde(default)]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 64)]
    #[garde(custom(bounded(1, 64)))]
    pub region: Setting<String>,
    /// The id of the key that signs the tenant's receipts.
    #[serde(default)]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 64)]
    #[garde(custom(bounded(1, 64)))]
    pub receipt_signing_key_id: Setting<String>,
    /// The tenant's own claim keys (`"ns.key": "single" | "multi"`, at most 64; built-in keys
    /// cannot be redefined).
    #[serde(default)]
    #[schema(value_type = Option<BTreeMap<String, Cardinality>>)]
    #[garde(custom(allowed_claim_keys))]
    pub claim_keys: Setting<BTreeMap<String, Cardinality>>,
    /// The tenant's own verb frames for the heuristic compiler (at most 64).
    #[serde(default)]
    #[schema(value_type = Option<Vec<AttributeFrame>>, max_items = 64)]
    #[garde(custom(known_frames))]
    pub attribute_frames: Setting<Vec<AttributeFrame>>,
    /// The tenant's own words for recognising updates (added to the built-in lists of
    /// `src/compile/topic/topic.json`; see docs/compile.md, "Updates found by meaning").
    #[serde(default)]
    #[schema(value_type = Option<UpdateWords>)]
    #[garde(custom(bounded_words))]
    pub update_words: Setting<UpdateWords>,
    /// Requests per minute per API key and for the tenant, in place of the server's
    /// `MNEMO_RATE_LIMIT_RPM`; 0 is no limit.
    #[serde(default)]
    #[schema(value_type = Option<i64>, minimum = 0, maximum = 1000000)]
    #[garde(custom(between(0, 1_000_000)))]
    pub rate_limit_rpm: Setting<i64>,
    /// Suggest sensitivity labels for new memories (on by default).
    #[serde(default)]
    #[schema(value_type = Option<bool>)]
    #[garde(skip)]
    pub auto_labeling: Setting<bool>,
    /// The voice of the tenant's own episode sources (`"slack": "user"`, `"crm": "evidence"`;
    /// at most 64). Built-in names (chat, user, assistant, agent…) can be redefined; any source
    /// named nowhere is evidence. See docs/compile.md, "Who said it".
    #[serde(default)]
    #[schema(value_type = Option<BTreeMap<String, Voice>>)]
    #[garde(custom(source_names))]
    pub source_trust: Setting<BTreeMap<String, Voice>>,
    /// 409 unless it equals the stored version (0: the document must not exist yet).
    #[schema(minimum = 0)]
    #[garde(custom(between(0, i64::MAX)))]
    pub expected_version: Option<i64>,
    /// Pin a region other than this server's anyway.
    #[garde(skip)]
    pub force_region_pin: Option<bool>,
}

/// One tenant verb frame: a phrase with one value slot, and the claim key it states.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AttributeFrame {
    /// e.g. `"we bill through {name}"`; slots `{value}`, `{name}`, `{place}`, `{role}`,
    /// `{cadence}`, `{diet}`, speakers `{i}` and `{im}`, choices `(a|b)`, optional `(x )?`.
    #[schema(max_length = 500)]
    pub pattern: String,
    /// A known claim key, an `attr.*` key, or `link`.
    pub key: String,
    /// Also read when told in the past ("first day at …").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<bool>,
}

/// Most phrases in one list of [`UpdateWords`], and the longest phrase, in chars.
const MAX_UPDATE_WORDS: usize = 200;
const MAX_UPDATE_WORD_CHARS: usize = 100;

/// garde rule: each list of [`UpdateWords`] holds at most 200 phrases of 1-100 chars.
fn bounded_words(words: &Setting<UpdateWords>, _: &()) -> garde::Result {
    let Some(w) = words.value() else { return Ok(()) };
    let lists = [
        ("change", &w.change),
        ("retraction", &w.retraction),
        ("request", &w.request),
        ("screens", &w.screens),
        ("clause_screens", &w.clause_screens),
        ("not_topic", &w.not_topic),
        ("adding", &w.adding),
    ];
    for (name, list) in lists {
        if list.len() > MAX_UPDATE_WORDS {
            return Err(garde::Error::new(format!("{name}: at most {MAX_UPDATE_WORDS} phrases")));
        }
        let bad = |p: &String| {
            let n = p.trim().chars().count();
            n == 0 || n > MAX_UPDATE_WORD_CHARS || p.contains('\0')
        };
        if list.iter().any(bad) {
            return Err(garde::Error::new(format!(
                "{name}: each phrase is 1-{MAX_UPDATE_WORD_CHARS} characters, without NUL"
            )));
        }
    }
    Ok(())
}

/// garde rule: claim keys the registry accepts (it words the problem, naming the key).
fn allowed_claim_keys(keys: &Setting<BTreeMap<String, Cardinality>>, _: &()) -> garde::Result {
    match keys.value() {
        Some(map) => {
            let as_json = serde_json::to_value(map).unwrap_or_default();
            validate_tenant_claim_keys(&as_json).map_err(garde::Error::new)
        }
        None => Ok(()),
    }
}

/// garde rule: at most 64 sources, each named by 1 to 256 chars without NUL.
fn source_names(names: &Setting<BTreeMap<String, Voice>>, _: &()) -> garde::Result {
    let Some(map) = names.value() else { return Ok(()) };
    if map.len() > MAX_TENANT_SOURCES {
        return Err(garde::Error::new(format!("at most {MAX_TENANT_SOURCES} sources")));
    }
    for k in map.keys() {
        let n = k.trim().chars().count();
        if n == 0 || n > MAX_SOURCE_CHARS || k.contains('\0') {
            return Err(garde::Error::new(format!("source names are 1 to {MAX_SOURCE_CHARS} characters without NUL")));
        }
    }
    Ok(())
}

/// garde rule: frames that compile, each naming a key the registry knows.
fn known_frames(frames: &Setting<Vec<AttributeFrame>>, _: &()) -> garde::Result {
    match frames.value() {
        Some(list) if !list.is_empty() => {
            if list.iter().any(|f| f.pattern.contains('\0') || f.key.contains('\0')) {
                return Err(garde::Error::new(NUL_IN_JSON));
            }
            let as_json = serde_json::to_value(list).unwrap_or_default();
            validate_tenant_frames(&as_json, &Registry::builtin()).map_err(garde::Error::new)
        }
        _ => Ok(()),
    }
}

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

impl Patch {
    fn put<T: Serialize>(&mut self, key: &str, setting: Setting<T>) {
        match setting {
            Setting::Keep => {}
            Setting::Reset => self.remove.push(key.to_string()),
            Setting::Set(v) => {
                // the types serialize to the JSON they were read from
                self.set.insert(key.to_string(), serde_json::to_value(v).unwrap_or(Value::Null));
            }
        }
    }
}

impl From<TenantConfigPatch> for Patch {
    fn from(p: TenantConfigPatch) -> Self {
        let mut out = Patch {
            expected_version: p.expected_version,
            force_region_pin: p.force_region_pin.unwrap_or(false),
            ..Patch::default()
        };
        out.put("receipts", p.receipts);
        out.put("receipt_retention_days", p.receipt_retention_days);
        out.put("policy_mode", p.policy_mode);
        out.put("require_caller_identity", p.require_caller_identity);
        out.put("region", p.region);
        out.put("receipt_signing_key_id", p.receipt_signing_key_id);
        out.put("claim_keys", p.claim_keys);
        out.put("attribute_frames", p.attribute_frames);
        out.put("update_words", p.update_words);
        out.put("rate_limit_rpm", p.rate_limit_rpm);
        out.put("auto_labeling", p.auto_labeling);
        out.put("source_trust", p.source_trust);
        out
    }
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

/// Reads a PATCH body as [`TenantConfigPatch`] (every problem in one answer); `server_region`
/// is this server's region, which a pin elsewhere must be forced to leave.
pub fn parse_patch(body: &Value, server_region: Option<&str>) -> Result<Patch, PatchError> {
    let typed: TenantConfigPatch = input::read(body, "body", Leaves::Json).map_err(PatchError::Invalid)?;
    let patch = Patch::from(typed);
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
    fn every_problem_is_located_and_the_values_are_stored_as_sent() {
        let errs = match parse_patch(
            &json!({"claim_keys": {"crm.stage": "sometimes"}, "policy_mode": 3, "rate_limit_rpm": -1,
                    "attribute_frames": [{"pattern": "we bill via {name}", "key": "attr.billing", "colour": 1}]}),
            None,
        ) {
            Err(PatchError::Invalid(errs)) => errs,
            other => panic!("expected invalid, got {other:?}"),
        };
        let got: Vec<(String, &str)> = errs.iter().map(|e| (e.loc.join("."), e.kind)).collect();
        assert_eq!(
            got,
            [
                ("body.policy_mode".to_string(), "string_type"),
                ("body.claim_keys.crm.stage".to_string(), "enum"),
                ("body.attribute_frames.0.colour".to_string(), "extra_forbidden"),
                ("body.rate_limit_rpm".to_string(), "int_range"),
            ]
        );
        let frames = json!([{"pattern": "we bill (through|via) {name}", "key": "attr.billing_provider"}]);
        let p = parse_patch(&json!({"claim_keys": {"crm.stage": "multi"}, "attribute_frames": frames}), None).unwrap();
        assert_eq!(p.set.get("claim_keys"), Some(&json!({"crm.stage": "multi"})));
        assert_eq!(p.set.get("attribute_frames"), Some(&frames));
        let bad = json!({"attribute_frames": [{"pattern": "we bill through", "key": "attr.billing_provider"}]});
        assert!(matches!(parse_patch(&bad, None), Err(PatchError::Invalid(e)) if e[0].msg.contains("value slot")));
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
