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

/// Which pattern read a fact. It is stored as the memory's `metadata.rule` by its snake_case
/// name ("team_setup"), so a variant is never renamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
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
    fn rules_are_stored_by_the_names_of_today() {
        use FactRule::*;
        let rules = [
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
            TeamSetup,
            Favorite,
            Attribute,
            Migration,
            IntroName,
            Name,
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
            StandingInstruction,
        ];
        let names: Vec<String> =
            rules.iter().map(|r| serde_json::json!(r).as_str().unwrap_or("").to_string()).collect();
        assert_eq!(
            names.join(" "),
            "employer job_title located_at on_team home origin tool preference team_tool team_on team_setup favorite \
             attribute migration intro_name name role_at count appositive list_item inverse new_one change terse frame \
             update_event replacement standing_instruction"
        );
    }
}
