//! The built-in templates. Each proposes memories that say one thing each, in plain sentences,
//! and attaches a registry claim only where a field means exactly that claim (so a newer
//! employer supersedes the old one, while preferences accumulate).

use super::{Field, FieldType, MemorySpec, Template};
use crate::model::memory::MemoryKind;

const fn field(name: &'static str, kind: FieldType, required: bool, description: &'static str) -> Field {
    Field { name, kind, required, description }
}

const STATUS: FieldType = FieldType::Enum(&["open", "in_progress", "resolved", "escalated"]);
const SEVERITY: FieldType = FieldType::Enum(&["low", "medium", "high", "critical"]);

static TEMPLATES: &[Template] = &[
    Template {
        id: "user_preference",
        version: 1,
        title: "User preference",
        description: "Something the user prefers (a tool, a format, a style, a schedule). Becomes a \
                      `preferences` claim, which is multi-valued: preferences accumulate.",
        episode_type: "preference",
        fields: &[
            field(
                "preference",
                FieldType::Text,
                true,
                "What the user prefers, as a short phrase (e.g. 'answers in German').",
            ),
            field("topic", FieldType::Text, false, "What it is about (e.g. 'language', 'editor theme')."),
            field("reason", FieldType::Text, false, "Why, if the user said so."),
        ],
        content: "The user prefers {preference}[ ({topic})].[ Reason: {reason}.]",
        memories: &[MemorySpec {
            kind: MemoryKind::ProfileFact,
            text: "The user prefers {preference}[ ({topic})].",
            claim: Some(("preferences", "preference")),
        }],
        time_field: None,
        min_values: 0,
    },
    Template {
        id: "subject_profile",
        version: 1,
        title: "Profile facts",
        description: "Stable facts about the person this subject is: name, employer, role, home, contact details. \
                      Give at least one field. Name, employer and location are single-valued claims: a newer value \
                      supersedes the old one.",
        episode_type: "profile",
        fields: &[
            field("name", FieldType::Text, false, "Full name."),
            field("employer", FieldType::Text, false, "Current employer."),
            field("role", FieldType::Text, false, "Job title or role."),
            field("location", FieldType::Text, false, "Where the person lives now (city, region)."),
            field("email", FieldType::Email, false, "E-mail address."),
            field("phone", FieldType::Phone, false, "Phone number."),
            field("timezone", FieldType::Text, false, "Time zone (e.g. 'Europe/Oslo')."),
        ],
        content: "[Name: {name}\n][Employer: {employer}\n][Role: {role}\n][Location: {location}\n][Email: {email}\n]\
                  [Phone: {phone}\n][Time zone: {timezone}\n]",
        memories: &[
            MemorySpec {
                kind: MemoryKind::ProfileFact,
                text: "The user's name is {name}.",
                claim: Some(("identity.name", "name")),
            },
            MemorySpec {
                kind: MemoryKind::ProfileFact,
                text: "The user works at {employer}.",
                claim: Some(("employment.current_employer", "employer")),
            },
            MemorySpec { kind: MemoryKind::ProfileFact, text: "The user's role is {role}.", claim: None },
            MemorySpec {
                kind: MemoryKind::ProfileFact,
                text: "The user lives in {location}.",
                claim: Some(("location.current_home", "location")),
            },
            MemorySpec { kind: MemoryKind::ProfileFact, text: "The user's email address is {email}.", claim: None },
            MemorySpec { kind: MemoryKind::ProfileFact, text: "The user's phone number is {phone}.", claim: None },
            MemorySpec { kind: MemoryKind::ProfileFact, text: "The user's time zone is {timezone}.", claim: None },
        ],
        time_field: None,
        min_values: 1,
    },
    Template {
        id: "procedure_step",
        version: 1,
        title: "Procedure step",
        description: "One step of a procedure or runbook. Becomes a `procedure` memory, listed under Procedures \
                      in context bundles.",
        episode_type: "procedure",
        fields: &[
            field("procedure", FieldType::Text, true, "Name of the procedure (e.g. 'Deploy to production')."),
            field("step", FieldType::Integer, true, "Position of the step: 1, 2, 3..."),
            field("action", FieldType::Text, true, "What to do."),
            field("expected_result", FieldType::Text, false, "What should happen when it worked."),
            field("caution", FieldType::Text, false, "What to watch out for."),
        ],
        content: "{procedure}, step {step}: {action}.[ Expected result: {expected_result}.][ Caution: {caution}.]",
        memories: &[MemorySpec {
            kind: MemoryKind::Procedure,
            text: "{procedure}, step {step}: {action}.[ Expected result: {expected_result}.][ Caution: {caution}.]",
            claim: None,
        }],
        time_field: None,
        min_values: 0,
    },
    Template {
        id: "decision_record",
        version: 1,
        title: "Decision record",
        description: "A decision and why it was made (ADR style). The decision date, when given, is when the \
                      memory starts to hold.",
        episode_type: "decision",
        fields: &[
            field("decision", FieldType::Text, true, "What was decided."),
            field("topic", FieldType::Text, false, "What the decision is about."),
            field("rationale", FieldType::Text, false, "Why."),
            field("alternatives", FieldType::Text, false, "Options considered and rejected."),
            field("decided_by", FieldType::Text, false, "Who decided."),
            field("decided_on", FieldType::Date, false, "When (YYYY-MM-DD)."),
        ],
        content: "Decision[ about {topic}]: {decision}.[ Rationale: {rationale}.][ Alternatives considered: \
                  {alternatives}.][ Decided by {decided_by}.][ Date: {decided_on}.]",
        memories: &[MemorySpec {
            kind: MemoryKind::ProfileFact,
            text: "Decision[ about {topic}]: {decision}.[ Rationale: {rationale}.]",
            claim: None,
        }],
        time_field: Some("decided_on"),
        min_values: 0,
    },
    Template {
        id: "support_issue",
        version: 1,
        title: "Support issue summary",
        description: "Where a customer's support issue stands. Becomes an `episode_summary` memory.",
        episode_type: "support_issue",
        fields: &[
            field("summary", FieldType::Text, true, "The problem, in a sentence or two."),
            field("status", STATUS, true, "open, in_progress, resolved or escalated."),
            field("product", FieldType::Text, false, "Product or feature concerned."),
            field("ticket_id", FieldType::Text, false, "Ticket reference."),
            field("severity", SEVERITY, false, "low, medium, high or critical."),
            field("resolution", FieldType::Text, false, "How it was resolved, or the workaround."),
        ],
        content: "Support issue[ {ticket_id}][ ({product})][, severity {severity}]: {summary}. Status: {status}.\
                  [ Resolution: {resolution}.]",
        memories: &[MemorySpec {
            kind: MemoryKind::EpisodeSummary,
            text: "Support issue[ {ticket_id}][ ({product})][, severity {severity}]: {summary}. Status: {status}.\
                   [ Resolution: {resolution}.]",
            claim: None,
        }],
        time_field: None,
        min_values: 0,
    },
];

/// Every built-in template, in catalogue order.
pub fn all() -> &'static [Template] {
    TEMPLATES
}

/// The template with this id.
pub fn find(id: &str) -> Option<&'static Template> {
    TEMPLATES.iter().find(|t| t.id == id)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use chrono::DateTime;
    use serde_json::{json, Map, Value};
    use uuid::Uuid;

    use super::*;
    use crate::compile::claims::Registry;
    use crate::compile::pipeline::{compile_episode, EpisodeInput};
    use crate::templates::render::{parse, references};

    fn sample(f: &Field) -> &'static str {
        match f.kind {
            FieldType::Integer | FieldType::Number => "2",
            FieldType::Date => "2025-06-01",
            FieldType::Email => "dana@example.com",
            FieldType::Phone => "+47 22 33 44 55",
            FieldType::Url => "https://example.com",
            FieldType::Boolean => "true",
            FieldType::Enum(o) => o[0],
            FieldType::Text => "Globex",
        }
    }

    fn compile(payload: Map<String, Value>) -> Vec<crate::compile::pipeline::MemoryDraft> {
        let ep = EpisodeInput {
            id: Uuid::nil(),
            seq: 1,
            source: "memory-template".into(),
            voice: crate::model::voice::Voice::User,
            payload: Value::Object(payload),
            occurred_at: DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
        };
        compile_episode(&ep, &Registry::builtin())
    }

    #[test]
    fn every_template_is_well_formed() {
        let ids: BTreeSet<&str> = all().iter().map(|t| t.id).collect();
        assert_eq!(ids.len(), all().len(), "ids are unique");
        for t in all() {
            let names: BTreeSet<&str> = t.fields.iter().map(|f| f.name).collect();
            assert_eq!(names.len(), t.fields.len(), "{}: field names are unique", t.id);
            let required: BTreeSet<&str> = t.fields.iter().filter(|f| f.required).map(|f| f.name).collect();
            for text in std::iter::once(t.content).chain(t.memories.iter().map(|m| m.text)) {
                let pieces = parse(text).unwrap_or_else(|e| panic!("{}: {e}: {text}", t.id));
                for (name, optional) in references(&pieces) {
                    assert!(names.contains(name.as_str()), "{}: unknown field {name}", t.id);
                    if text == t.content && !optional {
                        assert!(required.contains(name.as_str()), "{}: {name} must be required or optional", t.id);
                    }
                }
            }
            for m in t.memories {
                assert!(m.kind != MemoryKind::ArtifactRef, "{}", t.id);
                if let Some((_, f)) = m.claim {
                    assert!(names.contains(f), "{}: claim field {f}", t.id);
                }
            }
            if let Some(f) = t.time_field {
                assert!(t.fields.iter().any(|x| x.name == f && x.kind == FieldType::Date), "{}", t.id);
            }
        }
    }

    #[test]
    fn the_smallest_valid_input_of_every_template_compiles_into_memories() {
        for t in all() {
            let mut inputs: Vec<BTreeMap<String, String>> = Vec::new();
            let required: BTreeMap<String, String> =
                t.fields.iter().filter(|f| f.required).map(|f| (f.name.to_string(), sample(f).to_string())).collect();
            if t.min_values == 0 {
                inputs.push(required);
            } else {
                // Any one field alone must be enough.
                inputs.extend(t.fields.iter().map(|f| BTreeMap::from([(f.name.to_string(), sample(f).to_string())])));
            }
            for values in inputs {
                let drafts = compile(t.payload(&values));
                assert!(!drafts.is_empty(), "{}: {values:?}", t.id);
                assert!(drafts.iter().all(|d| d.metadata["compiler"] == "structured"), "{}: {values:?}", t.id);
            }
        }
    }

    #[test]
    fn profile_fields_become_single_valued_claims() {
        let t = find("subject_profile").unwrap();
        let raw =
            json!({"name": "Dana Reyes", "employer": " Initech ", "location": "Oslo", "email": "dana@example.com"});
        let values = t.validate(raw.as_object().unwrap()).unwrap();
        let payload = t.payload(&values);
        assert_eq!(payload["content"], "Name: Dana Reyes\nEmployer: Initech\nLocation: Oslo\nEmail: dana@example.com");
        let drafts = compile(payload);
        let claims: Vec<(String, String)> =
            drafts.iter().filter_map(|d| d.claim.as_ref().map(|c| (c.key.clone(), c.value.clone()))).collect();
        assert_eq!(
            claims,
            vec![
                ("identity.name".into(), "dana reyes".into()),
                ("employment.current_employer".into(), "initech".into()),
                ("location.current_home".into(), "oslo".into()),
            ]
        );
        let texts: Vec<&str> = drafts.iter().map(|d| d.content.as_str()).collect();
        assert!(texts.contains(&"The user's email address is dana@example.com."), "{texts:?}");
        assert_eq!(drafts.len(), 4, "no catch-all summary for a structured episode");
    }

    #[test]
    fn decision_dates_anchor_the_memory() {
        let t = find("decision_record").unwrap();
        let raw = json!({"decision": "Use Postgres for the queue", "topic": "job queue", "decided_on": "2025-03-04"});
        let drafts = compile(t.payload(&t.validate(raw.as_object().unwrap()).unwrap()));
        assert_eq!(drafts.len(), 1);
        assert_eq!(drafts[0].content, "Decision about job queue: Use Postgres for the queue.");
        assert_eq!(drafts[0].valid_from.to_rfc3339(), "2025-03-04T00:00:00+00:00");
    }

    #[test]
    fn strict_validation_names_each_problem() {
        let t = find("procedure_step").unwrap();
        let raw = json!({"procedure": "Deploy", "step": "two", "colour": "red", "caution": 5});
        let errors = t.validate(raw.as_object().unwrap()).unwrap_err();
        let got: Vec<(String, &str)> = errors.iter().map(|e| (e.loc_string(), e.kind)).collect();
        assert_eq!(
            got,
            vec![
                ("values.colour".to_string(), "extra_forbidden"),
                ("values.step".to_string(), "int_parsing"),
                ("values.action".to_string(), "missing"),
                ("values.caution".to_string(), "string_type"),
            ]
        );
        let profile = find("subject_profile").unwrap();
        let errors = profile.validate(json!({"name": "  "}).as_object().unwrap()).unwrap_err();
        assert_eq!(errors[0].kind, "too_short");
    }
}
