//! Claim envelopes: parsing v1/v2 claims against the registry (`super::registry`).
//!
//! A claim is a structured statement carried by a memory (`employment.current_employer = "acme"`).
//! The registry decides which keys exist and whether they are single- or multi-valued; callers
//! never get to choose cardinality, so a bad envelope cannot turn a fact into a list or back.
//!
//! Choices made where the behavioural description is silent:
//! - Key lookup trims, lower-cases and turns internal whitespace runs into `_` (`"Full Name"` → `full_name`).
//! - `schema_version: null` counts as missing (→ 1); anything but the integers 1 and 2 rejects the claim.
//! - An unparsable `valid_from`/`valid_to` is ignored (treated as absent); a window with
//!   `valid_to <= valid_from` rejects the whole claim, since it can never hold.
//! - `confidence` outside [0, 1] or non-numeric is ignored; `source` blank or non-string is ignored.
//! - v1 envelopes never read `entity_key`/`qualifiers`, so the entity key `pricing.processing_rate`
//!   is only valid in v2. v2 envelopes may carry an entity and qualifiers on any key; only entity keys
//!   restrict qualifier names. Qualifier names are trimmed and lower-cased, values normalised like
//!   claim values; non-string or blank qualifier values, or names colliding after normalisation, reject.
//! - `entity_key` is normalised like a value, so bucket equality ignores case and spacing.
//! - A v2 claim without entity or qualifiers lands in the same bucket as a v1 claim of the same key.
//! - JSON-valued (entity) claims reject `null` and blank strings as values.
//! - `with_tenant_keys` keeps at most the first 64 valid entries (in the object's iteration order).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

pub use super::registry::{validate_tenant_claim_keys, Cardinality, Registry, MAX_TENANT_KEYS};
use crate::receipts::canonical::canonical_v1;

/// A parsed, validated claim with registry-derived cardinality.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// Envelope schema version (1 or 2).
    pub schema_version: u8,
    /// Canonical key.
    pub key: String,
    /// Normalised value (canonical JSON for JSON-valued entity claims).
    pub value: String,
    /// The value as it appeared in the envelope.
    pub raw_value: Value,
    /// Cardinality from the registry, never from the caller.
    pub cardinality: Cardinality,
    /// Normalised entity key (v2 only).
    pub entity_key: Option<String>,
    /// Normalised qualifiers (v2 only).
    pub qualifiers: BTreeMap<String, String>,
    /// Start of the claim's own validity window.
    pub valid_from: Option<DateTime<Utc>>,
    /// End (exclusive) of the claim's own validity window.
    pub valid_to: Option<DateTime<Utc>>,
    /// Confidence in [0, 1], if given.
    pub confidence: Option<f64>,
    /// Where the claim came from (e.g. "llm", "heuristic").
    pub source: Option<String>,
}

impl Claim {
    /// The contradiction bucket: key for v1, key + entity + canonical qualifiers for v2.
    pub fn bucket(&self) -> String {
        if self.entity_key.is_none() && self.qualifiers.is_empty() {
            return self.key.clone();
        }
        // A JSON array is an unambiguous encoding; BTreeMap serialises in sorted order.
        serde_json::json!([self.key, self.entity_key, self.qualifiers]).to_string()
    }

    /// The envelope stored under memory.metadata.claim (canonical key, normalised value, cardinality as "scope").
    pub fn to_envelope(&self) -> Value {
        let mut env = Map::new();
        env.insert("schema_version".into(), Value::from(self.schema_version));
        env.insert("key".into(), Value::String(self.key.clone()));
        // JSON-valued claims keep their JSON so the envelope re-parses to the same canonical value.
        let value = if canonical_v1(&self.raw_value) == self.value {
            self.raw_value.clone()
        } else {
            Value::String(self.value.clone())
        };
        env.insert("value".into(), value);
        env.insert("scope".into(), Value::String(self.cardinality.as_str().into()));
        if let Some(entity) = &self.entity_key {
            env.insert("entity_key".into(), Value::String(entity.clone()));
        }
        if !self.qualifiers.is_empty() {
            let q = self.qualifiers.iter().map(|(k, v)| (k.clone(), Value::String(v.clone())));
            env.insert("qualifiers".into(), Value::Object(q.collect()));
        }
        if let Some(t) = self.valid_from {
            env.insert("valid_from".into(), Value::String(t.to_rfc3339()));
        }
        if let Some(t) = self.valid_to {
            env.insert("valid_to".into(), Value::String(t.to_rfc3339()));
        }
        if let Some(c) = self.confidence {
            env.insert("confidence".into(), Value::from(c));
        }
        if let Some(s) = &self.source {
            env.insert("source".into(), Value::String(s.clone()));
        }
        Value::Object(env)
    }
}

/// Normalises a claim value: trimmed, lower-cased, internal whitespace collapsed.
pub fn normalize_value(v: &str) -> String {
    v.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

fn scalar_value(v: &Value) -> Option<String> {
    let s = match v {
        Value::String(s) => normalize_value(s),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => return None,
    };
    (!s.is_empty()).then_some(s)
}

fn json_value(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) if s.trim().is_empty() => None,
        other => Some(canonical_v1(other)),
    }
}

fn parse_time(v: Option<&Value>) -> Option<DateTime<Utc>> {
    let s = v?.as_str()?;
    DateTime::parse_from_rfc3339(s.trim()).ok().map(|t| t.with_timezone(&Utc))
}

/// Reads v2 `entity_key` and `qualifiers`; outer None means the envelope is invalid.
fn parse_entity(obj: &Map<String, Value>) -> Option<(Option<String>, BTreeMap<String, String>)> {
    let entity = match obj.get("entity_key") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            let entity = normalize_value(s);
            if entity.is_empty() {
                return None;
            }
            Some(entity)
        }
        Some(_) => return None,
    };
    let mut qualifiers = BTreeMap::new();
    match obj.get("qualifiers") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (name, value) in map {
                let name = name.trim().to_lowercase();
                let value = normalize_value(value.as_str()?);
                if name.is_empty() || value.is_empty() || qualifiers.insert(name, value).is_some() {
                    return None;
                }
            }
        }
        Some(_) => return None,
    }
    Some((entity, qualifiers))
}

/// Parses a claim envelope (v1 or v2); None for anything invalid (never panics, never errors).
pub fn parse_claim(envelope: &Value, registry: &Registry) -> Option<Claim> {
    let obj = envelope.as_object()?;
    let schema_version: u8 = match obj.get("schema_version") {
        None | Some(Value::Null) => 1,
        Some(v) => match v.as_u64()? {
            1 => 1,
            2 => 2,
            _ => return None,
        },
    };
    let (key, spec) = registry.lookup(obj.get("key")?.as_str()?)?;
    let raw_value = obj.get("value")?.clone();
    let value = match &spec.entity {
        Some(_) => json_value(&raw_value)?,
        None => scalar_value(&raw_value)?,
    };
    let (entity_key, qualifiers) = if schema_version == 2 { parse_entity(obj)? } else { (None, BTreeMap::new()) };
    if let Some(entity_spec) = &spec.entity {
        entity_key.as_ref()?;
        let missing = entity_spec.required.iter().any(|q| !qualifiers.contains_key(*q));
        let unknown = qualifiers.keys().any(|q| !entity_spec.allows(q));
        if missing || unknown {
            return None;
        }
    }
    let valid_from = parse_time(obj.get("valid_from"));
    let valid_to = parse_time(obj.get("valid_to"));
    if let (Some(from), Some(to)) = (valid_from, valid_to) {
        if to <= from {
            return None;
        }
    }
    let confidence = obj.get("confidence").and_then(Value::as_f64).filter(|c| c.is_finite() && (0.0..=1.0).contains(c));
    let source = obj.get("source").and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(String::from);
    Some(Claim {
        schema_version,
        key: key.to_string(),
        value,
        raw_value,
        cardinality: spec.cardinality,
        entity_key,
        qualifiers,
        valid_from,
        valid_to,
        confidence,
        source,
    })
}

/// Builds a v1 claim from a compiler-detected key and raw value; None if the key is unknown.
pub fn claim_from_parts(key: &str, value: &str, registry: &Registry, source: &str) -> Option<Claim> {
    let mut env = Map::new();
    env.insert("schema_version".into(), Value::from(1u8));
    env.insert("key".into(), Value::String(key.to_string()));
    env.insert("value".into(), Value::String(value.to_string()));
    env.insert("source".into(), Value::String(source.to_string()));
    // Entity keys need v2 fields, so the v1 parse rejects them here as intended.
    parse_claim(&Value::Object(env), registry)
}

#[cfg(test)]
#[allow(clippy::expect_used)] // a failed expectation is the test failure
mod tests {
    use super::*;
    use crate::compile::registry::{BUILTIN_KEYS, PRICING_KEY};
    use proptest::prelude::*;
    use serde_json::json;

    fn reg() -> Registry {
        Registry::builtin()
    }

    fn pricing(qualifiers: Value, value: Value) -> Value {
        json!({"schema_version": 2, "key": "pricing.processing_rate", "entity_key": "Stripe",
               "qualifiers": qualifiers, "value": value, "source": "llm"})
    }

    fn base_qualifiers() -> Value {
        json!({"payment_method": "card", "rate_type": "percent", "currency": "USD", "charge_unit": "transaction"})
    }

    #[test]
    fn builtin_keys_resolve_with_their_cardinality() {
        let r = reg();
        for (key, card) in BUILTIN_KEYS {
            assert_eq!(r.resolve(key), Some((key.to_string(), *card)), "{key}");
            assert!(r.is_builtin(key));
        }
        assert_eq!(r.resolve(PRICING_KEY), Some((PRICING_KEY.to_string(), Cardinality::Single)));
        assert_eq!(r.resolve("nope.key"), None);
        assert_eq!(r.resolve(""), None);
    }

    #[test]
    fn every_alias_resolves_to_its_canonical_key() {
        let r = reg();
        let expected = [
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
        for (alias, canonical) in expected {
            let (k, _) = r.resolve(alias).unwrap_or_else(|| panic!("alias {alias}"));
            assert_eq!(k, canonical);
            assert!(r.is_builtin(alias));
        }
        assert_eq!(r.resolve("tools").map(|(_, c)| c), Some(Cardinality::Multi));
    }

    #[test]
    fn resolve_ignores_case_and_whitespace() {
        let r = reg();
        let employer = Some(("employment.current_employer".to_string(), Cardinality::Single));
        assert_eq!(r.resolve("  Employment.Current_Employer "), employer);
        assert_eq!(r.resolve("EMPLOYER"), employer);
        assert_eq!(r.resolve("works at"), employer);
        assert_eq!(r.resolve(" Full  Name\t").map(|(k, _)| k), Some("identity.name".into()));
    }

    #[test]
    fn tenant_keys_are_added_and_invalid_ones_skipped() {
        let cfg = json!({
            "crm.deal_stage": "single", "crm.contacts": "multi",
            "Bad.Key": "single", "nodot": "multi", "identity.name": "multi",
            "crm.other": "several", "crm.num": 1
        });
        let r = reg().with_tenant_keys(&cfg);
        assert_eq!(r.resolve("crm.deal_stage"), Some(("crm.deal_stage".into(), Cardinality::Single)));
        assert_eq!(r.resolve("CRM.Contacts"), Some(("crm.contacts".into(), Cardinality::Multi)));
        assert!(!r.is_builtin("crm.deal_stage"));
        // A built-in key keeps its built-in cardinality.
        assert_eq!(r.resolve("identity.name").map(|(_, c)| c), Some(Cardinality::Single));
        for bad in ["nodot", "crm.other", "crm.num"] {
            assert_eq!(r.resolve(bad), None, "{bad}");
        }
        // "Bad.Key" was rejected, so its lower-cased lookup finds nothing either.
        assert_eq!(r.resolve("bad.key"), None);
        assert_eq!(reg().with_tenant_keys(&json!("x")).resolve("crm.deal_stage"), None);
    }

    #[test]
    fn with_tenant_keys_caps_at_64() {
        let map: Map<String, Value> = (0..70).map(|i| (format!("t.k{i:03}"), json!("single"))).collect();
        let r = reg().with_tenant_keys(&Value::Object(map));
        let count = (0..70).filter(|i| r.resolve(&format!("t.k{i:03}")).is_some()).count();
        assert_eq!(count, MAX_TENANT_KEYS);
    }

    #[test]
    fn validate_accepts_good_maps() {
        assert_eq!(validate_tenant_claim_keys(&json!({"crm.stage": "single", "a.b.c_1": "multi"})), Ok(()));
        assert_eq!(validate_tenant_claim_keys(&json!({})), Ok(()));
        assert_eq!(validate_tenant_claim_keys(&Value::Null), Ok(()));
        let map: Map<String, Value> = (0..64).map(|i| (format!("t.k{i}"), json!("multi"))).collect();
        assert_eq!(validate_tenant_claim_keys(&Value::Object(map)), Ok(()));
    }

    #[test]
    fn validate_rejects_with_message_naming_the_key() {
        let cases = [
            (json!({"identity.name": "single"}), "identity.name"),
            (json!({"pricing.processing_rate": "single"}), "pricing.processing_rate"),
            (json!({"employer": "single"}), "employer"),
            (json!({"Crm.Stage": "single"}), "Crm.Stage"),
            (json!({"crm.": "single"}), "crm."),
            (json!({"crm stage.x": "single"}), "crm stage.x"),
            (json!({"nodot": "multi"}), "nodot"),
            (json!({"crm.stage": "many"}), "crm.stage"),
            (json!({"crm.stage": true}), "crm.stage"),
        ];
        for (cfg, key) in cases {
            let err = validate_tenant_claim_keys(&cfg).expect_err(key);
            assert!(err.contains(&format!("'{key}'")), "{err}");
        }
        assert!(validate_tenant_claim_keys(&json!(["a.b"])).is_err());
    }

    #[test]
    fn validate_rejects_more_than_64_keys() {
        let map: Map<String, Value> = (0..65).map(|i| (format!("t.k{i:03}"), json!("single"))).collect();
        let err = validate_tenant_claim_keys(&Value::Object(map)).expect_err("65 keys");
        assert!(err.contains("65") && err.contains("'t.k064'"), "{err}");
    }

    #[test]
    fn parse_v1_claim() {
        let env = json!({"schema_version": 1, "key": "employer", "value": "  Acme   Corp ",
            "valid_from": "2023-01-01T00:00:00Z", "confidence": 0.9, "source": "llm"});
        let c = parse_claim(&env, &reg()).expect("valid");
        assert_eq!(c.schema_version, 1);
        assert_eq!(c.key, "employment.current_employer");
        assert_eq!(c.value, "acme corp");
        assert_eq!(c.raw_value, json!("  Acme   Corp "));
        assert_eq!(c.cardinality, Cardinality::Single);
        assert_eq!(c.valid_from.map(|t| t.to_rfc3339()), Some("2023-01-01T00:00:00+00:00".into()));
        assert_eq!(c.valid_to, None);
        assert_eq!(c.confidence, Some(0.9));
        assert_eq!(c.source.as_deref(), Some("llm"));
        assert_eq!(c.bucket(), "employment.current_employer");
    }

    #[test]
    fn schema_version_missing_is_v1_and_bad_versions_reject() {
        let r = reg();
        let c = parse_claim(&json!({"key": "home", "value": "Berlin"}), &r).expect("v1");
        assert_eq!(c.schema_version, 1);
        for v in [json!(0), json!(3), json!("1"), json!(1.5), json!(-1), json!([1])] {
            let env = json!({"schema_version": v, "key": "home", "value": "Berlin"});
            assert_eq!(parse_claim(&env, &r), None, "{v}");
        }
    }

    #[test]
    fn invalid_envelopes_reject() {
        let r = reg();
        let bad = [
            json!({"key": "unknown.key", "value": "x"}),
            json!({"key": "employer", "value": "   "}),
            json!({"key": "employer", "value": ""}),
            json!({"key": "employer"}),
            json!({"key": "employer", "value": null}),
            json!({"key": "employer", "value": {"a": 1}}),
            json!({"key": "employer", "value": ["a"]}),
            json!({"key": 7, "value": "x"}),
            json!({"value": "x"}),
            json!("employer"),
            json!(null),
            // Window that can never hold.
            json!({"key": "employer", "value": "x", "valid_from": "2024-01-01T00:00:00Z", "valid_to": "2024-01-01T00:00:00Z"}),
        ];
        for env in bad {
            assert_eq!(parse_claim(&env, &r), None, "{env}");
        }
    }

    #[test]
    fn scalar_values_and_lenient_optional_fields() {
        let r = reg();
        let c = parse_claim(&json!({"key": "skills", "value": 42}), &r).expect("number");
        assert_eq!(c.value, "42");
        let c = parse_claim(&json!({"key": "skills", "value": true}), &r).expect("bool");
        assert_eq!(c.value, "true");
        let env = json!({"key": "skills", "value": "Rust", "valid_from": "yesterday",
            "valid_to": "2030-01-01T00:00:00+02:00", "confidence": 1.5, "source": "  "});
        let c = parse_claim(&env, &r).expect("lenient");
        assert_eq!(c.valid_from, None);
        assert_eq!(c.valid_to.map(|t| t.to_rfc3339()), Some("2029-12-31T22:00:00+00:00".into()));
        assert_eq!(c.confidence, None);
        assert_eq!(c.source, None);
    }

    #[test]
    fn caller_scope_is_ignored() {
        let r = reg();
        let c = parse_claim(&json!({"key": "tools", "value": "git", "scope": "single"}), &r).expect("ok");
        assert_eq!(c.cardinality, Cardinality::Multi);
        let c = parse_claim(&json!({"key": "employer", "value": "x", "scope": "multi"}), &r).expect("ok");
        assert_eq!(c.cardinality, Cardinality::Single);
        assert_eq!(c.to_envelope()["scope"], json!("single"));
    }

    #[test]
    fn v2_pricing_claim_parses() {
        let mut q = base_qualifiers();
        q["region"] = json!(" EU ");
        let c = parse_claim(&pricing(q, json!({"percent": 2.9, "fixed": 30})), &reg()).expect("v2");
        assert_eq!(c.schema_version, 2);
        assert_eq!(c.key, PRICING_KEY);
        assert_eq!(c.cardinality, Cardinality::Single);
        assert_eq!(c.entity_key.as_deref(), Some("stripe"));
        assert_eq!(c.qualifiers.get("currency").map(String::as_str), Some("usd"));
        assert_eq!(c.qualifiers.get("region").map(String::as_str), Some("eu"));
        assert_eq!(c.value, r#"{"fixed":30,"percent":2.9}"#);
        assert!(c.bucket().contains("stripe") && c.bucket().starts_with('['));
    }

    #[test]
    fn v2_pricing_rejects_bad_entity_or_qualifiers() {
        let r = reg();
        let value = json!({"percent": 2.9});
        for missing in ["payment_method", "rate_type", "currency", "charge_unit"] {
            let mut q = base_qualifiers();
            q.as_object_mut().map(|m| m.remove(missing));
            assert_eq!(parse_claim(&pricing(q, value.clone()), &r), None, "{missing}");
        }
        let mut q = base_qualifiers();
        q["color"] = json!("blue");
        assert_eq!(parse_claim(&pricing(q, value.clone()), &r), None, "unknown qualifier");
        let mut q = base_qualifiers();
        q["currency"] = json!(5);
        assert_eq!(parse_claim(&pricing(q, value.clone()), &r), None, "non-string qualifier");
        let mut env = pricing(base_qualifiers(), value.clone());
        env["entity_key"] = json!("  ");
        assert_eq!(parse_claim(&env, &r), None, "blank entity");
        env.as_object_mut().map(|m| m.remove("entity_key"));
        assert_eq!(parse_claim(&env, &r), None, "missing entity");
        let mut env = pricing(base_qualifiers(), value.clone());
        env["schema_version"] = json!(1);
        assert_eq!(parse_claim(&env, &r), None, "v1 cannot carry an entity claim");
        assert_eq!(parse_claim(&pricing(base_qualifiers(), Value::Null), &r), None, "null value");
        assert_eq!(parse_claim(&pricing(json!("card"), value), &r), None, "qualifiers not an object");
    }

    #[test]
    fn v2_pricing_value_is_canonical_json() {
        let r = reg();
        let a = parse_claim(&pricing(base_qualifiers(), json!({"b": [1, {"y": 2, "x": 1}], "a": "X"})), &r);
        let b_val: Value = serde_json::from_str(r#"{"a":"X","b":[1,{"x":1,"y":2}]}"#).expect("json");
        let b = parse_claim(&pricing(base_qualifiers(), b_val), &r);
        let (a, b) = (a.expect("a"), b.expect("b"));
        assert_eq!(a.value, b.value);
        assert_eq!(a.value, r#"{"a":"X","b":[1,{"x":1,"y":2}]}"#);
        assert_eq!(a.bucket(), b.bucket());
        let mut q = base_qualifiers();
        q["currency"] = json!("EUR");
        let c = parse_claim(&pricing(q, json!(1)), &r).expect("c");
        assert_ne!(a.bucket(), c.bucket(), "qualifiers split buckets");
    }

    #[test]
    fn v2_plain_claim_shares_v1_bucket() {
        let r = reg();
        let v1 = parse_claim(&json!({"key": "employer", "value": "a"}), &r).expect("v1");
        let v2 = parse_claim(&json!({"schema_version": 2, "key": "employer", "value": "b"}), &r).expect("v2");
        assert_eq!(v1.bucket(), v2.bucket());
        let v2e = json!({"schema_version": 2, "key": "employer", "value": "b", "entity_key": "bob"});
        assert_ne!(parse_claim(&v2e, &r).expect("v2e").bucket(), v1.bucket());
    }

    #[test]
    fn envelope_round_trips() {
        let r = reg();
        let envs = [
            json!({"key": "Works At", "value": " Acme ", "valid_from": "2020-01-01T00:00:00Z",
                   "valid_to": "2022-01-01T00:00:00Z", "confidence": 0.5, "source": "llm", "scope": "multi"}),
            json!({"key": "skills", "value": 7}),
            pricing(base_qualifiers(), json!({"z": 1, "a": [true, null]})),
            pricing(base_qualifiers(), json!("2.9% + 30c")),
        ];
        for env in envs {
            let c = parse_claim(&env, &r).expect("parse");
            let out = c.to_envelope();
            assert_eq!(out["key"], json!(c.key));
            assert_eq!(out["scope"], json!(c.cardinality.as_str()));
            let again = parse_claim(&out, &r).expect("reparse");
            assert_eq!((&again.key, &again.value, again.bucket()), (&c.key, &c.value, c.bucket()));
            assert_eq!((again.valid_from, again.valid_to, again.confidence), (c.valid_from, c.valid_to, c.confidence));
            assert_eq!(again.to_envelope(), out);
        }
    }

    #[test]
    fn claim_from_parts_builds_v1() {
        let r = reg();
        let c = claim_from_parts("Employer", "ACME  Inc", &r, "heuristic").expect("known");
        assert_eq!(
            (c.schema_version, c.key.as_str(), c.value.as_str()),
            (1, "employment.current_employer", "acme inc")
        );
        assert_eq!(c.source.as_deref(), Some("heuristic"));
        assert_eq!(claim_from_parts("mystery", "x", &r, "h"), None);
        assert_eq!(claim_from_parts("employer", " ", &r, "h"), None);
        assert_eq!(claim_from_parts(PRICING_KEY, "2.9%", &r, "h"), None);
    }

    #[test]
    fn normalize_value_trims_lowercases_and_collapses() {
        assert_eq!(normalize_value("  Acme \t Corp\n"), "acme corp");
        assert_eq!(normalize_value("ÄRGER"), "ärger");
        assert_eq!(normalize_value("   "), "");
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            prop::sample::select(vec![
                "employer",
                "tools",
                "pricing.processing_rate",
                "2024-01-01T00:00:00Z",
                "",
                " x ",
                "card",
            ])
            .prop_map(Value::from),
            ".{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop::sample::select(vec![
                        "schema_version",
                        "key",
                        "value",
                        "entity_key",
                        "qualifiers",
                        "valid_from",
                        "valid_to",
                        "confidence",
                        "source",
                        "currency",
                        "rate_type",
                    ])
                    .prop_map(String::from),
                    inner,
                    0..8,
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn parse_claim_never_panics_and_round_trips(env in arb_json()) {
            let r = reg();
            if let Some(c) = parse_claim(&env, &r) {
                prop_assert!(!c.value.is_empty());
                let again = parse_claim(&c.to_envelope(), &r);
                prop_assert_eq!(again.map(|a| (a.bucket(), a.key, a.value)).map(|(b, k, v)| (k, v, b)), Some((c.key.clone(), c.value.clone(), c.bucket())));
            }
        }
    }
}
