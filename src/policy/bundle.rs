//! Policy bundles: strict parsing of the YAML/JSON document, its normalised JSON form and its content hash.
//!
//! A bundle is parsed once into typed rules, so the evaluator never meets an unknown predicate or a wrong type:
//! everything the spec calls a load error is refused here with a message naming the field (and rule id).
//!
//! Hashed form (spec §5.3). Upstream's defaults for absent fields are not published, so these are mnemo's choices,
//! matching a Python loader with `metadata: dict = {}`, `description: str | None = None` and `when` kept as the
//! author's mapping: `{"version":1,"metadata":{…},"rules":[{"id","description","when","action"}]}` where an absent or
//! null `metadata` is `{}`, an absent `description` is `null`, and `when` holds only the predicates written, values
//! verbatim (list order and duplicates kept, no label folding). Key order, YAML vs JSON, comments, anchors and quoting
//! therefore never change the hash; rule order does.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{json, Map, Value};
use thiserror::Error;

use super::document::{read_document, DocumentError};
use crate::receipts::canonical::{canonical_v1, sha256_hex};

/// Largest bundle text accepted (bundles are a few KiB; this only bounds parser work on hostile input).
pub const MAX_BUNDLE_BYTES: usize = 1 << 20;

const TOP_LEVEL_KEYS: [&str; 3] = ["version", "metadata", "rules"];
const RULE_KEYS: [&str; 4] = ["id", "description", "when", "action"];
const PREDICATES: [&str; 6] = [
    "memory_has_any_label",
    "memory_has_all_labels",
    "caller_type",
    "caller_id",
    "caller_type_in",
    "caller_type_not_in",
];

/// Why a bundle could not be loaded (→ 400 on upload, `unreplayable.invalid_snapshot` on replay).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BundleError {
    /// The text is larger than [`MAX_BUNDLE_BYTES`].
    #[error("policy bundle is {size} bytes; at most {max} are allowed")]
    TooLarge { size: usize, max: usize },
    /// The text is neither JSON nor YAML; carries the YAML parser's message.
    #[error("policy bundle is not valid YAML or JSON: {0}")]
    Syntax(String),
    /// The document parsed but breaks the bundle schema; `at` names the field, e.g. `rules[1] "deny-pii".when`.
    #[error("invalid policy bundle: {at}: {message}")]
    Invalid { at: String, message: String },
}

/// What a matching rule does to a memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Drop the memory from the candidate pools (enforce mode).
    Deny,
    /// Replace the memory's text with the redaction marker (enforce mode).
    Redact,
}

impl Action {
    /// The wire spelling: `"deny"` or `"redact"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Deny => "deny",
            Action::Redact => "redact",
        }
    }
}

/// The `when:` block of a rule: at least one predicate, all AND-ed. Only the bundle parser builds one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct When {
    pub(super) memory_has_any_label: Option<Vec<String>>,
    pub(super) memory_has_all_labels: Option<Vec<String>>,
    pub(super) caller_type: Option<String>,
    pub(super) caller_id: Option<String>,
    pub(super) caller_type_in: Option<Vec<String>>,
    pub(super) caller_type_not_in: Option<Vec<String>>,
}

impl When {
    /// The predicates as written, as a JSON object (absent predicates are left out).
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        let lists = [
            ("memory_has_any_label", &self.memory_has_any_label),
            ("memory_has_all_labels", &self.memory_has_all_labels),
            ("caller_type_in", &self.caller_type_in),
            ("caller_type_not_in", &self.caller_type_not_in),
        ];
        for (key, list) in lists {
            if let Some(list) = list {
                map.insert(key.to_string(), json!(list));
            }
        }
        for (key, value) in [("caller_type", &self.caller_type), ("caller_id", &self.caller_id)] {
            if let Some(value) = value {
                map.insert(key.to_string(), json!(value));
            }
        }
        Value::Object(map)
    }
}

/// One validated rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    id: String,
    description: Option<String>,
    when: When,
    action: Action,
}

impl Rule {
    /// The rule id (unique within its bundle, non-blank).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The optional human description.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The rule's predicates.
    pub fn when(&self) -> &When {
        &self.when
    }

    /// What the rule does when it fires.
    pub fn action(&self) -> Action {
        self.action
    }

    /// The rule in normalised JSON: `{id, description, when, action}`.
    pub fn to_json(&self) -> Value {
        json!({"id": self.id, "description": self.description, "when": self.when.to_json(), "action": self.action})
    }
}

/// A validated policy bundle (`version: 1`).
#[derive(Debug, Clone, PartialEq)]
pub struct Bundle {
    metadata: Map<String, Value>,
    rules: Vec<Rule>,
}

impl Bundle {
    /// Parses and validates bundle text, JSON or YAML.
    pub fn parse(text: &str) -> Result<Self, BundleError> {
        let doc = read_document(text, MAX_BUNDLE_BYTES).map_err(|e| match e {
            DocumentError::TooLarge { size, max } => BundleError::TooLarge { size, max },
            DocumentError::Syntax(message) => BundleError::Syntax(message),
        })?;
        Self::from_value(&doc)
    }

    /// Validates an already-parsed document (e.g. a JSON request body).
    pub fn from_value(doc: &Value) -> Result<Self, BundleError> {
        let top = doc
            .as_object()
            .ok_or_else(|| invalid("bundle", format!("expected a mapping at the top level, got {}", type_name(doc))))?;
        reject_unknown_keys(top, &TOP_LEVEL_KEYS, "bundle")?;

        match top.get("version") {
            None => return Err(invalid("version", "is required (version: 1)")),
            // as_i64 is None for floats and booleans, so only the integer 1 passes.
            Some(v) if v.as_i64() == Some(1) => {}
            Some(v) => return Err(invalid("version", format!("unsupported version {v}; only 1 is supported"))),
        }
        let metadata = match top.get("metadata") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(map)) => map.clone(),
            Some(other) => return Err(invalid("metadata", format!("expected a mapping, got {}", type_name(other)))),
        };
        let items = match top.get("rules") {
            None => return Err(invalid("rules", "is required (a list of rules; it may be empty)")),
            Some(Value::Array(items)) => items,
            Some(other) => return Err(invalid("rules", format!("expected a list, got {}", type_name(other)))),
        };

        let mut rules = Vec::with_capacity(items.len());
        let mut ids = BTreeSet::new();
        for (index, item) in items.iter().enumerate() {
            let rule = parse_rule(item, index)?;
            if !ids.insert(rule.id.clone()) {
                return Err(invalid(format!("rules[{index}].id"), format!("duplicate rule id {:?}", rule.id)));
            }
            rules.push(rule);
        }
        Ok(Bundle { metadata, rules })
    }

    /// The free-form `metadata` mapping (empty when absent).
    pub fn metadata(&self) -> &Map<String, Value> {
        &self.metadata
    }

    /// The rules in declaration order (first match wins).
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The normalised bundle as JSON: `{version: 1, metadata, rules: [{id, description, when, action}]}`.
    pub fn to_json(&self) -> Value {
        let rules: Vec<Value> = self.rules.iter().map(Rule::to_json).collect();
        json!({"version": 1, "metadata": self.metadata, "rules": rules})
    }

    /// The canonical-v1 text of [`Bundle::to_json`] (what [`Bundle::hash`] digests).
    pub fn canonical(&self) -> String {
        canonical_v1(&self.to_json())
    }

    /// Lower-case hex SHA-256 of the canonical JSON: the bundle's content address.
    pub fn hash(&self) -> String {
        sha256_hex(self.canonical().as_bytes())
    }
}

fn parse_rule(item: &Value, index: usize) -> Result<Rule, BundleError> {
    let at = format!("rules[{index}]");
    let map = item.as_object().ok_or_else(|| invalid(&at, format!("expected a mapping, got {}", type_name(item))))?;
    let id = match map.get("id") {
        None => return Err(invalid(format!("{at}.id"), "is required")),
        Some(v) => non_blank_string(v, &format!("{at}.id"))?,
    };
    // From here on messages carry the id, which is what an operator searches their YAML for.
    let at = format!("{at} {id:?}");
    reject_unknown_keys(map, &RULE_KEYS, &at)?;

    let description = match map.get("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(invalid(format!("{at}.description"), format!("expected a string, got {}", type_name(other))))
        }
    };
    let when = match map.get("when") {
        None => return Err(invalid(format!("{at}.when"), "is required (at least one predicate)")),
        Some(v) => parse_when(v, &format!("{at}.when"))?,
    };
    let action = match map.get("action") {
        None => return Err(invalid(format!("{at}.action"), "is required (deny or redact)")),
        Some(Value::String(s)) if s == "deny" => Action::Deny,
        Some(Value::String(s)) if s == "redact" => Action::Redact,
        Some(other) => return Err(invalid(format!("{at}.action"), format!("expected deny or redact, got {other}"))),
    };
    Ok(Rule { id, description, when, action })
}

fn parse_when(value: &Value, at: &str) -> Result<When, BundleError> {
    let map = value
        .as_object()
        .ok_or_else(|| invalid(at, format!("expected a mapping of predicates, got {}", type_name(value))))?;
    if map.is_empty() {
        return Err(invalid(at, format!("needs at least one predicate ({})", PREDICATES.join(", "))));
    }
    let mut when = When {
        memory_has_any_label: None,
        memory_has_all_labels: None,
        caller_type: None,
        caller_id: None,
        caller_type_in: None,
        caller_type_not_in: None,
    };
    for (key, v) in map {
        let key_at = format!("{at}.{key}");
        match key.as_str() {
            "memory_has_any_label" => when.memory_has_any_label = Some(string_list(v, &key_at)?),
            "memory_has_all_labels" => when.memory_has_all_labels = Some(string_list(v, &key_at)?),
            "caller_type_in" => when.caller_type_in = Some(string_list(v, &key_at)?),
            "caller_type_not_in" => when.caller_type_not_in = Some(string_list(v, &key_at)?),
            "caller_type" => when.caller_type = Some(non_blank_string(v, &key_at)?),
            "caller_id" => when.caller_id = Some(non_blank_string(v, &key_at)?),
            _ => {
                return Err(invalid(key_at, format!("unknown predicate; known predicates: {}", PREDICATES.join(", "))))
            }
        }
    }
    Ok(when)
}

/// A non-empty list of non-blank strings.
fn string_list(value: &Value, at: &str) -> Result<Vec<String>, BundleError> {
    let items = value
        .as_array()
        .ok_or_else(|| invalid(at, format!("expected a non-empty list of strings, got {}", type_name(value))))?;
    if items.is_empty() {
        return Err(invalid(at, "expected a non-empty list of strings, got an empty list"));
    }
    items.iter().enumerate().map(|(i, item)| non_blank_string(item, &format!("{at}[{i}]"))).collect()
}

/// A string with at least one non-whitespace character, kept verbatim.
fn non_blank_string(value: &Value, at: &str) -> Result<String, BundleError> {
    match value {
        Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
        Value::String(_) => Err(invalid(at, "expected a non-empty string, got a blank one")),
        other => Err(invalid(at, format!("expected a non-empty string, got {}", type_name(other)))),
    }
}

fn reject_unknown_keys(map: &Map<String, Value>, allowed: &[&str], at: &str) -> Result<(), BundleError> {
    let unknown: Vec<String> =
        map.keys().filter(|k| !allowed.contains(&k.as_str())).map(|k| format!("{k:?}")).collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(invalid(at, format!("unknown key(s) {}; allowed keys: {}", unknown.join(", "), allowed.join(", "))))
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

fn invalid(at: impl Into<String>, message: impl Into<String>) -> BundleError {
    BundleError::Invalid { at: at.into(), message: message.into() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The example bundle from the upstream docs.
    const DOC_YAML: &str = r#"version: 1
metadata:
  description: "Production policy v3"
  authored_by: "security-team@example.com"
rules:
  - id: deny-pii-for-marketing-tools
    description: "PII memories cannot be read by marketing tools"
    when:
      memory_has_any_label: [pii, sensitive_personal]
      caller_type: marketing_tool
    action: deny

  - id: redact-secrets-for-non-admin
    when:
      memory_has_any_label: [secret, api_key]
      caller_type_not_in: [admin, security]
    action: redact
"#;

    /// The same bundle as JSON, every mapping's keys in a different order, one extra null description.
    const DOC_JSON: &str = r#"{
	"rules": [
		{"action": "deny", "when": {"caller_type": "marketing_tool", "memory_has_any_label": ["pii", "sensitive_personal"]},
		 "description": "PII memories cannot be read by marketing tools", "id": "deny-pii-for-marketing-tools"},
		{"when": {"caller_type_not_in": ["admin", "security"], "memory_has_any_label": ["secret", "api_key"]},
		 "id": "redact-secrets-for-non-admin", "action": "redact", "description": null}
	],
	"metadata": {"authored_by": "security-team@example.com", "description": "Production policy v3"},
	"version": 1
}"#;

    /// Golden values computed independently with Python (PyYAML + json.dumps(sort_keys=True,
    /// separators=(",", ":"), ensure_ascii=False) + hashlib.sha256) on the same documents.
    const DOC_CANONICAL: &str = r#"{"metadata":{"authored_by":"security-team@example.com","description":"Production policy v3"},"rules":[{"action":"deny","description":"PII memories cannot be read by marketing tools","id":"deny-pii-for-marketing-tools","when":{"caller_type":"marketing_tool","memory_has_any_label":["pii","sensitive_personal"]}},{"action":"redact","description":null,"id":"redact-secrets-for-non-admin","when":{"caller_type_not_in":["admin","security"],"memory_has_any_label":["secret","api_key"]}}],"version":1}"#;
    const DOC_HASH: &str = "c6c50d2bd90575a0695618b01ce5ac8d8093092fc2de8fad30ad5ff1453cdbf5";

    fn invalid_at(text: &str) -> (String, String) {
        match Bundle::parse(text) {
            Err(BundleError::Invalid { at, message }) => (at, message),
            other => panic!("expected an Invalid error for {text:?}, got {other:?}"),
        }
    }

    fn rule_yaml(rule_body: &str) -> String {
        format!("version: 1\nrules:\n  - id: r1\n{rule_body}")
    }

    #[test]
    fn parses_the_documented_example() {
        let b = Bundle::parse(DOC_YAML).unwrap();
        assert_eq!(b.rules().len(), 2);
        let r0 = &b.rules()[0];
        assert_eq!(r0.id(), "deny-pii-for-marketing-tools");
        assert_eq!(r0.action(), Action::Deny);
        assert_eq!(r0.description(), Some("PII memories cannot be read by marketing tools"));
        assert_eq!(r0.when().memory_has_any_label, Some(vec!["pii".to_string(), "sensitive_personal".into()]));
        assert_eq!(r0.when().caller_type.as_deref(), Some("marketing_tool"));
        let r1 = &b.rules()[1];
        assert_eq!((r1.id(), r1.action(), r1.description()), ("redact-secrets-for-non-admin", Action::Redact, None));
        assert_eq!(b.metadata().get("authored_by"), Some(&json!("security-team@example.com")));
    }

    #[test]
    fn hash_matches_python_golden_value() {
        let b = Bundle::parse(DOC_YAML).unwrap();
        assert_eq!(b.canonical(), DOC_CANONICAL);
        assert_eq!(b.hash(), DOC_HASH);
    }

    #[test]
    fn hash_is_the_same_for_json_and_reordered_keys() {
        let json = Bundle::parse(DOC_JSON).unwrap();
        assert_eq!(json, Bundle::parse(DOC_YAML).unwrap());
        assert_eq!(json.hash(), DOC_HASH);
        let reordered = "rules:\n- action: redact\n  when: {caller_type_not_in: [admin, security], memory_has_any_label: [secret, api_key]}\n  id: redact-secrets-for-non-admin\n";
        let text = format!("{reordered}metadata: {{description: Production policy v3, authored_by: security-team@example.com}}\nversion: 1\n");
        let one_rule = Bundle::parse(&text).unwrap();
        assert_ne!(one_rule.hash(), DOC_HASH);
        assert_eq!(one_rule.rules()[0].to_json(), Bundle::parse(DOC_YAML).unwrap().rules()[1].to_json());
    }

    #[test]
    fn hash_is_stable_across_calls_and_round_trips_through_to_json() {
        let b = Bundle::parse(DOC_YAML).unwrap();
        assert_eq!(b.hash(), b.hash());
        let again = Bundle::from_value(&b.to_json()).unwrap();
        assert_eq!(again.hash(), DOC_HASH);
        // The stored JSON text (e.g. from a JSONB column) parses back to the same address.
        assert_eq!(Bundle::parse(&b.to_json().to_string()).unwrap().hash(), DOC_HASH);
    }

    #[test]
    fn minimal_bundle_defaults_metadata_to_empty_and_description_to_null() {
        let text = "version: 1\nrules:\n  - id: r1\n    when: {caller_id: \"agent-7\"}\n    action: deny\n";
        let b = Bundle::parse(text).unwrap();
        assert_eq!(
            b.canonical(),
            r#"{"metadata":{},"rules":[{"action":"deny","description":null,"id":"r1","when":{"caller_id":"agent-7"}}],"version":1}"#
        );
        assert_eq!(b.hash(), "7e2de4bf8396ffaf8707c9093bcb3552074abc1c18891c9714a0cccd83e12de9");
        let explicit = "version: 1\nmetadata: null\nrules: [{id: r1, description: null, when: {caller_id: agent-7}, action: deny}]";
        assert_eq!(Bundle::parse(explicit).unwrap().hash(), b.hash());
        let empty_meta = "{\"version\":1,\"metadata\":{},\"rules\":[{\"id\":\"r1\",\"when\":{\"caller_id\":\"agent-7\"},\"action\":\"deny\"}]}";
        assert_eq!(Bundle::parse(empty_meta).unwrap().hash(), b.hash());
    }

    #[test]
    fn hash_covers_non_ascii_floats_and_duplicates_like_python() {
        let text = r#"version: 1
metadata: {owner: "Zoë", "n": 1.5, list: [1, 2.0, null, true], "é": "\u00e9/\u2028"}
rules:
  - id: "règle-1"
    description: "naïve ✓"
    when: {memory_has_all_labels: ["pii", "pii"], caller_type_in: [bot]}
    action: redact
"#;
        let b = Bundle::parse(text).unwrap();
        assert_eq!(b.hash(), "27a708bd617cc54fe9752785b8704fb44e6def7f91bd40ee271fb3f8acdb4c20");
    }

    #[test]
    fn hash_changes_with_content_and_rule_order() {
        let base = Bundle::parse(DOC_YAML).unwrap().hash();
        let changed = Bundle::parse(&DOC_YAML.replace("marketing_tool", "marketing_bot")).unwrap().hash();
        let meta = Bundle::parse(&DOC_YAML.replace("v3", "v4")).unwrap().hash();
        let mut swapped = Bundle::parse(DOC_YAML).unwrap();
        swapped.rules.reverse();
        let all = [base, changed, meta, swapped.hash()];
        assert_eq!(all.iter().collect::<BTreeSet<_>>().len(), 4);
    }

    #[test]
    fn comments_anchors_and_quoting_do_not_change_the_hash() {
        let text = r#"# header comment
version: 1
metadata:
  description: 'Production policy v3'   # single quotes
  authored_by: security-team@example.com
rules:
  - id: "deny-pii-for-marketing-tools"
    description: PII memories cannot be read by marketing tools
    when:
      memory_has_any_label: &pii
        - pii
        - sensitive_personal
      caller_type: "marketing_tool"
    action: deny
  - id: redact-secrets-for-non-admin
    when: {memory_has_any_label: [secret, api_key], caller_type_not_in: [admin, security]}
    action: "redact"
"#;
        assert_eq!(Bundle::parse(text).unwrap().hash(), DOC_HASH);
        let aliased = "version: 1\nrules:\n- {id: a, when: {memory_has_any_label: &l [pii]}, action: deny}\n- {id: b, when: {memory_has_all_labels: *l}, action: redact}\n";
        let b = Bundle::parse(aliased).unwrap();
        assert_eq!(b.rules()[1].when().memory_has_all_labels, Some(vec!["pii".to_string()]));
    }

    #[test]
    fn empty_rule_list_is_a_valid_allow_all_bundle() {
        let b = Bundle::parse("version: 1\nrules: []\n").unwrap();
        assert!(b.rules().is_empty());
        assert_eq!(b.canonical(), r#"{"metadata":{},"rules":[],"version":1}"#);
    }

    #[test]
    fn every_predicate_parses_and_round_trips() {
        let text = "version: 1\nrules:\n- id: all\n  when:\n    memory_has_any_label: [a]\n    memory_has_all_labels: [b, c]\n    caller_type: t\n    caller_id: i\n    caller_type_in: [t, u]\n    caller_type_not_in: [v]\n  action: redact\n";
        let b = Bundle::parse(text).unwrap();
        assert_eq!(
            b.rules()[0].when().to_json(),
            json!({"memory_has_any_label": ["a"], "memory_has_all_labels": ["b", "c"], "caller_type": "t",
                   "caller_id": "i", "caller_type_in": ["t", "u"], "caller_type_not_in": ["v"]})
        );
        assert_eq!(Bundle::from_value(&b.to_json()).unwrap(), b);
    }

    #[test]
    fn action_serialises_in_wire_spelling() {
        assert_eq!(serde_json::to_value(Action::Deny).unwrap(), json!("deny"));
        assert_eq!(Action::Redact.as_str(), "redact");
    }

    #[test]
    fn version_is_required_and_must_be_the_integer_one() {
        assert_eq!(invalid_at("rules: []").0, "version");
        for bad in ["2", "0", "\"1\"", "1.0", "true", "null", "[1]"] {
            let (at, message) = invalid_at(&format!("version: {bad}\nrules: []"));
            assert_eq!(at, "version", "{bad}");
            assert!(message.contains("only 1"), "{message}");
        }
    }

    #[test]
    fn top_level_shape_errors() {
        assert_eq!(invalid_at("- a\n- b").1, "expected a mapping at the top level, got a list");
        assert_eq!(invalid_at("\"just text\"").1, "expected a mapping at the top level, got a string");
        assert_eq!(invalid_at("").1, "expected a mapping at the top level, got null");
        let (at, message) = invalid_at("version: 1\nrules: []\npolicy_mode: enforce\nextra: 1");
        assert_eq!(at, "bundle");
        assert!(message.contains("\"extra\", \"policy_mode\""), "{message}");
        assert_eq!(
            invalid_at("version: 1\nmetadata: [a]\nrules: []"),
            ("metadata".into(), "expected a mapping, got a list".into())
        );
        assert_eq!(invalid_at("version: 1").0, "rules");
        assert_eq!(invalid_at("version: 1\nrules: {id: r1}").1, "expected a list, got a mapping");
        assert_eq!(
            invalid_at("version: 1\nrules: [42]"),
            ("rules[0]".into(), "expected a mapping, got a number".into())
        );
    }

    #[test]
    fn rule_id_errors() {
        assert_eq!(invalid_at("version: 1\nrules: [{when: {caller_id: x}, action: deny}]").0, "rules[0].id");
        let (at, message) = invalid_at("version: 1\nrules: [{id: '  ', when: {caller_id: x}, action: deny}]");
        assert_eq!((at.as_str(), message.as_str()), ("rules[0].id", "expected a non-empty string, got a blank one"));
        assert_eq!(
            invalid_at("version: 1\nrules: [{id: 7, when: {caller_id: x}, action: deny}]").1,
            "expected a non-empty string, got a number"
        );
        let dup = "version: 1\nrules:\n- {id: a, when: {caller_id: x}, action: deny}\n- {id: a, when: {caller_id: y}, action: redact}";
        assert_eq!(invalid_at(dup), ("rules[1].id".into(), "duplicate rule id \"a\"".into()));
    }

    #[test]
    fn rule_field_errors_name_the_rule() {
        let (at, message) = invalid_at(&rule_yaml("    when: {caller_id: x}\n    action: deny\n    priority: 1\n"));
        assert_eq!(at, "rules[0] \"r1\"");
        assert!(message.contains("\"priority\"") && message.contains("allowed keys: id, description, when, action"));
        assert_eq!(invalid_at(&rule_yaml("    action: deny\n")).0, "rules[0] \"r1\".when");
        assert_eq!(
            invalid_at(&rule_yaml("    when: {caller_id: x}\n")),
            ("rules[0] \"r1\".action".into(), "is required (deny or redact)".into())
        );
        for bad in ["allow", "DENY", "1", "[deny]"] {
            let (at, message) = invalid_at(&rule_yaml(&format!("    when: {{caller_id: x}}\n    action: {bad}\n")));
            assert_eq!(at, "rules[0] \"r1\".action");
            assert!(message.starts_with("expected deny or redact"), "{message}");
        }
        let (at, message) = invalid_at(&rule_yaml("    description: 5\n    when: {caller_id: x}\n    action: deny\n"));
        assert_eq!((at.as_str(), message.as_str()), ("rules[0] \"r1\".description", "expected a string, got a number"));
    }

    #[test]
    fn when_block_errors() {
        let (at, message) = invalid_at(&rule_yaml("    when: {}\n    action: deny\n"));
        assert_eq!(at, "rules[0] \"r1\".when");
        assert!(message.starts_with("needs at least one predicate"), "{message}");
        assert_eq!(
            invalid_at(&rule_yaml("    when: null\n    action: deny\n")).1,
            "expected a mapping of predicates, got null"
        );
        assert_eq!(
            invalid_at(&rule_yaml("    when: [caller_id]\n    action: deny\n")).1,
            "expected a mapping of predicates, got a list"
        );
        let (at, message) =
            invalid_at(&rule_yaml("    when: {caller_id: x, memory_content_pattern: secret}\n    action: deny\n"));
        assert_eq!(at, "rules[0] \"r1\".when.memory_content_pattern");
        assert!(message.starts_with("unknown predicate; known predicates: memory_has_any_label"), "{message}");
    }

    #[test]
    fn predicate_type_errors() {
        let cases = [
            (
                "memory_has_any_label: []",
                "memory_has_any_label",
                "expected a non-empty list of strings, got an empty list",
            ),
            ("memory_has_any_label: pii", "memory_has_any_label", "expected a non-empty list of strings, got a string"),
            (
                "memory_has_all_labels: [pii, 3]",
                "memory_has_all_labels[1]",
                "expected a non-empty string, got a number",
            ),
            (
                "memory_has_all_labels: [pii, '']",
                "memory_has_all_labels[1]",
                "expected a non-empty string, got a blank one",
            ),
            ("caller_type_in: []", "caller_type_in", "expected a non-empty list of strings, got an empty list"),
            ("caller_type_not_in: {a: b}", "caller_type_not_in", "expected a non-empty list of strings, got a mapping"),
            ("caller_type: ''", "caller_type", "expected a non-empty string, got a blank one"),
            ("caller_type: [a]", "caller_type", "expected a non-empty string, got a list"),
            ("caller_id: null", "caller_id", "expected a non-empty string, got null"),
            ("caller_id: true", "caller_id", "expected a non-empty string, got a boolean"),
        ];
        for (predicate, field, expected) in cases {
            let (at, message) = invalid_at(&rule_yaml(&format!("    when: {{{predicate}}}\n    action: deny\n")));
            assert_eq!(at, format!("rules[0] \"r1\".when.{field}"), "{predicate}");
            assert_eq!(message, expected, "{predicate}");
        }
    }

    #[test]
    fn error_messages_read_well() {
        let err = Bundle::parse(&rule_yaml("    when: {caller_type: ''}\n    action: deny\n")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid policy bundle: rules[0] \"r1\".when.caller_type: expected a non-empty string, got a blank one"
        );
    }

    #[test]
    fn syntax_errors_and_limits() {
        assert!(matches!(Bundle::parse("version: 1\nrules: [\n"), Err(BundleError::Syntax(_))));
        assert!(matches!(Bundle::parse("a: 1\na: 2\n"), Err(BundleError::Syntax(_))), "duplicate keys are refused");
        assert!(matches!(Bundle::parse("version: 1\n---\nversion: 1\n"), Err(BundleError::Syntax(_))));
        assert!(matches!(Bundle::parse("{\"version\": 1,, }"), Err(BundleError::Syntax(_))));
        let big = format!("version: 1\nrules: []\n#{}", "x".repeat(MAX_BUNDLE_BYTES));
        assert_eq!(Bundle::parse(&big), Err(BundleError::TooLarge { size: big.len(), max: MAX_BUNDLE_BYTES }));
        let err = Bundle::parse("version: [").unwrap_err();
        assert!(err.to_string().starts_with("policy bundle is not valid YAML or JSON: "), "{err}");
    }

    #[test]
    fn document_errors_surface_as_syntax_errors() {
        let err =
            Bundle::parse(&rule_yaml("    when: {caller_type: a, caller_type: b}\n    action: deny\n")).unwrap_err();
        assert!(matches!(&err, BundleError::Syntax(m) if m.contains("duplicate key \"caller_type\"")), "{err}");
        let json = r#"{"version": 1, "rules": [{"id": "\ud83d\ude00", "when": {"caller_id": "x"}, "action": "deny"}]}"#;
        assert_eq!(Bundle::parse(json).unwrap().rules()[0].id(), "\u{1f600}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
            let _ = Bundle::parse(&text);
        }

        #[test]
        fn yaml_ish_text_never_panics(
            parts in proptest::collection::vec(
                prop::sample::select(vec![
                    "version: 1\n", "rules:\n", "- id: a\n", "  when:\n", "    caller_id: x\n", "  action: deny\n",
                    "    memory_has_any_label: [", "]\n", "{", "}", "&x ", "*x", "metadata: ", "null\n", ": ", "- ",
                ]),
                0..24,
            )
        ) {
            let _ = Bundle::parse(&parts.concat());
        }
    }
}
