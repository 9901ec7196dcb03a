//! Reading evaluation datasets: mnemo's JSONL (one conversation a line), LoCoMo
//! (`locomo10.json`-style) and BEAM (`chat.json` with `probing_questions`). Each reader gives
//! the same [`Conversation`]s; [`Format::detect`] tells them apart by their first bytes.
//!
//! mnemo's JSONL, one object a line:
//! `{"id": "c1", "turns": [{"id": "t1", "role": "user", "content": "...", "session": "s1",
//! "at": "2026-01-05T09:00:00Z"}], "questions": [{"question": "...", "category": "update",
//! "evidence": ["t7"], "stale": ["t1"]}]}` (`session`, `at`, `category` and `stale` optional).

use anyhow::{bail, Context as _};
use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeDelta, Utc};
use serde::Deserialize;
use serde_json::Value;

use super::{Conversation, Question, Turn};

/// A dataset's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// mnemo's own JSONL (see the module's documentation).
    Jsonl,
    /// LoCoMo: a JSON array of samples with `conversation` sessions and `qa`.
    Locomo,
    /// BEAM: a JSON array of chats with `batches` and `probing_questions`.
    Beam,
}

impl Format {
    /// The format of `text`: an array whose first element has `sample_id` is LoCoMo, one with
    /// `batches` is BEAM; anything else is read as JSONL.
    pub fn detect(text: &str) -> Format {
        if text.trim_start().starts_with('[') {
            if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(text) {
                match items.first() {
                    Some(v) if v.get("sample_id").is_some() => return Format::Locomo,
                    Some(v) if v.get("batches").is_some() => return Format::Beam,
                    _ => {}
                }
            }
        }
        Format::Jsonl
    }
}

/// Reads `text` in `format` (detected when None).
pub fn read(text: &str, format: Option<Format>) -> anyhow::Result<Vec<Conversation>> {
    match format.unwrap_or_else(|| Format::detect(text)) {
        Format::Jsonl => jsonl(text),
        Format::Locomo => locomo(&serde_json::from_str(text).context("not JSON")?),
        Format::Beam => beam(&serde_json::from_str(text).context("not JSON")?),
    }
}

#[derive(Deserialize)]
struct JsonlConversation {
    id: String,
    turns: Vec<JsonlTurn>,
    #[serde(default)]
    questions: Vec<JsonlQuestion>,
}

#[derive(Deserialize)]
struct JsonlTurn {
    id: String,
    role: String,
    content: String,
    session: Option<String>,
    at: Option<DateTime<Utc>>,
}

#[derive(Deserialize)]
struct JsonlQuestion {
    question: String,
    #[serde(default = "uncategorised")]
    category: String,
    evidence: Vec<String>,
    #[serde(default)]
    stale: Vec<String>,
}

fn uncategorised() -> String {
    "all".into()
}

fn jsonl(text: &str) -> anyhow::Result<Vec<Conversation>> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let c: JsonlConversation = serde_json::from_str(line).with_context(|| format!("line {}", n + 1))?;
        let turns = c
            .turns
            .into_iter()
            .map(|t| Turn { id: t.id, role: t.role, content: t.content, session: t.session, at: t.at })
            .collect();
        let questions =
            c.questions.into_iter().map(|q| Question::new(q.question, q.category, q.evidence, q.stale)).collect();
        out.push(Conversation { id: c.id, turns, questions });
    }
    if out.is_empty() {
        bail!("no conversation in the file");
    }
    Ok(out)
}

/// LoCoMo's scored categories (5, adversarial, has no evidence to find).
const LOCOMO_CATEGORIES: [(u64, &str); 4] = [(1, "multi-hop"), (2, "temporal"), (3, "open-domain"), (4, "single-hop")];

fn locomo(data: &Value) -> anyhow::Result<Vec<Conversation>> {
    let mut out = Vec::new();
    for item in data.as_array().context("top level must be an array")? {
        let id = item["sample_id"].as_str().context("sample_id")?.to_string();
        let conv = item["conversation"].as_object().context("conversation")?;
        let mut turns = Vec::new();
        for n in 1.. {
            let Some(session) = conv.get(&format!("session_{n}")).and_then(Value::as_array) else { break };
            let when = conv.get(&format!("session_{n}_date_time")).and_then(Value::as_str).context("session date")?;
            let start = NaiveDateTime::parse_from_str(&when.replace(',', ""), "%I:%M %p on %d %B %Y")
                .with_context(|| format!("session date {when:?}"))?
                .and_utc();
            for (i, t) in session.iter().enumerate() {
                let mut content = t["text"].as_str().unwrap_or_default().to_string();
                if let Some(caption) = t.get("blip_caption").and_then(Value::as_str) {
                    content.push_str(&format!(" [shares a photo: {caption}]"));
                }
                turns.push(Turn {
                    id: t["dia_id"].as_str().context("dia_id")?.trim().to_string(),
                    role: t["speaker"].as_str().context("speaker")?.to_string(),
                    content,
                    session: Some(format!("session_{n}")),
                    at: Some(start + TimeDelta::seconds(i as i64)),
                });
            }
        }
        let mut questions = Vec::new();
        for q in item["qa"].as_array().context("qa")? {
            let Some((_, category)) = LOCOMO_CATEGORIES.iter().find(|(c, _)| q["category"].as_u64() == Some(*c)) else {
                continue;
            };
            let evidence = ids(&q["evidence"]);
            if !evidence.is_empty() {
                let text = q["question"].as_str().unwrap_or_default().to_string();
                questions.push(Question::new(text, category.to_string(), evidence, Vec::new()));
            }
        }
        out.push(Conversation { id, turns, questions });
    }
    Ok(out)
}

/// Every id in `v` (a string, a number, or lists and maps of them, nested), trimmed, in order,
/// each once.
fn ids(v: &Value) -> Vec<String> {
    fn each(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) if !s.trim().is_empty() => out.push(s.trim().to_string()),
            Value::Number(n) => out.push(n.to_string()),
            Value::Array(items) => items.iter().for_each(|i| each(i, out)),
            Value::Object(map) => map.values().for_each(|i| each(i, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    each(v, &mut out);
    let mut seen = std::collections::HashSet::new();
    out.retain(|i| seen.insert(i.clone()));
    out
}

/// BEAM's `source_chat_ids`, which some chats hold as a Python literal in a string
/// (`"{'original_info': [3], 'updated_info': [40]}"`).
fn sources(v: &Value) -> Value {
    match v.as_str() {
        Some(s) if s.trim_start().starts_with(['{', '[']) => {
            serde_json::from_str(&s.replace('\'', "\"")).unwrap_or(Value::Null)
        }
        _ => v.clone(),
    }
}

/// BEAM's time anchor ("March-15-2024") at 09:00 UTC.
fn anchor(s: &str) -> Option<DateTime<Utc>> {
    let d = NaiveDate::parse_from_str(s.trim(), "%B-%d-%Y").ok()?;
    Some(d.and_hms_opt(9, 0, 0)?.and_utc())
}

/// The generator's marker at the end of some BEAM messages (`->-> 1,1`), a data artifact.
fn without_marker(text: &str) -> &str {
    match text.rfind("->->") {
        Some(i) if text[i + 4..].trim().chars().all(|c| c.is_ascii_digit() || c == ',') => text[..i].trim_end(),
        _ => text,
    }
}

fn beam(data: &Value) -> anyhow::Result<Vec<Conversation>> {
    let mut out = Vec::new();
    for item in data.as_array().context("top level must be an array")? {
        let id = match &item["chat"] {
            Value::Null => format!("chat-{}", out.len() + 1),
            v => v.as_str().map_or_else(|| v.to_string(), str::to_string),
        };
        let mut turns = Vec::new();
        // A batch without a time anchor keeps the previous batch's date.
        let mut day = NaiveDate::from_ymd_opt(2024, 1, 1).and_then(|d| d.and_hms_opt(9, 0, 0)).map(|t| t.and_utc());
        for batch in item["batches"].as_array().context("batches")? {
            let n = batch["batch_number"].as_u64().unwrap_or(0);
            let messages: Vec<&Value> = batch["turns"].as_array().into_iter().flatten().flat_map(flatten).collect();
            let first_anchor = messages
                .first()
                .and_then(|m| m["time_anchor"].as_str())
                .or_else(|| batch["time_anchor"].as_str())
                .and_then(anchor);
            day = first_anchor.or(day);
            for (i, m) in messages.iter().enumerate() {
                turns.push(Turn {
                    id: ids(&m["id"]).into_iter().next().context("a message without an id")?,
                    role: m["role"].as_str().unwrap_or("user").to_string(),
                    content: without_marker(m["content"].as_str().unwrap_or_default()).to_string(),
                    session: Some(format!("batch_{n}")),
                    at: day.map(|d| d + TimeDelta::minutes(i as i64)),
                });
            }
        }
        // One episode per message in id order.
        turns.sort_by_key(|t| t.id.parse::<u64>().unwrap_or(u64::MAX));
        let mut questions = Vec::new();
        for (category, list) in item["probing_questions"].as_object().context("probing_questions")? {
            for q in list.as_array().into_iter().flatten() {
                let sources = sources(&q["source_chat_ids"]);
                let evidence = ids(&sources);
                if evidence.is_empty() {
                    continue;
                }
                let text = q["question"].as_str().unwrap_or_default().to_string();
                let mut question = Question::new(text, category.clone(), evidence, ids(&sources["original_info"]));
                if sources.get("updated_info").is_some() {
                    question.current = ids(&sources["updated_info"]);
                }
                questions.push(question);
            }
        }
        out.push(Conversation { id, turns, questions });
    }
    Ok(out)
}

/// The messages of a BEAM turn entry: a message, or lists of them.
fn flatten(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(items) => items.iter().flat_map(flatten).collect(),
        Value::Object(_) => vec![v],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonl_reads_turns_and_questions_with_defaults() {
        let text = r#"{"id":"c1","turns":[{"id":"t1","role":"user","content":"I live in Oslo"},{"id":"t2","role":"user","content":"We moved to Bergen","at":"2026-01-05T09:00:00Z"}],"questions":[{"question":"Where do I live?","evidence":["t2"],"stale":["t1"]}]}"#;
        assert_eq!(Format::detect(text), Format::Jsonl);
        let c = read(text, None).unwrap();
        assert_eq!(c[0].turns.len(), 2);
        assert_eq!(c[0].questions[0].category, "all");
        assert_eq!(c[0].questions[0].stale, ["t1"]);
        assert!(c[0].turns[1].at.is_some());
        assert!(read("", Some(Format::Jsonl)).is_err());
    }

    #[test]
    fn locomo_keeps_the_scored_categories_with_evidence() {
        let text = r#"[{"sample_id":"conv-1","conversation":{"session_1":[{"speaker":"Ann","dia_id":"D1:1","text":"Hi"},{"speaker":"Bo","dia_id":"D1:2","text":"Look","blip_caption":"a dog"}],"session_1_date_time":"1:56 pm on 8 May, 2023"},"qa":[{"question":"Q1","category":4,"evidence":["D1:2"]},{"question":"Q2","category":5,"evidence":["D1:1"]},{"question":"Q3","category":1,"evidence":[]}]}]"#;
        assert_eq!(Format::detect(text), Format::Locomo);
        let c = read(text, None).unwrap();
        assert_eq!(c[0].turns[1].content, "Look [shares a photo: a dog]");
        assert_eq!(c[0].questions.len(), 1);
        assert_eq!(c[0].questions[0].category, "single-hop");
    }

    #[test]
    fn beam_dates_batches_cuts_markers_and_splits_updates() {
        let text = r#"[{"chat":1,"batches":[{"batch_number":1,"time_anchor":"March-15-2024","turns":[[{"role":"user","id":0,"content":"Plan it ->-> 1,1"},{"role":"assistant","id":1,"content":"Sure"}]]},{"batch_number":2,"turns":[[{"role":"user","id":2,"content":"Now 250ms"}]]}],"probing_questions":{"knowledge_update":[{"question":"Latency?","source_chat_ids":"{'original_info': [0], 'updated_info': [2]}"}],"event_ordering":[{"question":"Order?","source_chat_ids":[[0],[1,2]]}],"abstention":[{"question":"?"}]}}]"#;
        assert_eq!(Format::detect(text), Format::Beam);
        let c = &read(text, None).unwrap()[0];
        assert_eq!(c.turns[0].content, "Plan it");
        assert_eq!(c.turns[1].at.unwrap().to_rfc3339(), "2024-03-15T09:01:00+00:00");
        assert_eq!(
            c.turns[2].at.unwrap().to_rfc3339(),
            "2024-03-15T09:00:00+00:00",
            "a batch without an anchor keeps the date"
        );
        let ku = c.questions.iter().find(|q| q.category == "knowledge_update").unwrap();
        assert_eq!(ku.evidence, ["0", "2"], "both statements are evidence, as the protocol counts them");
        assert_eq!((ku.stale.clone(), ku.current.clone()), (vec!["0".to_string()], vec!["2".to_string()]));
        let eo = c.questions.iter().find(|q| q.category == "event_ordering").unwrap();
        assert_eq!(eo.evidence, ["0", "1", "2"]);
        assert_eq!(c.questions.len(), 2, "abstention has no evidence");
    }
}
