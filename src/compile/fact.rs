//! A fact read from a user's statement: its text, the claim it makes, the rule that read it and
//! how it may be tied to a fact the subject already has (see `compile::link`).

/// A fact stated by the user, with an optional typed claim.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractedFact {
    pub content: String,
    pub claim: Option<RawClaim>,
    pub rule: FactRule,
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

/// Which pattern read a fact. [`FactRule::as_str`] is the name stored in the memory's
/// `metadata.rule`, so a variant's name never changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactRule {
    // Heuristic triggers: "I work at X", "I'm at X", "we use X"…
    Employer,
    JobTitle,
    LocatedAt,
    OnTeam,
    Home,
    Origin,
    Tool,
    Preference,
    TeamTool,
    TeamOn,
    // Copulas and names: "our X is V", "my favourite X is V", "my X is V", "my name is N", "I'm N".
    TeamSetup,
    Favorite,
    Attribute,
    Migration,
    IntroName,
    Name,
    // Update forms and frames (`compile::updates`).
    RoleAt,
    Count,
    Appositive,
    ListItem,
    Inverse,
    NewOne,
    Change,
    Terse,
    Frame,
    UpdateEvent,
    Replacement,
    // A standing instruction (`compile::procedures`).
    StandingInstruction,
}

impl FactRule {
    /// The stable name stored in `metadata.rule`.
    pub fn as_str(self) -> &'static str {
        match self {
            FactRule::Employer => "employer",
            FactRule::JobTitle => "job_title",
            FactRule::LocatedAt => "located_at",
            FactRule::OnTeam => "on_team",
            FactRule::Home => "home",
            FactRule::Origin => "origin",
            FactRule::Tool => "tool",
            FactRule::Preference => "preference",
            FactRule::TeamTool => "team_tool",
            FactRule::TeamOn => "team_on",
            FactRule::TeamSetup => "team_setup",
            FactRule::Favorite => "favorite",
            FactRule::Attribute => "attribute",
            FactRule::Migration => "migration",
            FactRule::IntroName => "intro_name",
            FactRule::Name => "name",
            FactRule::RoleAt => "role_at",
            FactRule::Count => "count",
            FactRule::Appositive => "appositive",
            FactRule::ListItem => "list_item",
            FactRule::Inverse => "inverse",
            FactRule::NewOne => "new_one",
            FactRule::Change => "change",
            FactRule::Terse => "terse",
            FactRule::Frame => "frame",
            FactRule::UpdateEvent => "update_event",
            FactRule::Replacement => "replacement",
            FactRule::StandingInstruction => "standing_instruction",
        }
    }
}

impl ExtractedFact {
    /// A fact whose claim is `key = value`, with the hint the linker reads.
    pub(crate) fn claimed(
        content: String,
        key: String,
        value: &str,
        rule: FactRule,
        update: bool,
        object: Option<String>,
    ) -> ExtractedFact {
        let hint = LinkHint { update, object, old: None, value: value.to_string(), kinds: &[] };
        ExtractedFact { content, claim: Some(RawClaim { key, value: value.to_string() }), rule, link: Some(hint) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_names_are_the_stored_ones() {
        let names: Vec<&str> = [FactRule::Employer, FactRule::TeamSetup, FactRule::ListItem, FactRule::UpdateEvent]
            .iter()
            .map(|r| r.as_str())
            .collect();
        assert_eq!(names, ["employer", "team_setup", "list_item", "update_event"]);
        assert_eq!(FactRule::StandingInstruction.as_str(), "standing_instruction");
    }
}
