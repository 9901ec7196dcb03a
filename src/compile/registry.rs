//! The claim registry: which keys exist, their aliases and cardinality (built-ins plus a
//! tenant's `claim_keys`). Cardinality always comes from here, never from a producer.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::Value;

use super::attributes::{attributes, is_open_key, FrameSpec};
use super::frames::{compile, Frame};
use super::procedures::PROCEDURE_PREFIX;

/// Maximum number of tenant-defined claim keys.
pub const MAX_TENANT_KEYS: usize = 64;
/// Most verb frames a tenant may add.
pub const MAX_TENANT_FRAMES: usize = 64;

/// Whether a key holds one current value (superseding) or accumulates values (the wire's
/// `scope`: `single` or `multi`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = ClaimScope)]
pub enum Cardinality {
    /// One value at a time; a different value contradicts the old one.
    Single,
    /// Many values may hold at once.
    Multi,
}

impl Cardinality {
    /// The wire name used as the envelope's `scope`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Cardinality::Single => "single",
            Cardinality::Multi => "multi",
        }
    }
}

/// Qualifier rules for an entity claim (v2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct EntitySpec {
    pub(super) required: &'static [&'static str],
    optional: &'static [&'static str],
}

impl EntitySpec {
    pub(super) fn allows(&self, name: &str) -> bool {
        self.required.contains(&name) || self.optional.contains(&name)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct KeySpec {
    pub(super) cardinality: Cardinality,
    pub(super) entity: Option<EntitySpec>,
    builtin: bool,
}

const PRICING_SPEC: EntitySpec = EntitySpec {
    required: &["payment_method", "rate_type", "currency", "charge_unit"],
    optional: &["region", "customer_segment", "channel", "plan"],
};

pub(super) const BUILTIN_KEYS: &[(&str, Cardinality)] = &[
    ("identity.name", Cardinality::Single),
    ("employment.current_employer", Cardinality::Single),
    ("location.current_home", Cardinality::Single),
    ("billing.primary_payment_processor", Cardinality::Single),
    ("tools.used", Cardinality::Multi),
    ("skills", Cardinality::Multi),
    ("preferences", Cardinality::Multi),
    ("payment.processors_used", Cardinality::Multi),
];

pub(super) const PRICING_KEY: &str = "pricing.processing_rate";

const ALIASES: &[(&str, &str)] = &[
    ("name", "identity.name"),
    ("full_name", "identity.name"),
    ("employer", "employment.current_employer"),
    ("works_at", "employment.current_employer"),
    ("company", "employment.current_employer"),
    ("current_employer", "employment.current_employer"),
    ("home", "location.current_home"),
    ("home_location", "location.current_home"),
    ("current_home", "location.current_home"),
    ("primary_payment_processor", "billing.primary_payment_processor"),
    ("tools", "tools.used"),
    ("payment_processors", "payment.processors_used"),
];

/// The set of known claim keys (built-in plus tenant-defined) and their aliases, plus the open
/// attribute namespace `attr.*` (cardinality from the attribute registry) and a tenant's own
/// verb frames.
#[derive(Debug, Clone)]
pub struct Registry {
    keys: BTreeMap<String, KeySpec>,
    aliases: BTreeMap<String, String>,
    frames: Vec<Frame>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::builtin()
    }
}

impl Registry {
    /// The registry with only the built-in keys and aliases.
    pub fn builtin() -> Registry {
        let mut keys: BTreeMap<String, KeySpec> = BUILTIN_KEYS
            .iter()
            .map(|(k, c)| {
                let spec = KeySpec { cardinality: *c, entity: None, builtin: true };
                ((*k).to_string(), spec)
            })
            .collect();
        keys.insert(
            PRICING_KEY.to_string(),
            KeySpec { cardinality: Cardinality::Single, entity: Some(PRICING_SPEC), builtin: true },
        );
        let aliases = ALIASES.iter().map(|(a, c)| ((*a).to_string(), (*c).to_string())).collect();
        Registry { keys, aliases, frames: Vec::new() }
    }

    /// Adds the tenant config's `attribute_frames` (invalid entries ignored).
    pub fn with_tenant_frames(mut self, config: &Value) -> Registry {
        self.frames = tenant_frames(config, &self);
        self
    }

    /// The tenant's own verb frames, tried before the built-in ones.
    pub fn frames(&self) -> &[Frame] {
        &self.frames
    }

    /// Adds tenant keys from the tenant config's `claim_keys` object ({"ns.key": "single"|"multi"}); invalid entries ignored.
    pub fn with_tenant_keys(mut self, claim_keys: &Value) -> Registry {
        let Some(map) = claim_keys.as_object() else {
            return self;
        };
        let builtin = Registry::builtin();
        let mut added = 0usize;
        for (key, value) in map {
            if added >= MAX_TENANT_KEYS {
                break;
            }
            if let Ok(cardinality) = check_tenant_entry(&builtin, key, value) {
                let spec = KeySpec { cardinality, entity: None, builtin: false };
                self.keys.insert(key.clone(), spec);
                added += 1;
            }
        }
        self
    }

    /// Resolves a key or alias (case/whitespace-insensitive) to its canonical key and cardinality.
    pub fn resolve(&self, key: &str) -> Option<(String, Cardinality)> {
        self.lookup(key).map(|(k, spec)| (k.to_string(), spec.cardinality))
    }

    /// The declared keys a plain (v1) claim can use: built-ins and the tenant's, in key order
    /// (entity keys, which need v2 qualifiers, left out).
    pub fn scalar_keys(&self) -> Vec<&str> {
        self.keys.iter().filter(|(_, spec)| spec.entity.is_none()).map(|(k, _)| k.as_str()).collect()
    }

    /// True when the key (or alias) names a built-in claim key.
    pub fn is_builtin(&self, key: &str) -> bool {
        self.lookup(key).is_some_and(|(_, spec)| spec.builtin)
    }

    pub(super) fn lookup(&self, key: &str) -> Option<(Cow<'_, str>, Cow<'_, KeySpec>)> {
        let norm = normalize_key(key);
        let canonical = self.aliases.get(&norm).map(String::as_str).unwrap_or(&norm);
        if let Some((k, spec)) = self.keys.get_key_value(canonical) {
            return Some((Cow::Borrowed(k.as_str()), Cow::Borrowed(spec)));
        }
        // Standing instructions: one current rule per topic.
        if is_procedure_key(canonical) {
            let spec = KeySpec { cardinality: Cardinality::Single, entity: None, builtin: false };
            return Some((Cow::Owned(canonical.to_string()), Cow::Owned(spec)));
        }
        // Open attributes exist without being declared; only their cardinality is registered.
        is_open_key(canonical).then(|| {
            let cardinality =
                if attributes().accumulates(canonical) { Cardinality::Multi } else { Cardinality::Single };
            let spec = KeySpec { cardinality, entity: None, builtin: false };
            (Cow::Owned(canonical.to_string()), Cow::Owned(spec))
        })
    }
}

/// True for a standing instruction's topic key: `procedure.<slug>` (see `compile::procedures`).
pub fn is_procedure_key(key: &str) -> bool {
    key.len() <= 64
        && key.strip_prefix(PROCEDURE_PREFIX).is_some_and(|tail| {
            !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        })
}

fn normalize_key(key: &str) -> String {
    key.split_whitespace().collect::<Vec<_>>().join("_").to_lowercase()
}

/// True for dotted lower-case identifiers: `^[a-z0-9_]+(\.[a-z0-9_]+)+$`.
fn is_dotted_identifier(key: &str) -> bool {
    let mut parts = 0usize;
    for part in key.split('.') {
        let ok = !part.is_empty() && part.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !ok {
            return false;
        }
        parts += 1;
    }
    parts >= 2
}

fn check_tenant_entry(builtin: &Registry, key: &str, value: &Value) -> Result<Cardinality, String> {
    if !is_dotted_identifier(key) {
        return Err(format!(
            "claim key '{key}' must be a dotted lower-case identifier like 'ns.key' ([a-z0-9_] segments)"
        ));
    }
    if builtin.is_builtin(key) {
        return Err(format!("claim key '{key}' is built in and cannot be redefined"));
    }
    match value.as_str() {
        Some("single") => Ok(Cardinality::Single),
        Some("multi") => Ok(Cardinality::Multi),
        _ => Err(format!("claim key '{key}' must map to \"single\" or \"multi\"")),
    }
}

/// Validates a tenant claim_keys map for the admin API: Err(message naming the bad key) on any problem.
pub fn validate_tenant_claim_keys(claim_keys: &Value) -> Result<(), String> {
    let map = match claim_keys {
        // An absent config is the same as an empty one.
        Value::Null => return Ok(()),
        Value::Object(map) => map,
        _ => return Err("claim_keys must be an object of \"ns.key\": \"single\"|\"multi\"".into()),
    };
    if map.len() > MAX_TENANT_KEYS {
        let over = map.keys().nth(MAX_TENANT_KEYS).map(String::as_str).unwrap_or("");
        return Err(format!(
            "claim_keys has {} keys, at most {MAX_TENANT_KEYS} allowed (first over the limit: '{over}')",
            map.len()
        ));
    }
    let builtin = Registry::builtin();
    for (key, value) in map {
        check_tenant_entry(&builtin, key, value)?;
    }
    Ok(())
}

/// Reads a tenant's `attribute_frames` ([{pattern, key, event?}]); invalid entries are skipped.
fn tenant_frames(config: &Value, registry: &Registry) -> Vec<Frame> {
    let Some(list) = config.get("attribute_frames").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter().take(MAX_TENANT_FRAMES).filter_map(|v| parse_tenant_frame(v, registry).ok()).collect()
}

fn parse_tenant_frame(v: &Value, registry: &Registry) -> Result<Frame, String> {
    let spec: FrameSpec =
        serde_json::from_value(v.clone()).map_err(|e| format!("each frame is {{pattern, key, event?}}: {e}"))?;
    if spec.key != "link" && registry.resolve(&spec.key).is_none() && !is_open_key(&spec.key) {
        return Err(format!("key '{}' is neither a known claim key nor an attr.* key", spec.key));
    }
    compile(&spec, &attributes().diets)
}

/// Validates a tenant's `attribute_frames` for the admin API; Err names the bad entry.
pub fn validate_tenant_frames(v: &Value, registry: &Registry) -> Result<(), String> {
    let list = match v {
        Value::Null => return Ok(()),
        Value::Array(list) => list,
        _ => return Err("attribute_frames must be an array of {pattern, key, event?}".into()),
    };
    if list.len() > MAX_TENANT_FRAMES {
        return Err(format!("attribute_frames has {} entries, at most {MAX_TENANT_FRAMES} allowed", list.len()));
    }
    for (i, f) in list.iter().enumerate() {
        parse_tenant_frame(f, registry).map_err(|m| format!("attribute_frames[{i}]: {m}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_attribute_group_key_is_open_or_built_in() {
        let data: Value =
            serde_json::from_str(include_str!("attributes/attributes.json")).expect("attributes.json parses");
        for g in data["groups"].as_array().expect("groups") {
            let key = g["key"].as_str().expect("key");
            assert!(is_open_key(key) || Registry::builtin().is_builtin(key), "{key}");
        }
    }

    #[test]
    fn tenant_frames_are_checked_against_the_registry() {
        let r = Registry::builtin();
        assert!(validate_tenant_frames(
            &json!([{"pattern": "we bill through {name}", "key": "attr.billing_provider"}]),
            &r
        )
        .is_ok());
        let err = validate_tenant_frames(&json!([{"pattern": "x {value}", "key": "Bad Key"}]), &r).unwrap_err();
        assert!(err.contains("attribute_frames[0]"), "{err}");
        assert!(validate_tenant_frames(&json!({"a": 1}), &r).is_err());
        let frames = tenant_frames(
            &json!({"attribute_frames": [{"pattern": "we bill through {name}", "key": "attr.billing_provider"}]}),
            &r,
        );
        assert_eq!(frames.len(), 1);
    }
}
