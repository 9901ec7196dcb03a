//! Which clauses mark a change ("now", "switched", "since"…), and which clauses that fail the
//! present-tense screen may still report an event.
//!
//! Events are usually told in the past ("I joined Acme last week"), so they are screened by a
//! narrower list than present-tense statements: hedges, negation, plans, credentials and
//! explicitly historic wording ("used to", "previously", "until") still block them.

use std::sync::LazyLock;

use regex::Regex;

/// Text about credentials (passwords, tokens, keys…), which never becomes a memory.
pub(crate) const CREDENTIALS: &str = r"(?i)\b(?:passwords?|passcodes?|passphrases?|secrets?|tokens?|api\s+keys?|private\s+keys?|secret\s+keys?|access\s+keys?|ssn|social\s+security|credit\s+cards?|card\s+numbers?|cvv|otp|pin\s+(?:code|number)|credentials?)\b";

struct Marks {
    event_skip: Vec<Regex>,
    update_mark: Regex,
}

static MARKS: LazyLock<Marks> = LazyLock::new(|| crate::patterns::built("update marks", build()));

fn build() -> Result<Marks, regex::Error> {
    Ok(Marks {
        event_skip: [
            r"(?i)\b(?:might|maybe|perhaps|probably|possibly|could|would|should|must|thinking\s+(?:about|of)|considering|consider|planning|plans?\s+to|wants?\s+to|wanted\s+to|wanna|hoping|hope\s+to|hopefully|not\s+sure|unsure|guess|supposedly|think|believe|suspect|assume|apparently|allegedly|likely|unlikely|wish|wonder|kind\s+of|sort\s+of|kinda|sorta|seems?|if|unless|whether|ideally|theoretically|hypothetically|pretend|imagine|dream(?:ing)?\s+of|tempted|debating|looking\s+(?:into|at)|eyeing|interview(?:ed|ing)?|applied|applying|offered|an\s+offer|in\s+talks|shortlisted|waitlist(?:ed)?|trial|trying\s+out|testing\s+out|evaluating|almost|nearly)\b|['’]d\b".to_string(),
            r"\b(?:may|will)\b".to_string(),
            r"(?i)\b(?:not|never|no|none|nobody|nothing|neither|nor|without|cannot|nope|dont|doesnt|didnt|isnt|arent|wasnt|werent|cant|wont|aint|hardly|barely)\b|n['’]t\b".to_string(),
            r"(?i)\b(?:used\s+to|previously|formerly|former|until|till|back\s+then|in\s+the\s+past|ex-|at\s+the\s+time|at\s+first|originally|before\s+(?:that|then|this))\b".to_string(),
            r"(?i)\b(?:going\s+to|gonna|next\s+(?:week|month|year|quarter|time|weekend|summer|winter|spring|fall|autumn|monday|tuesday|wednesday|thursday|friday)|soon|someday|some\s+day|tomorrow|upcoming|about\s+to|later|eventually|shortly)\b|['’]ll\b".to_string(),
            CREDENTIALS.to_string(),
        ]
        .iter()
        .map(|p| Regex::new(p))
        .collect::<Result<_, _>>()?,
        update_mark: Regex::new(
            r"(?i)\b(?:now|new|newly|since|switched|moved|migrated|upgraded|downgraded|replaced|bumped|changed|relocated|promoted|joined|left|anymore|any\s+more|these\s+days|as\s+of|updated|finally|officially|starting|took\s+over|instead)\b",
        )?,
    })
}

/// True when a clause that fails the present-tense screen may still carry an event.
pub(crate) fn event_allowed(clause: &str) -> bool {
    !MARKS.event_skip.iter().any(|re| re.is_match(clause))
}

/// True when the clause marks a change ("now", "new", "switched", "since"…).
pub(crate) fn marks_update(clause: &str) -> bool {
    MARKS.update_mark.is_match(clause)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_pass_a_narrower_screen() {
        assert!(event_allowed("I joined Acme last week"));
        assert!(!event_allowed("I might join Acme"));
        assert!(!event_allowed("I used to work at Acme"));
        assert!(!event_allowed("I interviewed at Acme"));
        assert!(!event_allowed("we're not switching banks"));
    }
}
