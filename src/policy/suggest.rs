//! Rule-based sensitivity-label suggestions, computed when a memory is compiled.
//!
//! Suggestions never change what an agent sees: only labels a reviewer promotes (see
//! [`super::labels::promote_labels`]) become `sensitivity_labels`, which policies act on. So the
//! detectors favour recall over precision, but each one checks what it can (Luhn for cards,
//! mod-97 for IBANs) to keep the review queue short.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

/// One label the suggester can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct CatalogueEntry {
    #[schema(value_type = String)]
    pub label: &'static str,
    #[schema(value_type = String)]
    pub description: &'static str,
    /// How it is detected: `pattern`, `keyword` or `claim_key`.
    #[schema(value_type = String)]
    pub detector: &'static str,
}

/// Every label the suggester can produce, sorted by label.
pub const CATALOGUE: &[CatalogueEntry] = &[
    CatalogueEntry {
        label: "credential.secret",
        description: "a password, API key, token or private key",
        detector: "pattern",
    },
    CatalogueEntry {
        label: "financial.bank_account",
        description: "an IBAN that passes its mod-97 check",
        detector: "pattern",
    },
    CatalogueEntry {
        label: "financial.card",
        description: "a payment card number that passes the Luhn check",
        detector: "pattern",
    },
    CatalogueEntry {
        label: "health.medical",
        description: "a diagnosis, condition, medication or treatment",
        detector: "keyword",
    },
    CatalogueEntry { label: "pii.date_of_birth", description: "a date of birth or birthday", detector: "keyword" },
    CatalogueEntry { label: "pii.email", description: "an email address", detector: "pattern" },
    CatalogueEntry {
        label: "pii.government_id",
        description: "a social security, passport, licence or tax number",
        detector: "pattern",
    },
    CatalogueEntry {
        label: "pii.location",
        description: "where the person lives (a location claim)",
        detector: "claim_key",
    },
    CatalogueEntry { label: "pii.name", description: "the person's name (an identity claim)", detector: "claim_key" },
    CatalogueEntry { label: "pii.phone", description: "a phone number", detector: "pattern" },
];

fn re(pattern: &str) -> Regex {
    #[allow(clippy::expect_used)] // the patterns are constants, checked by the unit tests
    Regex::new(pattern).expect("suggester pattern compiles")
}

static EMAIL: LazyLock<Regex> =
    LazyLock::new(|| re(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"));
static PHONE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,4}\)[\s.-]?)?\d{2,4}(?:[\s.-]?\d{2,4}){1,4}"));
static IPV4: LazyLock<Regex> = LazyLock::new(|| re(r"^\d{1,3}(?:\.\d{1,3}){3}$"));
static ISO_DATE: LazyLock<Regex> = LazyLock::new(|| re(r"\d{4}-\d{2}-\d{2}"));
static CARD: LazyLock<Regex> = LazyLock::new(|| re(r"\b\d(?:[ -]?\d){12,18}\b"));
static IBAN: LazyLock<Regex> = LazyLock::new(|| re(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b"));
static SSN_SHAPE: LazyLock<Regex> = LazyLock::new(|| re(r"^\d{3}-\d{2}-\d{4}$"));
static SSN: LazyLock<Regex> = LazyLock::new(|| re(r"\b(\d{3})-(\d{2})-(\d{4})\b"));
static GOV_ID: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:passport|social security|national insurance|driver'?s licen[cs]e|tax id|tax number|ssn)\b[^.\n]{0,24}?[A-Z0-9]*\d{4}",
    )
});
static SECRET: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?i)\b(?:password|passwd|passcode|pin code|api[ _-]?key|secret key|access token|auth token)\b",
        r"(?:\s+is\s+|\s*[:=]\s*)\S{4,}",
        r"|\bsk-[A-Za-z0-9_-]{16,}|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{30,}|\bxox[abprs]-[A-Za-z0-9-]{10,}",
        r"|-----BEGIN [A-Z ]*PRIVATE KEY-----|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.",
    ))
});
static HEALTH: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?i)\b(?:diagnosed|diagnosis|prescribed|prescription|medication|medications|allergic|allergy|allergies",
        r"|chemotherapy|therapist|blood pressure|diabetes|diabetic|asthma|depression|epilepsy|pregnant|pregnancy",
        r"|hiv|cancer|surgery|insulin|antidepressants?|adhd|migraines?)\b",
    ))
});
static BIRTH: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?:born on|born in \d{4}|date of birth|my birthday|birthday is|d\.?o\.?b\.?:)"));

/// The labels suggested for a memory's content and claim key, sorted and distinct.
pub fn suggest_labels(content: &str, claim_key: Option<&str>) -> Vec<String> {
    let mut found: BTreeSet<&'static str> = BTreeSet::new();
    if EMAIL.is_match(content) {
        found.insert("pii.email");
    }
    let cards = CARD.find_iter(content).any(|m| luhn_ok(&digits(m.as_str())));
    if cards {
        found.insert("financial.card");
    }
    let ibans: Vec<std::ops::Range<usize>> = IBAN.find_iter(content).map(|m| m.range()).collect();
    if ibans.iter().any(|r| iban_ok(&content[r.clone()])) {
        found.insert("financial.bank_account");
    }
    // The digit groups of an account-number-shaped run are not a phone number.
    let in_iban = |r: &std::ops::Range<usize>| ibans.iter().any(|i| i.start < r.end && r.start < i.end);
    if PHONE.find_iter(content).any(|m| !in_iban(&m.range()) && looks_like_phone(m.as_str())) {
        found.insert("pii.phone");
    }
    if SSN.captures_iter(content).any(|c| plausible_ssn(&c[1], &c[2], &c[3])) || GOV_ID.is_match(content) {
        found.insert("pii.government_id");
    }
    if SECRET.is_match(content) {
        found.insert("credential.secret");
    }
    if HEALTH.is_match(content) {
        found.insert("health.medical");
    }
    if BIRTH.is_match(content) {
        found.insert("pii.date_of_birth");
    }
    match claim_key {
        Some(k) if k.starts_with("identity.") => {
            found.insert("pii.name");
        }
        Some(k) if k.starts_with("location.") => {
            found.insert("pii.location");
        }
        _ => {}
    }
    found.into_iter().map(str::to_string).collect()
}

fn digits(s: &str) -> Vec<u32> {
    s.chars().filter_map(|c| c.to_digit(10)).collect()
}

/// The Luhn checksum used by payment cards (13-19 digits).
fn luhn_ok(d: &[u32]) -> bool {
    if !(13..=19).contains(&d.len()) || d.iter().all(|x| *x == d[0]) {
        return false;
    }
    let sum: u32 = d
        .iter()
        .rev()
        .enumerate()
        .map(|(i, x)| {
            if i % 2 == 1 {
                if x * 2 > 9 {
                    x * 2 - 9
                } else {
                    x * 2
                }
            } else {
                *x
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// A phone-shaped run: 9-15 digits, not an IP address, a date, or a card number.
fn looks_like_phone(s: &str) -> bool {
    let d = digits(s);
    let t = s.trim();
    if !(9..=15).contains(&d.len()) || IPV4.is_match(t) || ISO_DATE.is_match(t) || SSN_SHAPE.is_match(t) {
        return false;
    }
    // A bare run of digits is an id or an amount more often than a phone number.
    let formatted = s.starts_with('+') || s.contains('(') || s.chars().any(|c| c == ' ' || c == '-' || c == '.');
    formatted && !luhn_card_like(&d)
}

fn luhn_card_like(d: &[u32]) -> bool {
    d.len() >= 13 && luhn_ok(d)
}

/// An IBAN (or a prefix of the match, which may have run into the next word): country code,
/// check digits and a body whose mod-97 remainder is 1.
fn iban_ok(s: &str) -> bool {
    let compact: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (15..=compact.len().min(34)).rev().any(|n| iban_mod97(&compact[..n]))
}

fn iban_mod97(compact: &str) -> bool {
    let (head, tail) = compact.split_at(4);
    let mut rem: u32 = 0;
    for c in tail.chars().chain(head.chars()) {
        let v = match c {
            '0'..='9' => c as u32 - '0' as u32,
            'A'..='Z' => c as u32 - 'A' as u32 + 10,
            _ => return false,
        };
        rem = if v >= 10 { (rem * 100 + v) % 97 } else { (rem * 10 + v) % 97 };
    }
    rem == 1
}

/// US SSN shape rules: no 000, 666 or 9xx area, no 00 group, no 0000 serial.
fn plausible_ssn(area: &str, group: &str, serial: &str) -> bool {
    area != "000" && area != "666" && !area.starts_with('9') && group != "00" && serial != "0000"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(content: &str) -> Vec<String> {
        suggest_labels(content, None)
    }

    #[test]
    fn catalogue_is_sorted_and_covers_every_suggestion() {
        let labels: Vec<&str> = CATALOGUE.iter().map(|e| e.label).collect();
        let mut sorted = labels.clone();
        sorted.sort();
        assert_eq!(labels, sorted);
        let all = "mail a@b.io, call +1 415 555 0100, card 4111 1111 1111 1111, IBAN GB82 WEST 1234 5698 7654 32, \
                   SSN 123-45-6789, password: hunter22, diagnosed with asthma, born on 4 May";
        for l in suggest_labels(all, Some("identity.name")).iter().chain(&suggest_labels("", Some("location.x"))) {
            assert!(labels.contains(&l.as_str()), "{l} missing from the catalogue");
        }
    }

    #[test]
    fn emails_phones_and_cards() {
        assert_eq!(s("Reach me at jane.doe+work@example.co.uk"), vec!["pii.email"]);
        assert_eq!(s("My number is +44 20 7946 0958"), vec!["pii.phone"]);
        assert_eq!(s("call (415) 555-0100 after six"), vec!["pii.phone"]);
        assert_eq!(s("my card is 4111-1111-1111-1111"), vec!["financial.card"]);
        // Fails Luhn: neither a card nor (being 16 digits) a phone number.
        assert!(s("order 4111 1111 1111 1112").is_empty());
    }

    #[test]
    fn numbers_that_are_not_phones() {
        assert!(s("The server is at 192.168.100.200").is_empty());
        assert!(s("We met on 2024-05-17 at 10:30").is_empty());
        assert!(s("Invoice 123456789012 was paid").is_empty(), "a bare digit run is not a phone");
        assert!(s("Use version 1.24.3 of the API on port 5433").is_empty());
    }

    #[test]
    fn iban_and_government_ids() {
        assert_eq!(s("pay to GB82 WEST 1234 5698 7654 32"), vec!["financial.bank_account"]);
        assert_eq!(s("pay to DE89370400440532013000"), vec!["financial.bank_account"]);
        assert!(s("pay to GB82 WEST 1234 5698 7654 33").is_empty(), "bad check digits");
        assert_eq!(s("my SSN is 123-45-6789"), vec!["pii.government_id"]);
        assert!(s("ticket 666-12-3456").is_empty(), "not a plausible SSN, and SSN-shaped runs are not phones");
        assert_eq!(s("IBAN GB82 WEST 1234 5698 7654 32 SENT"), vec!["financial.bank_account"]);
        assert_eq!(s("Passport number X1234567 expires soon"), vec!["pii.government_id"]);
    }

    #[test]
    fn secrets_health_and_birthdays() {
        assert_eq!(s("the wifi password is correct-horse"), vec!["credential.secret"]);
        assert_eq!(s("export OPENAI=sk-abcdefghijklmnopqrstuv"), vec!["credential.secret"]);
        assert_eq!(s("key AKIAIOSFODNN7EXAMPLE"), vec!["credential.secret"]);
        assert!(s("I forgot my password again").is_empty(), "no value, nothing to protect");
        assert_eq!(s("I was diagnosed with diabetes last year"), vec!["health.medical"]);
        assert_eq!(s("My birthday is on June 3rd"), vec!["pii.date_of_birth"]);
    }

    #[test]
    fn claim_keys_and_plain_text() {
        assert_eq!(suggest_labels("Jane Doe", Some("identity.name")), vec!["pii.name"]);
        assert_eq!(suggest_labels("Oslo", Some("location.current_home")), vec!["pii.location"]);
        assert!(suggest_labels("Globex", Some("employment.current_employer")).is_empty());
        assert!(s("I prefer dark mode and use Grafana for dashboards").is_empty());
    }

    #[test]
    fn output_is_sorted_and_distinct() {
        let got = s("a@b.io c@d.io, password: abcdef, allergic to nuts");
        assert_eq!(got, vec!["credential.secret", "health.medical", "pii.email"]);
    }
}
