//! Sensitivity-label normalisation (`PATCH /v1/memories/{id}/labels`) and the promote-labels review rules.
//!
//! The policy evaluator matches labels exactly, so labels are normalised once, where they are written.

use std::collections::BTreeSet;

use thiserror::Error;

/// Most sensitivity labels a memory may carry, counted after normalisation.
pub const MAX_LABELS: usize = 32;

/// Why a label list was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LabelError {
    /// More than [`MAX_LABELS`] distinct labels remained after normalisation (→ 400).
    #[error("at most {max} sensitivity labels per memory (got {count} after normalisation)")]
    TooMany { count: usize, max: usize },
}

/// Why a promote-labels request was refused; every variant is a 422 with [`PromoteError::code`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PromoteError {
    /// The request's `labels` list is empty.
    #[error("labels must contain at least one label")]
    Empty,
    /// The request names a label more than once (after normalisation); the duplicated labels, sorted.
    #[error("labels contain duplicates: {}", .0.join(", "))]
    DuplicateLabels(Vec<String>),
    /// Labels that are not current suggestions on the memory, in request order.
    #[error("labels are not suggested on this memory: {}", .0.join(", "))]
    NotSuggested(Vec<String>),
    /// Promotion would push the memory past [`MAX_LABELS`] sensitivity labels (mnemo addition; upstream has no cap here).
    #[error("promotion would give the memory {count} sensitivity labels; at most {max} are allowed")]
    TooMany { count: usize, max: usize },
}

impl PromoteError {
    /// The wire `error.code` for this refusal.
    pub fn code(&self) -> &'static str {
        match self {
            PromoteError::Empty => "promote_labels.empty",
            PromoteError::DuplicateLabels(_) => "promote_labels.duplicate_labels",
            PromoteError::NotSuggested(_) => "promote_labels.not_suggested",
            PromoteError::TooMany { .. } => "promote_labels.too_many_labels",
        }
    }
}

/// The memory's label columns after a successful promotion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Promotion {
    /// The promoted labels, normalised, in request order (also the audit entry's `labels`).
    pub promoted: Vec<String>,
    /// Old sensitivity labels plus the promoted ones, normalised and sorted.
    pub sensitivity_labels: Vec<String>,
    /// The suggestions that were not promoted, in their stored order.
    pub suggested_labels: Vec<String>,
}

/// Trims (with Python's `str.strip()` notion of whitespace) and lower-cases one label.
pub fn normalise_label(label: &str) -> String {
    label.trim_matches(is_python_space).to_lowercase()
}

/// Normalises a label list: trim, lower-case, drop blanks, de-duplicate, sort; more than [`MAX_LABELS`] is an error.
pub fn normalise_labels(labels: Vec<String>) -> Result<Vec<String>, LabelError> {
    // BTreeSet orders `String`s by UTF-8 bytes, which is code-point order, i.e. Python's `sorted()`.
    let set: BTreeSet<String> = labels.iter().map(|l| normalise_label(l)).filter(|l| !l.is_empty()).collect();
    if set.len() > MAX_LABELS {
        return Err(LabelError::TooMany { count: set.len(), max: MAX_LABELS });
    }
    Ok(set.into_iter().collect())
}

/// Validates a promote-labels request against the memory's current suggestions and computes the new columns.
///
/// Checks run in the order empty → duplicates → not suggested, so a request gets the first refusal that applies.
/// Requested labels are normalised like PATCH labels before they are compared, so `" PII.Email "` promotes `pii.email`.
pub fn promote_labels(
    requested: &[String],
    suggested: &[String],
    sensitivity: &[String],
) -> Result<Promotion, PromoteError> {
    if requested.is_empty() {
        return Err(PromoteError::Empty);
    }
    let promoted: Vec<String> = requested.iter().map(|l| normalise_label(l)).collect();

    let mut seen = BTreeSet::new();
    let duplicates: BTreeSet<&String> = promoted.iter().filter(|l| !seen.insert(*l)).collect();
    if !duplicates.is_empty() {
        return Err(PromoteError::DuplicateLabels(duplicates.into_iter().cloned().collect()));
    }

    let suggested_set: BTreeSet<String> = suggested.iter().map(|l| normalise_label(l)).collect();
    let missing: Vec<String> = promoted.iter().filter(|l| !suggested_set.contains(*l)).cloned().collect();
    if !missing.is_empty() {
        return Err(PromoteError::NotSuggested(missing));
    }

    let merged = sensitivity.iter().chain(promoted.iter()).cloned().collect();
    let sensitivity_labels = normalise_labels(merged).map_err(|LabelError::TooMany { count, max }| {
        // Refuse rather than silently exceed the cap that PATCH labels enforces.
        PromoteError::TooMany { count, max }
    })?;
    let suggested_labels = suggested.iter().filter(|l| !seen.contains(&normalise_label(l))).cloned().collect();
    Ok(Promotion { promoted, sensitivity_labels, suggested_labels })
}

/// Python's `str.isspace()`: Rust's `char::is_whitespace` plus the ASCII separators U+001C..=U+001F.
fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_normalised() {
        let raw = vec![" PII.Email ".to_string(), "pii.email".into(), "".into(), "  ".into(), "a".into()];
        assert_eq!(normalise_labels(raw).unwrap(), vec!["a".to_string(), "pii.email".into()]);
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn normalise_trims_lowercases_dedupes_and_sorts() {
        let got = normalise_labels(strings(&[" PII ", "financial", "pii", "\tSecret\n", "Financial"])).unwrap();
        assert_eq!(got, strings(&["financial", "pii", "secret"]));
    }

    #[test]
    fn normalise_drops_blanks_and_empty_clears() {
        assert_eq!(normalise_labels(strings(&["", "   ", "\u{a0}", "a"])).unwrap(), strings(&["a"]));
        assert_eq!(normalise_labels(vec![]).unwrap(), Vec::<String>::new());
        assert_eq!(normalise_labels(strings(&[" ", ""])).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn normalise_trims_python_whitespace_only() {
        // U+001F is whitespace to Python but not to Rust's is_whitespace; U+200B is whitespace to neither.
        assert_eq!(normalise_label("\u{1f}\u{3000}pii\u{2028}\u{1c}"), "pii");
        assert_eq!(normalise_label("\u{200b}pii"), "\u{200b}pii");
        assert_eq!(normalise_label("a b"), "a b");
    }

    #[test]
    fn normalise_sorts_by_code_point() {
        let got = normalise_labels(strings(&["é", "z", "Z", "a", "\u{1f600}", "\u{ffff}"])).unwrap();
        assert_eq!(got, strings(&["a", "z", "é", "\u{ffff}", "\u{1f600}"]));
    }

    #[test]
    fn normalise_unicode_lowercase() {
        assert_eq!(normalise_label("ÄÖÜ"), "äöü");
        assert_eq!(normalise_label("ΟΔΟΣ"), "οδος");
    }

    #[test]
    fn thirty_two_labels_pass_and_thirty_three_fail() {
        let ok: Vec<String> = (0..32).map(|i| format!("l{i}")).collect();
        assert_eq!(normalise_labels(ok).unwrap().len(), 32);
        let too_many: Vec<String> = (0..33).map(|i| format!("l{i}")).collect();
        assert_eq!(normalise_labels(too_many), Err(LabelError::TooMany { count: 33, max: 32 }));
    }

    #[test]
    fn cap_counts_after_normalisation() {
        // 40 raw entries that collapse to 20 distinct labels are fine.
        let raw: Vec<String> =
            (0..40).map(|i| if i % 2 == 0 { format!("L{}", i / 2) } else { format!(" l{} ", i / 2) }).collect();
        assert_eq!(normalise_labels(raw).unwrap().len(), 20);
    }

    #[test]
    fn promote_moves_labels_and_keeps_existing() {
        let p = promote_labels(
            &strings(&["pii.email"]),
            &strings(&["pii.email", "pii.phone"]),
            &strings(&["legal.contract"]),
        )
        .unwrap();
        assert_eq!(p.promoted, strings(&["pii.email"]));
        assert_eq!(p.sensitivity_labels, strings(&["legal.contract", "pii.email"]));
        assert_eq!(p.suggested_labels, strings(&["pii.phone"]));
    }

    #[test]
    fn promote_normalises_request_and_keeps_request_order() {
        let p = promote_labels(
            &strings(&[" PII.Phone", "financial.card"]),
            &strings(&["financial.card", "pii.phone"]),
            &[],
        )
        .unwrap();
        assert_eq!(p.promoted, strings(&["pii.phone", "financial.card"]));
        assert_eq!(p.sensitivity_labels, strings(&["financial.card", "pii.phone"]));
        assert!(p.suggested_labels.is_empty());
    }

    #[test]
    fn promote_already_sensitive_label_is_deduped() {
        let p = promote_labels(&strings(&["pii.email"]), &strings(&["pii.email"]), &strings(&["pii.email"])).unwrap();
        assert_eq!(p.sensitivity_labels, strings(&["pii.email"]));
    }

    #[test]
    fn promote_empty_is_refused() {
        let err = promote_labels(&[], &strings(&["pii.email"]), &[]).unwrap_err();
        assert_eq!(err, PromoteError::Empty);
        assert_eq!(err.code(), "promote_labels.empty");
    }

    #[test]
    fn promote_duplicates_are_refused_even_across_case() {
        let err =
            promote_labels(&strings(&["pii.email", "PII.EMAIL", "x", "x"]), &strings(&["pii.email"]), &[]).unwrap_err();
        assert_eq!(err, PromoteError::DuplicateLabels(strings(&["pii.email", "x"])));
        assert_eq!(err.code(), "promote_labels.duplicate_labels");
        assert!(err.to_string().contains("pii.email, x"));
    }

    #[test]
    fn promote_unsuggested_is_refused() {
        let err =
            promote_labels(&strings(&["secret.token", "pii.email", "  "]), &strings(&["pii.email"]), &[]).unwrap_err();
        assert_eq!(err, PromoteError::NotSuggested(strings(&["secret.token", ""])));
        assert_eq!(err.code(), "promote_labels.not_suggested");
    }

    #[test]
    fn promote_empty_wins_over_other_checks_and_duplicates_over_not_suggested() {
        let err = promote_labels(&strings(&["nope", "nope"]), &[], &[]).unwrap_err();
        assert_eq!(err.code(), "promote_labels.duplicate_labels");
    }

    #[test]
    fn promote_refuses_past_the_cap() {
        let existing: Vec<String> = (0..32).map(|i| format!("l{i:02}")).collect();
        let err = promote_labels(&strings(&["pii.email"]), &strings(&["pii.email"]), &existing).unwrap_err();
        assert_eq!(err, PromoteError::TooMany { count: 33, max: 32 });
        assert_eq!(err.code(), "promote_labels.too_many_labels");
    }
}
