//! Policy evaluation: which rule fires for a memory, the receipt's `policy` block, and applying decisions.
//!
//! Evaluation is pure and total: rules are tried in declaration order and the first whose predicates all hold wins;
//! no match means allow. Decisions are always recorded; only [`PolicyMode::Enforce`] changes what the caller sees.

use std::collections::BTreeSet;
use std::fmt;

use serde::Serialize;
use serde_json::{json, Value};

use super::bundle::{Action, Bundle, Rule, When};

/// Replacement text for a redacted memory (spec §2.4.2).
pub const REDACTION_MARKER: &str = "[REDACTED by policy]";

/// Tenant `config.policy_mode`: whether decisions are only recorded or also applied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PolicyMode {
    /// Record decisions in the receipt; return every memory unchanged (the default).
    #[default]
    LogOnly,
    /// Drop denied memories and redact redacted ones before scoring.
    Enforce,
}

impl PolicyMode {
    /// Parses the config value; anything but `"log_only"` or `"enforce"` is `None`.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "log_only" => Some(PolicyMode::LogOnly),
            "enforce" => Some(PolicyMode::Enforce),
            _ => None,
        }
    }

    /// Reads `policy_mode` from a tenant config object; absent or unrecognised means log-only (fail safe for data).
    pub fn from_config(config: &Value) -> Self {
        config.get("policy_mode").and_then(Value::as_str).and_then(Self::parse).unwrap_or_default()
    }

    /// The wire spelling: `"log_only"` or `"enforce"`.
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyMode::LogOnly => "log_only",
            PolicyMode::Enforce => "enforce",
        }
    }
}

/// What happens to one memory once the mode is taken into account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Deliver it unchanged.
    Keep,
    /// Remove it from the candidate pools.
    Drop,
    /// Deliver it with its text replaced by [`REDACTION_MARKER`].
    Redact,
}

/// Receipt record for a memory on which a rule fired (`policy.filters_applied[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FilterApplied {
    pub memory_id: String,
    pub rule_id: String,
    pub action: Action,
    /// The memory's labels named by the rule's label predicates, sorted; empty for caller-only rules.
    pub matched_labels: Vec<String>,
}

/// Receipt record for a rule that fired on no memory (`policy.filters_skipped[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FilterSkipped {
    pub rule_id: String,
    pub action: Action,
    /// Always false; kept because the receipt shape carries it.
    pub matched: bool,
}

/// Decisions for a list of memories plus the receipt records describing them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyOutcome {
    /// One entry per input memory, in input order: the firing rule's action, or `None` (allow).
    pub decisions: Vec<Option<Action>>,
    pub filters_applied: Vec<FilterApplied>,
    pub filters_skipped: Vec<FilterSkipped>,
}

impl When {
    /// True when every predicate present holds for this memory and caller.
    ///
    /// Matching is exact (labels are normalised when written). A missing caller type satisfies `caller_type_not_in`
    /// (an anonymous caller is not in any allow-list) and fails `caller_type`, `caller_type_in` and `caller_id`.
    pub fn matches(&self, memory_labels: &[String], caller_type: Option<&str>, caller_id: Option<&str>) -> bool {
        let has = |label: &String| memory_labels.contains(label);
        let in_list = |list: &[String], value: Option<&str>| value.is_some_and(|v| list.iter().any(|l| l == v));
        self.memory_has_any_label.as_deref().is_none_or(|want| want.iter().any(has))
            && self.memory_has_all_labels.as_deref().is_none_or(|want| want.iter().all(has))
            && self.caller_type.as_deref().is_none_or(|want| caller_type == Some(want))
            && self.caller_id.as_deref().is_none_or(|want| caller_id == Some(want))
            && self.caller_type_in.as_deref().is_none_or(|list| in_list(list, caller_type))
            && self.caller_type_not_in.as_deref().is_none_or(|list| !in_list(list, caller_type))
    }

    /// The memory's labels that this block's label predicates name, sorted and de-duplicated.
    pub fn matched_labels(&self, memory_labels: &[String]) -> Vec<String> {
        let named = self.memory_has_any_label.iter().chain(self.memory_has_all_labels.iter()).flatten();
        let hits: BTreeSet<&String> = named.filter(|label| memory_labels.contains(label)).collect();
        hits.into_iter().cloned().collect()
    }
}

/// The first rule of `bundle` that matches this memory and caller, or `None` (allow).
pub fn evaluate<'b>(
    bundle: &'b Bundle,
    memory_labels: &[String],
    caller_type: Option<&str>,
    caller_id: Option<&str>,
) -> Option<&'b Rule> {
    bundle.rules().iter().find(|rule| rule.when().matches(memory_labels, caller_type, caller_id))
}

/// Evaluates every `(memory_id, labels)` pair and builds the receipt's filter records.
///
/// Any displayable id works, e.g. `memories.iter().map(|m| (m.id, &m.sensitivity_labels))` with `Uuid` ids.
/// `filters_applied` follows input order (pass memories in a deterministic order); `filters_skipped` lists, in
/// declaration order, every rule that fired on no memory, including rules whose predicates held but that were
/// shadowed by an earlier rule (they did not fire). With no memories every rule is skipped.
pub fn evaluate_memories<I, K, L>(
    bundle: &Bundle,
    memories: I,
    caller_type: Option<&str>,
    caller_id: Option<&str>,
) -> PolicyOutcome
where
    I: IntoIterator<Item = (K, L)>,
    K: fmt::Display,
    L: AsRef<[String]>,
{
    let mut outcome = PolicyOutcome::default();
    let mut fired = BTreeSet::new();
    for (memory_id, labels) in memories {
        let labels = labels.as_ref();
        let rule = evaluate(bundle, labels, caller_type, caller_id);
        outcome.decisions.push(rule.map(Rule::action));
        if let Some(rule) = rule {
            fired.insert(rule.id());
            outcome.filters_applied.push(FilterApplied {
                memory_id: memory_id.to_string(),
                rule_id: rule.id().to_string(),
                action: rule.action(),
                matched_labels: rule.when().matched_labels(labels),
            });
        }
    }
    outcome.filters_skipped = bundle
        .rules()
        .iter()
        .filter(|rule| !fired.contains(rule.id()))
        .map(|rule| FilterSkipped { rule_id: rule.id().to_string(), action: rule.action(), matched: false })
        .collect();
    outcome
}

/// The receipt body's `policy` object: `{policy_bundle_hash, filters_applied, filters_skipped, mode}`.
///
/// With no active bundle pass `None` and an empty outcome, which gives the hash `null` and empty lists.
pub fn receipt_policy(bundle_hash: Option<&str>, outcome: &PolicyOutcome, mode: PolicyMode) -> Value {
    json!({
        "policy_bundle_hash": bundle_hash,
        "filters_applied": outcome.filters_applied,
        "filters_skipped": outcome.filters_skipped,
        "mode": mode,
    })
}

/// What a decision does under `mode`: log-only always keeps; enforce drops denials and redacts redactions.
pub fn effect(mode: PolicyMode, action: Option<Action>) -> Effect {
    match (mode, action) {
        (PolicyMode::LogOnly, _) | (PolicyMode::Enforce, None) => Effect::Keep,
        (PolicyMode::Enforce, Some(Action::Deny)) => Effect::Drop,
        (PolicyMode::Enforce, Some(Action::Redact)) => Effect::Redact,
    }
}

/// Applies `decisions` (parallel to `items`) under `mode`: drops denied items and calls `redact` on redacted ones.
///
/// Items beyond the end of `decisions` are kept (treated as allowed); callers pass [`PolicyOutcome::decisions`].
pub fn apply<T>(
    mode: PolicyMode,
    items: Vec<T>,
    decisions: &[Option<Action>],
    mut redact: impl FnMut(&mut T),
) -> Vec<T> {
    let mut kept = Vec::with_capacity(items.len());
    for (index, mut item) in items.into_iter().enumerate() {
        match effect(mode, decisions.get(index).copied().flatten()) {
            Effect::Keep => kept.push(item),
            Effect::Drop => {}
            Effect::Redact => {
                redact(&mut item);
                kept.push(item);
            }
        }
    }
    kept
}

/// Redacts a memory's text in place: the content becomes [`REDACTION_MARKER`], and so does the summary.
///
/// Upstream replaces only `content`; the summary is usually a prefix of the content, so mnemo redacts it too rather
/// than leak it through the `facts` array of the response.
pub fn redact_text(content: &mut String, summary: &mut String) {
    *content = REDACTION_MARKER.to_string();
    *summary = REDACTION_MARKER.to_string();
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUNDLE: &str = r#"version: 1
rules:
  - id: deny-pii-for-marketing
    when: {memory_has_any_label: [pii, sensitive_personal], caller_type: marketing_tool}
    action: deny
  - id: redact-secrets-for-non-admin
    when: {memory_has_any_label: [secret, api_key], caller_type_not_in: [admin, security]}
    action: redact
  - id: deny-finance-pair
    when: {memory_has_all_labels: [financial, pii]}
    action: deny
  - id: deny-agent-7
    when: {caller_id: agent-7, caller_type_in: [support, sales]}
    action: deny
"#;

    fn bundle() -> Bundle {
        Bundle::parse(BUNDLE).unwrap()
    }

    fn labels(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn fired(b: &Bundle, l: &[&str], caller_type: Option<&str>, caller_id: Option<&str>) -> Option<String> {
        evaluate(b, &labels(l), caller_type, caller_id).map(|r| r.id().to_string())
    }

    #[test]
    fn no_match_is_allow() {
        let b = bundle();
        assert_eq!(fired(&b, &[], None, None), None);
        assert_eq!(fired(&b, &["pii"], Some("support"), Some("agent-1")), None);
        assert_eq!(fired(&b, &["public"], Some("marketing_tool"), None), None);
    }

    #[test]
    fn any_label_and_caller_type_are_anded() {
        let b = bundle();
        assert_eq!(fired(&b, &["pii"], Some("marketing_tool"), None).as_deref(), Some("deny-pii-for-marketing"));
        assert_eq!(
            fired(&b, &["x", "sensitive_personal"], Some("marketing_tool"), None).as_deref(),
            Some("deny-pii-for-marketing")
        );
        assert_eq!(fired(&b, &["pii"], Some("Marketing_Tool"), None), None, "caller_type matches exactly");
        assert_eq!(fired(&b, &["PII"], Some("marketing_tool"), None), None, "labels match exactly");
    }

    #[test]
    fn not_in_matches_anonymous_and_other_callers() {
        let b = bundle();
        assert_eq!(fired(&b, &["secret"], None, None).as_deref(), Some("redact-secrets-for-non-admin"));
        assert_eq!(fired(&b, &["api_key"], Some("bot"), None).as_deref(), Some("redact-secrets-for-non-admin"));
        assert_eq!(fired(&b, &["secret"], Some("admin"), None), None);
        assert_eq!(fired(&b, &["secret"], Some("security"), None), None);
    }

    #[test]
    fn all_labels_needs_every_label() {
        let b = bundle();
        assert_eq!(fired(&b, &["financial", "pii"], Some("support"), None).as_deref(), Some("deny-finance-pair"));
        assert_eq!(fired(&b, &["financial"], None, None), None);
    }

    #[test]
    fn caller_id_and_type_in_need_a_caller() {
        let b = bundle();
        assert_eq!(fired(&b, &[], Some("sales"), Some("agent-7")).as_deref(), Some("deny-agent-7"));
        assert_eq!(fired(&b, &[], Some("admin"), Some("agent-7")), None);
        assert_eq!(fired(&b, &[], None, Some("agent-7")), None);
        assert_eq!(fired(&b, &[], Some("sales"), None), None);
    }

    #[test]
    fn first_matching_rule_wins() {
        let b = bundle();
        // Matches rule 1 (deny) and rule 2 (redact, non-admin) and rule 3 (financial+pii): the first declared wins.
        let l = ["pii", "secret", "financial"];
        assert_eq!(fired(&b, &l, Some("marketing_tool"), None).as_deref(), Some("deny-pii-for-marketing"));
        assert_eq!(fired(&b, &l, Some("support"), None).as_deref(), Some("redact-secrets-for-non-admin"));
        assert_eq!(fired(&b, &l, Some("admin"), None).as_deref(), Some("deny-finance-pair"));
    }

    #[test]
    fn empty_bundle_allows_everything() {
        let b = Bundle::parse("version: 1\nrules: []").unwrap();
        assert!(evaluate(&b, &labels(&["pii"]), None, None).is_none());
        assert_eq!(evaluate_memories(&b, [("m1", labels(&["pii"]))], None, None).filters_skipped, vec![]);
    }

    #[test]
    fn evaluate_memories_builds_receipt_records() {
        let b = bundle();
        let (m1, m2, m3) = (labels(&["pii", "sensitive_personal", "zzz"]), labels(&["public"]), labels(&["api_key"]));
        let out = evaluate_memories(&b, [("m1", &m1), ("m2", &m2), ("m3", &m3)], Some("marketing_tool"), None);
        assert_eq!(out.decisions, vec![Some(Action::Deny), None, Some(Action::Redact)]);
        assert_eq!(
            out.filters_applied,
            vec![
                FilterApplied {
                    memory_id: "m1".into(),
                    rule_id: "deny-pii-for-marketing".into(),
                    action: Action::Deny,
                    matched_labels: labels(&["pii", "sensitive_personal"]),
                },
                FilterApplied {
                    memory_id: "m3".into(),
                    rule_id: "redact-secrets-for-non-admin".into(),
                    action: Action::Redact,
                    matched_labels: labels(&["api_key"]),
                },
            ]
        );
        let skipped: Vec<&str> = out.filters_skipped.iter().map(|s| s.rule_id.as_str()).collect();
        assert_eq!(skipped, vec!["deny-finance-pair", "deny-agent-7"]);
        assert!(out.filters_skipped.iter().all(|s| !s.matched));
    }

    #[test]
    fn shadowed_rule_counts_as_skipped_and_caller_rules_match_no_labels() {
        let b = bundle();
        let m = labels(&["financial", "pii"]);
        let out = evaluate_memories(&b, [("m", &m)], Some("sales"), Some("agent-7"));
        assert_eq!(out.filters_applied[0].rule_id, "deny-finance-pair");
        let skipped: Vec<&str> = out.filters_skipped.iter().map(|s| s.rule_id.as_str()).collect();
        assert_eq!(skipped, vec!["deny-pii-for-marketing", "redact-secrets-for-non-admin", "deny-agent-7"]);

        let out = evaluate_memories(&b, [(7_u32, Vec::new())], Some("sales"), Some("agent-7"));
        assert_eq!(out.filters_applied[0].memory_id, "7");
        assert_eq!(out.filters_applied[0].matched_labels, Vec::<String>::new());
    }

    #[test]
    fn no_memories_skips_every_rule() {
        let out = evaluate_memories(&bundle(), Vec::<(&str, Vec<String>)>::new(), None, None);
        assert!(out.decisions.is_empty() && out.filters_applied.is_empty());
        assert_eq!(out.filters_skipped.len(), 4);
    }

    #[test]
    fn receipt_policy_has_the_wire_shape() {
        let b = bundle();
        let m = labels(&["secret"]);
        let out = evaluate_memories(&b, [("m1", &m)], None, None);
        let hash = b.hash();
        let block = receipt_policy(Some(&hash), &out, PolicyMode::Enforce);
        assert_eq!(block["policy_bundle_hash"], json!(hash));
        assert_eq!(block["mode"], json!("enforce"));
        assert_eq!(
            block["filters_applied"],
            json!([{"memory_id": "m1", "rule_id": "redact-secrets-for-non-admin", "action": "redact", "matched_labels": ["secret"]}])
        );
        assert_eq!(
            block["filters_skipped"][0],
            json!({"rule_id": "deny-pii-for-marketing", "action": "deny", "matched": false})
        );
        let none = receipt_policy(None, &PolicyOutcome::default(), PolicyMode::LogOnly);
        assert_eq!(
            none,
            json!({"policy_bundle_hash": null, "filters_applied": [], "filters_skipped": [], "mode": "log_only"})
        );
    }

    #[test]
    fn policy_mode_parsing() {
        assert_eq!(PolicyMode::parse("enforce"), Some(PolicyMode::Enforce));
        assert_eq!(PolicyMode::parse("log_only"), Some(PolicyMode::LogOnly));
        assert_eq!(PolicyMode::parse("Enforce"), None);
        assert_eq!(PolicyMode::from_config(&json!({"policy_mode": "enforce"})), PolicyMode::Enforce);
        assert_eq!(PolicyMode::from_config(&json!({})), PolicyMode::LogOnly);
        assert_eq!(PolicyMode::from_config(&json!({"policy_mode": 1})), PolicyMode::LogOnly);
        assert_eq!(PolicyMode::Enforce.as_str(), "enforce");
        assert_eq!(serde_json::to_value(PolicyMode::LogOnly).unwrap(), json!("log_only"));
    }

    #[test]
    fn effect_table() {
        assert_eq!(effect(PolicyMode::LogOnly, Some(Action::Deny)), Effect::Keep);
        assert_eq!(effect(PolicyMode::LogOnly, Some(Action::Redact)), Effect::Keep);
        assert_eq!(effect(PolicyMode::Enforce, None), Effect::Keep);
        assert_eq!(effect(PolicyMode::Enforce, Some(Action::Deny)), Effect::Drop);
        assert_eq!(effect(PolicyMode::Enforce, Some(Action::Redact)), Effect::Redact);
    }

    #[derive(Debug, PartialEq)]
    struct Mem {
        id: &'static str,
        content: String,
        summary: String,
    }

    fn mems() -> Vec<Mem> {
        ["a", "b", "c", "d"]
            .iter()
            .map(|id| Mem { id, content: format!("{id} text"), summary: format!("{id} sum") })
            .collect()
    }

    #[test]
    fn apply_enforce_drops_and_redacts() {
        let decisions = [Some(Action::Deny), None, Some(Action::Redact)];
        let out = apply(PolicyMode::Enforce, mems(), &decisions, |m| redact_text(&mut m.content, &mut m.summary));
        let ids: Vec<&str> = out.iter().map(|m| m.id).collect();
        assert_eq!(ids, vec!["b", "c", "d"], "d has no decision and is kept");
        assert_eq!(out[0].content, "b text");
        assert_eq!((out[1].content.as_str(), out[1].summary.as_str()), (REDACTION_MARKER, REDACTION_MARKER));
        assert_eq!(REDACTION_MARKER, "[REDACTED by policy]");
    }

    #[test]
    fn apply_log_only_changes_nothing() {
        let decisions = [Some(Action::Deny), Some(Action::Redact), None, Some(Action::Deny)];
        let out = apply(PolicyMode::LogOnly, mems(), &decisions, |m| redact_text(&mut m.content, &mut m.summary));
        assert_eq!(out, mems());
    }
}
