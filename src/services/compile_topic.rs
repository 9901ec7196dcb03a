//! Feeding the same-topic judge ([`crate::compile::topic`]) from a compile batch: the user's
//! new messages against the subject's active memories of the user's own words, and the
//! supersessions it decides, as rows to write.

use std::collections::{BTreeSet, HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde_json::json;
use uuid::Uuid;

use crate::compile::attributes::attributes;
use crate::compile::claims::{normalize_value, parse_claim, Cardinality, Registry};
use crate::compile::pipeline::{sanitized_text, time_anchor, EpisodeInput, MemoryDraft};
use crate::compile::procedures::standing_rules;
use crate::compile::supersede::{Decision, Rule};
pub use crate::compile::topic::Place;
use crate::compile::topic::{
    judge, may_change, may_restate, readable, Mark, Newer, Older, UpdateWords, Words, BUILT_IN,
};
use crate::db::supersession::{ActiveRow, RecordRow};
use crate::model::memory::MemoryKind;
use crate::model::voice::Voice;

/// A new message of the batch as the judge needs it, with its time anchor.
#[derive(Debug, Clone)]
pub struct NewMessage {
    newer: Newer,
    anchor: DateTime<Utc>,
}

/// A memory's or message's place in time as the judge compares them.
pub fn place(at: DateTime<Utc>, group: String) -> Place {
    (at.timestamp_micros(), group)
}

/// The group key of a memory: its episode's seq, the first part of its order tiebreak.
pub fn group_key(tiebreak: &str) -> String {
    tiebreak.split(':').next().unwrap_or(tiebreak).to_string()
}

/// The user's lines of a sanitised text ("user: …" lines, or a plain text of the user's).
fn user_lines(text: &str, plain: bool) -> String {
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("user: ") {
            out.push(rest);
        } else if plain && !line.split_once(": ").is_some_and(|(r, _)| r.chars().all(char::is_alphabetic)) {
            out.push(line);
        }
    }
    out.join("\n")
}

/// The batch's messages in the user's voice, each with the summary that stands for it and its
/// vector (`vectors`, by episode, when the embedder is semantic).
pub fn new_messages(
    inputs: &[EpisodeInput],
    drafts: &[MemoryDraft],
    ids: &[Uuid],
    vectors: &HashMap<Uuid, Vec<f32>>,
) -> Vec<NewMessage> {
    let summaries: HashMap<Uuid, Uuid> = drafts
        .iter()
        .zip(ids)
        .filter(|(d, _)| d.kind == MemoryKind::EpisodeSummary)
        .map(|(d, id)| (d.source_episode_id, *id))
        .collect();
    inputs
        .iter()
        .filter(|ep| ep.voice.relays_user())
        .filter_map(|ep| {
            let text = user_lines(&sanitized_text(&ep.payload, ep.voice), ep.voice == Voice::User);
            let group = format!("{:020}", ep.seq);
            let successor = summaries.get(&ep.id).copied();
            let anchor = time_anchor(ep);
            (!text.trim().is_empty()).then(|| NewMessage {
                newer: Newer {
                    group: group.clone(),
                    successor,
                    text,
                    at: place(anchor, group),
                    vector: vectors.get(&ep.id).cloned(),
                },
                anchor,
            })
        })
        .collect()
}

/// The memories the claim and word rules supersede in this batch, with the place in time of
/// the memory that supersedes each ([`decide`]'s `taken`).
pub fn taken(decisions: &[Decision], active: &[ActiveRow]) -> HashMap<Uuid, Place> {
    let order: HashMap<Uuid, Place> =
        active.iter().map(|r| (r.id, place(r.order_at, group_key(&r.order_tiebreak)))).collect();
    decisions
        .iter()
        .filter(|d| d.rule != Rule::WideningSkipped)
        .filter_map(|d| order.get(&d.superseding).map(|o| (d.superseded, o.clone())))
        .collect()
}

/// The judge's word lists for a tenant: the built-in ones, with the tenant's `update_words`
/// added (checked when the configuration was written; unreadable ones are not used).
pub fn words_for(config: &serde_json::Value) -> std::sync::Arc<Words> {
    let extra = config.get("update_words").and_then(|v| serde_json::from_value::<UpdateWords>(v.clone()).ok());
    match extra {
        Some(extra) if extra != UpdateWords::default() => std::sync::Arc::new(BUILT_IN.extended(&extra)),
        _ => std::sync::Arc::clone(&BUILT_IN),
    }
}

/// Whether any message of the batch may change an earlier memory ([`may_change`]).
pub fn may_change_any(messages: &[NewMessage]) -> bool {
    messages.iter().any(|m| may_change(&m.newer.text))
}

/// The earlier memories the judge may retire or doubt, with their valid_from: the active
/// memories of the user's own words (facts of single-valued or no claims, and summaries that
/// state no standing instruction), with their vectors from `vectors`.
fn older_of(
    active: &[ActiveRow],
    registry: &Registry,
    taken: &HashMap<Uuid, Place>,
    vectors: &HashMap<Uuid, Vec<f32>>,
) -> (Vec<Older>, HashMap<Uuid, DateTime<Utc>>) {
    let mut older: Vec<Older> = Vec::new();
    let mut starts: HashMap<Uuid, DateTime<Utc>> = HashMap::new();
    for r in active.iter().filter(|r| !r.evidence) {
        let (text, value, key, multi) = match r.kind {
            // A standing instruction is no value to replace: it changes through its procedure's
            // topic claim (`procedure.<topic>`, compile::procedures), never by a later message
            // that shares a word with it (on long chats such matches were all wrong).
            MemoryKind::EpisodeSummary => {
                let text = user_lines(&r.content, true);
                if !standing_rules(&text).is_empty() {
                    continue;
                }
                (text, None, None, false)
            }
            MemoryKind::ProfileFact => {
                let claim = r.claim.as_ref().and_then(|c| parse_claim(c, registry));
                let multi = claim.as_ref().is_some_and(|c| c.cardinality == Cardinality::Multi);
                let key = claim.as_ref().map(|c| c.key.clone());
                (r.content.clone(), claim.map(|c| c.value), key, multi)
            }
            _ => continue,
        };
        if text.trim().is_empty() {
            continue;
        }
        let group = group_key(&r.order_tiebreak);
        // A memory with no claim of its own that changed a claimed one is about that attribute
        // ("moved to biweekly releases", after "we release monthly"): its words name it too, so
        // the next change of the attribute finds it, however it is worded.
        let keys: Vec<String> = match key {
            Some(k) => vec![k],
            None => r.revised_keys.clone(),
        };
        let key_words =
            keys.iter().flat_map(|k| attributes().words_of(k)).collect::<BTreeSet<_>>().into_iter().collect();
        let key_phrases = keys.iter().flat_map(|k| attributes().phrases_of(k)).collect();
        starts.insert(r.id, r.valid_from);
        let until = taken.get(&r.id).cloned();
        older.push(Older {
            id: r.id,
            group: group.clone(),
            text,
            value,
            key_words,
            key_phrases,
            multi,
            at: place(r.order_at, group),
            until,
            vector: vectors.get(&r.id).cloned(),
            revises: r.revises.clone(),
        });
    }
    (older, starts)
}

/// What the judge decides for a batch.
#[derive(Debug, Default)]
pub struct Decided {
    /// The memories it retires, with their new valid_to.
    pub losers: Vec<(Uuid, DateTime<Utc>)>,
    /// The supersession records to write.
    pub records: Vec<RecordRow>,
    /// (the memory standing for a newer message, an earlier memory it may change or retires):
    /// shown as earlier in bundles ([`crate::compile::topic::Doubt`]; a retired memory is
    /// never shown, but its turn may be, while another memory of it is current).
    pub doubts: Vec<(Uuid, Uuid)>,
}

/// What the judge decides: supersessions and doubts. `taken` are the memories this batch's
/// other rules supersede, with the place in time of the memory that supersedes each: a message
/// is judged against what was current at its own place, so any split of the same episodes into
/// batches decides the same. `vectors` are earlier memories' vectors (semantic embedders only).
pub fn decide(
    messages: &[NewMessage],
    active: &[ActiveRow],
    registry: &Registry,
    taken: &HashMap<Uuid, Place>,
    vectors: &HashMap<Uuid, Vec<f32>>,
) -> Decided {
    let mut out = Decided::default();
    // Most batches change nothing: the earlier memories are read only when one may, and only
    // the claimed single values when a message may restate one but none marks a change.
    let changes = may_change_any(messages);
    if !changes && !messages.iter().any(|m| may_restate(&m.newer.text)) {
        return out;
    }
    let (mut older, starts) = older_of(active, registry, taken, vectors);
    if !changes {
        let claimed: HashSet<String> =
            older.iter().filter(|o| o.value.is_some() && !o.multi).map(|o| o.group.clone()).collect();
        older.retain(|o| claimed.contains(&o.group));
    }
    let mut newer: Vec<(Newer, DateTime<Utc>)> = messages.iter().map(|m| (m.newer.clone(), m.anchor)).collect();
    newer.sort_by(|a, b| a.0.at.cmp(&b.0.at));
    let (newer, anchors): (Vec<Newer>, Vec<DateTime<Utc>>) = newer.into_iter().unzip();
    let judgement = judge(&newer, &older);
    for d in judgement.doubts {
        if let (Some(successor), false) = (newer[d.by].successor, taken.contains_key(&d.older)) {
            out.doubts.push((successor, d.older));
        }
    }
    for r in judgement.retired {
        if taken.contains_key(&r.older) {
            // A later memory of this batch supersedes it by claim or words already.
            continue;
        }
        // The retired message's turn still shows while another memory of it is current (a
        // fact about something else): it shows marked as earlier.
        if let Some(successor) = newer[r.by].successor {
            out.doubts.push((successor, r.older));
        }
        let at = anchors[r.by];
        let rule = if r.mark == Mark::Retraction { Rule::Retraction } else { Rule::TopicChange };
        // A procedure of the same words ("I prefer tea in the mornings", read both as a fact and
        // as a standing preference) is the same statement: it goes with the fact.
        let twins = same_words(active, r.older).into_iter().filter(|id| !taken.contains_key(id));
        for (older, twin) in std::iter::once((r.older, None)).chain(twins.map(|t| (t, Some(r.older)))) {
            if out.losers.iter().any(|(id, _)| *id == older) {
                continue;
            }
            out.losers.push((older, starts.get(&older).map_or(at, |f| at.max(*f))));
            let mut details = json!({"judge": "same_topic", "shared_terms": r.shared});
            if let Some(fact) = twin {
                details["same_words_as"] = json!(fact);
            }
            out.records.push(RecordRow {
                superseded: older,
                superseding: r.newer,
                rule: rule.as_str().to_string(),
                claim_key: None,
                score: Some(r.shared as f64),
                threshold: Some(1.0),
                details,
            });
        }
    }
    out
}

/// The user's procedures drawn from the same words as the fact `id` (its message, its text).
fn same_words(active: &[ActiveRow], id: Uuid) -> Vec<Uuid> {
    let Some(fact) = active.iter().find(|r| r.id == id && r.kind == MemoryKind::ProfileFact) else {
        return Vec::new();
    };
    let words = |s: &str| normalize_value(s.trim().trim_end_matches('.'));
    let group = group_key(&fact.order_tiebreak);
    active
        .iter()
        .filter(|r| r.kind == MemoryKind::Procedure && !r.evidence && group_key(&r.order_tiebreak) == group)
        .filter(|r| words(&r.content) == words(&fact.content))
        .map(|r| r.id)
        .collect()
}

/// The earlier memories the judge may doubt by meaning (for the caller to fetch their vectors).
pub fn doubt_candidates(active: &[ActiveRow], registry: &Registry) -> Vec<Uuid> {
    let (older, _) = older_of(active, registry, &HashMap::new(), &HashMap::new());
    older.into_iter().filter(readable).map(|o| o.id).collect()
}

/// The doubts as `metadata.revises` of the memories standing for the newer messages: for each,
/// the earlier memories and the episodes they came from (`sources`), in id order.
pub fn revises(doubts: &[(Uuid, Uuid)], sources: &HashMap<Uuid, Vec<Uuid>>) -> (Vec<Uuid>, Vec<serde_json::Value>) {
    let mut by: std::collections::BTreeMap<Uuid, std::collections::BTreeSet<Uuid>> = Default::default();
    for (newer, older) in doubts {
        by.entry(*newer).or_default().insert(*older);
    }
    by.into_iter()
        .map(|(newer, olds)| {
            let list: Vec<serde_json::Value> = olds
                .into_iter()
                .map(|o| json!({"memory": o, "episodes": sources.get(&o).cloned().unwrap_or_default()}))
                .collect();
            (newer, serde_json::Value::Array(list))
        })
        .unzip()
}

/// [`revises`] spread from each newer message's summary to the memories of this batch drawn
/// from the same message (its facts and procedures, not evidence): a bundle that retrieves one
/// of them and not the summary still marks what the message may have changed.
pub fn spread_to_message(
    active: &[ActiveRow],
    new: &HashSet<Uuid>,
    (ids, revises): (Vec<Uuid>, Vec<serde_json::Value>),
) -> (Vec<Uuid>, Vec<serde_json::Value>) {
    let group = |id: &Uuid| active.iter().find(|r| r.id == *id).map(|r| group_key(&r.order_tiebreak));
    let mut out = (ids.clone(), revises.clone());
    for (id, r) in ids.iter().zip(&revises) {
        let Some(g) = group(id) else { continue };
        let drawn = active.iter().filter(|row| {
            new.contains(&row.id) && !row.evidence && !ids.contains(&row.id) && group_key(&row.order_tiebreak) == g
        });
        for row in drawn {
            out.0.push(row.id);
            out.1.push(r.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(n: u128, kind: MemoryKind, content: &str, seq: &str) -> ActiveRow {
        ActiveRow {
            id: Uuid::from_u128(n),
            kind,
            content: content.into(),
            valid_from: Utc::now(),
            valid_to: None,
            order_at: Utc::now(),
            order_tiebreak: format!("{seq}:0"),
            claim: None,
            claim_bucket: None,
            replaces: None,
            evidence: false,
            revises: Vec::new(),
            revised_keys: Vec::new(),
        }
    }

    #[test]
    fn a_procedure_of_the_same_words_goes_with_its_fact() {
        let active = [
            row(1, MemoryKind::ProfileFact, "I prefer tea in the mornings", "07"),
            row(2, MemoryKind::Procedure, "I prefer tea in the mornings.", "07"),
            row(3, MemoryKind::Procedure, "I prefer tea in the mornings", "09"), // another message
            row(4, MemoryKind::Procedure, "Always answer in French", "07"),      // other words
        ];
        assert_eq!(same_words(&active, Uuid::from_u128(1)), [Uuid::from_u128(2)]);
        assert!(same_words(&active, Uuid::from_u128(2)).is_empty(), "only a fact has twins");
    }

    #[test]
    fn user_lines_keep_only_the_user() {
        assert_eq!(user_lines("user: my phone is a Pixel\nassistant: noted", false), "my phone is a Pixel");
        assert_eq!(user_lines("I live in Oslo", true), "I live in Oslo");
        assert_eq!(user_lines("assistant: noted", true), "");
    }
}
