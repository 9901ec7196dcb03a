//! A fact read from a user's statement: its text, the claim it makes, the rule that read it and
//! how it may be tied to a fact the subject already has (see `compile::link`).

/// A fact stated by the user, with an optional typed claim.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractedFact {
    pub content: String,
    pub claim: Option<RawClaim>,
    pub rule: &'static str,
    /// How the fact may be tied to one the subject already has (see `compile::link`).
    pub link: Option<LinkHint>,
}

/// What an update says about the value it replaces, for linking it to the subject's facts.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkHint {
    /// The statement marks a change ("now", "new", "switched", an event).
    pub update: bool,
    /// The attribute or thing the statement names ("the cache node", "our database").
    pub object: Option<String>,
    /// The replaced thing, when named ("my old bike").
    pub old: Option<String>,
    /// The new value as written.
    pub value: String,
    /// Attributes the statement's frame can be about ("I'm at X now": employer, school, gym).
    pub kinds: &'static [&'static str],
}

/// A canonical registry key plus the raw text captured for it.
#[derive(Debug, Clone, PartialEq)]
pub struct RawClaim {
    pub key: String,
    pub value: String,
}

impl ExtractedFact {
    /// A fact whose claim is `key = value`, with the hint the linker reads.
    pub(crate) fn claimed(
        content: String,
        key: String,
        value: &str,
        rule: &'static str,
        update: bool,
        object: Option<String>,
    ) -> ExtractedFact {
        let hint = LinkHint { update, object, old: None, value: value.to_string(), kinds: &[] };
        ExtractedFact { content, claim: Some(RawClaim { key, value: value.to_string() }), rule, link: Some(hint) }
    }
}
