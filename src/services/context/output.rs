//! Stages 6-7: packing the ranked items under the exact budget, and the bundle they make.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::rank::{Item, Ranked};
use super::suppress::EPISODE_LINE_CHARS;
use super::{Bundle, Considered, Selected, SessionInfo};
use crate::bundle::excerpt::{excerpt_at, Part, TaskStems};
use crate::bundle::pack::{first_within, pack_covering};
use crate::bundle::render::{earlier, episode_line, memory_line, quoted_line, turn_line, Line, Place, Section};
use crate::bundle::tokens;
use crate::compile::digest::is_digest;
use crate::compile::pipeline::source_label;
use crate::compile::text::episode_text;
use crate::db::context::{EpisodeCandidate, MemoryCandidate};
use crate::db::working_memory::SnapshotRow;
use crate::model::memory::{Memory, MemoryKind, MemoryStatus};
use crate::model::voice::{Trust, Voice};

/// What packing needs from the request.
pub struct PackRequest<'a> {
    pub task: &'a str,
    pub max_tokens: usize,
    pub session_id: Option<&'a str>,
    pub as_of: DateTime<Utc>,
    pub compact: bool,
    /// The current session's snapshot: its pinned turns and summary lead the session.
    pub snapshot: Option<&'a SnapshotRow>,
    /// How many of the best-ranked chat turns show whole; the others show excerpts.
    pub whole_turns: usize,
    /// Room of one of those turns, in chars ([`whole_chars`]).
    pub whole_chars: usize,
    /// Room of a turn's excerpt, in chars.
    pub turn_chars: usize,
    /// Turns ranked from here on get `tail_chars` of room.
    pub tail_from: usize,
    /// Room of those deeper turns' excerpts, in chars.
    pub tail_chars: usize,
    /// Which sources are evidence: their lines go to the fenced quoted section.
    pub trust: &'a Trust,
    /// Sessions' digests lead the bundle within this share of the budget (1/n; 0: none leads).
    pub digest_share: usize,
}

/// Longest pinned turn shown, in chars (pinned turns are shown whole up to this).
const PINNED_CHARS: usize = 4000;

/// Room of a best-ranked turn in a bundle of `max_tokens`: a `1/share` of the budget at four
/// chars a token, at most [`PINNED_CHARS`] (share 0: always that).
pub fn whole_chars(max_tokens: usize, share: usize) -> usize {
    match share {
        0 => PINNED_CHARS,
        n => (max_tokens.saturating_mul(4) / n).min(PINNED_CHARS),
    }
}
/// A summary gets at most this share of the budget; a longer one is cut, ending in "…".
const SUMMARY_BUDGET_SHARE: usize = 2;
const SUMMARY_LABEL: &str = "- Summary of earlier turns: ";
/// The subject's procedures lead the bundle within this share of the budget (1/n).
const PROCEDURE_BUDGET_SHARE: usize = 10;

fn is_procedure(item: &Item) -> bool {
    matches!(item, Item::Memory(m) if m.memory.kind == MemoryKind::Procedure)
}

/// Packs `ranked` and builds the bundle of the included items (facts, then summaries;
/// procedures; episodes in time order; the sessions they come from).
pub fn bundle(ranked: Ranked, req: &PackRequest<'_>, policy: Value) -> Bundle {
    let pinned = |item: &Item| match (item, req.snapshot) {
        (Item::Episode(e), Some(s)) => {
            s.pinned.contains(&e.episode.id) && e.episode.session_id.as_deref() == req.session_id
        }
        _ => false,
    };
    let mut pins: Vec<(i64, Line)> = ranked
        .items
        .iter()
        .filter(|(_, _, item)| pinned(item))
        .filter_map(|(_, _, item)| match item {
            Item::Episode(e) => Some((e.seq, pinned_line(e))),
            Item::Memory(_) => None,
        })
        .collect();
    pins.sort_by_key(|(seq, _)| *seq);
    let mut lines: Vec<Line> = pins.into_iter().map(|(_, l)| l).collect();
    if let (Some(s), Some(sid)) = (req.snapshot, req.session_id) {
        lines.push(summary_line(s, sid, req.max_tokens / SUMMARY_BUDGET_SHARE));
    }
    let turns = TurnText {
        stems: TaskStems::new(req.task),
        whole: req.whole_turns,
        whole_chars: req.whole_chars,
        chars: req.turn_chars,
        tail_from: req.tail_from,
        tail_chars: req.tail_chars,
    };
    let mut turn_rank = 0;
    let ranked_lines = ranked.items.iter().filter(|(_, _, item)| !pinned(item)).map(|(_, _, item)| {
        let (procedure, line) = match quoted(item, req.trust) {
            Some(label) => (false, quoted_line_for(item, &label, req.compact, &ranked.full_text, &turns)),
            None => (is_procedure(item), line_for(item, req.compact, &ranked.full_text, &turns, turn_rank)),
        };
        let line = if ranked.earlier.contains(&line.id) { Line { text: earlier(&line.text), ..line } } else { line };
        turn_rank += usize::from(matches!(item, Item::Episode(_)));
        (procedure, line)
    });
    // A session's digest (only a task about many moments has them) comes before the turns and,
    // once packed, stands for the turns it quotes.
    let covers: HashMap<Uuid, Vec<Uuid>> = ranked
        .items
        .iter()
        .filter_map(|(_, id, item)| match item {
            Item::Memory(m) if is_digest(&m.memory.metadata) => Some((*id, m.memory.source_episode_ids.clone())),
            _ => None,
        })
        .collect();
    let ranked_lines = first_within(ranked_lines.collect(), req.max_tokens / PROCEDURE_BUDGET_SHARE);
    let digest_room = req.max_tokens.checked_div(req.digest_share).unwrap_or(0);
    lines
        .extend(first_within(ranked_lines.into_iter().map(|l| (covers.contains_key(&l.id), l)).collect(), digest_room));
    let packed = pack_covering(req.task, ranked.caveat, req.session_id, &lines, req.max_tokens, &covers);
    let snapshot_id = req.snapshot.map(|s| s.id).filter(|id| packed.included.contains(id));
    let considered = considered(&ranked, lines, &packed.included);
    let mut by_id: HashMap<Uuid, (f64, Item)> = ranked.items.into_iter().map(|(s, id, it)| (id, (s, it))).collect();
    let mut bundle = Bundle {
        facts: Vec::new(),
        procedures: Vec::new(),
        episodes: Vec::new(),
        assembled_context: packed.text,
        token_estimate: packed.token_estimate,
        sessions: Vec::new(),
        as_of: req.as_of,
        selected: Vec::new(),
        policy,
        snapshot_id,
        considered,
    };
    let mut summaries = Vec::new();
    let mut sessions: BTreeMap<String, SessionInfo> = BTreeMap::new();
    for id in &packed.included {
        let Some((s, item)) = by_id.remove(id) else { continue };
        bundle.selected.push(Selected { id: *id, is_memory: matches!(item, Item::Memory(_)), score: s });
        match item {
            Item::Memory(m) => match m.memory.kind {
                MemoryKind::ProfileFact => bundle.facts.push(as_believed(&m, req.as_of)),
                MemoryKind::Procedure => bundle.procedures.push(as_believed(&m, req.as_of)),
                MemoryKind::EpisodeSummary | MemoryKind::ArtifactRef => summaries.push(as_believed(&m, req.as_of)),
            },
            Item::Episode(EpisodeCandidate { episode: e, .. }) => {
                if let Some(sid) = &e.session_id {
                    let info = sessions.entry(sid.clone()).or_insert(SessionInfo {
                        session_id: sid.clone(),
                        episode_count: 0,
                        first_at: e.created_at,
                        last_at: e.created_at,
                    });
                    info.episode_count += 1;
                    info.first_at = info.first_at.min(e.created_at);
                    info.last_at = info.last_at.max(e.created_at);
                }
                bundle.episodes.push(std::sync::Arc::unwrap_or_clone(e));
            }
        }
    }
    bundle.facts.extend(summaries);
    bundle.episodes.sort_by_key(|a| (a.occurred_at, a.created_at, a.id));
    bundle.sessions = sessions.into_values().collect();
    bundle
}

/// The ranked items in rank order with their lines and whether packing included them.
fn considered(ranked: &Ranked, lines: Vec<Line>, included: &[Uuid]) -> Vec<Considered> {
    let included: HashSet<&Uuid> = included.iter().collect();
    let mut texts: HashMap<Uuid, String> = lines.into_iter().map(|l| (l.id, l.text)).collect();
    ranked
        .items
        .iter()
        .map(|(score, id, item)| Considered {
            id: *id,
            is_memory: matches!(item, Item::Memory(_)),
            score: *score,
            line: texts.remove(id).unwrap_or_default(),
            included: included.contains(id),
        })
        .collect()
}

/// A pinned turn's line: the turn whole (up to [`PINNED_CHARS`]), first in its session.
fn pinned_line(e: &EpisodeCandidate) -> Line {
    let ep = &e.episode;
    Line {
        id: ep.id,
        section: Section::Interactions,
        text: turn_line(&episode_text(&ep.payload), ep.metadata.get("outcome"), PINNED_CHARS),
        session_id: ep.session_id.clone(),
        date: Some(ep.occurred_at.format("%Y-%m-%d").to_string()),
        order: ep.occurred_at.timestamp_micros(),
        place: Place::Pinned,
    }
}

/// The snapshot's summary as one line of the current session (newlines flattened, so a
/// summary cannot open sections of its own), cut to `max_tokens` tokens.
pub fn summary_line(s: &SnapshotRow, session_id: &str, max_tokens: usize) -> Line {
    let flat = s.summary.split_whitespace().collect::<Vec<_>>().join(" ");
    let text = if tokens::count(&flat) > max_tokens {
        format!("{}…", tokens::truncate(&flat, max_tokens.saturating_sub(1)).trim_end())
    } else {
        flat
    };
    Line {
        id: s.id,
        section: Section::Interactions,
        text: format!("{SUMMARY_LABEL}{text}"),
        session_id: Some(session_id.to_string()),
        date: None,
        order: i64::MIN,
        place: Place::Summary,
    }
}

/// The memory as believed at `as_of` (a row superseded later was still active then).
fn as_believed(c: &MemoryCandidate, as_of: DateTime<Utc>) -> Memory {
    let mut m = Memory::clone(&c.memory);
    let superseded_then = c.superseded_at.is_some_and(|t| t <= as_of);
    if m.status == MemoryStatus::Superseded && !superseded_then {
        m.status = MemoryStatus::Active;
        m.valid_to = c.asserted_valid_to;
    }
    m
}

/// How compact bundles show chat turns: the best few whole, the next as excerpts, the deeper
/// ones as shorter excerpts.
struct TurnText {
    stems: TaskStems,
    whole: usize,
    whole_chars: usize,
    chars: usize,
    tail_from: usize,
    tail_chars: usize,
}

impl TurnText {
    /// The turn's line text: whole (within `whole_chars`) for the `whole` best-ranked turns,
    /// else its excerpt biased to the task's words (whole when short), within `chars` up to
    /// rank `tail_from` and `tail_chars` after.
    fn line(&self, e: &crate::model::episode::Episode, rank: usize, focus: Option<usize>) -> Option<String> {
        let msgs = e.payload.get("messages")?.as_array()?;
        let prefixes: Vec<(String, &str)> = msgs
            .iter()
            .filter_map(|m| {
                let text = m.get("content")?.as_str()?;
                let role = m.get("role").and_then(Value::as_str).unwrap_or("unknown");
                Some((format!("{role}: "), text))
            })
            .collect();
        let parts: Vec<Part<'_>> = prefixes.iter().map(|(p, t)| Part { prefix: p, text: t }).collect();
        let chars = if rank < self.whole {
            self.whole_chars
        } else if rank < self.tail_from {
            self.chars
        } else {
            self.tail_chars
        };
        let text = newlines_flat(&excerpt_at(&parts, &self.stems, chars, focus));
        Some(turn_line(&text, e.metadata.get("outcome"), usize::MAX))
    }
}

/// The text on one line.
fn newlines_flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The bundle line of an item; with `compact`, a chat turn shows only its speakers and text
/// (its session and date head the group it sits in): whole when it is among the best-ranked
/// turns or short, else an excerpt of the sentences that share the task's words.
fn line_for(item: &Item, compact: bool, full_text: &HashMap<Uuid, String>, turns: &TurnText, turn_rank: usize) -> Line {
    match item {
        Item::Memory(MemoryCandidate { memory: m, .. }) => Line {
            id: m.id,
            section: match m.kind {
                MemoryKind::ProfileFact => Section::Facts,
                MemoryKind::Procedure => Section::Procedures,
                MemoryKind::EpisodeSummary | MemoryKind::ArtifactRef => Section::History,
            },
            text: memory_line(m.kind, &m.content, Some(m.valid_from)),
            session_id: None,
            date: None,
            order: m.valid_from.timestamp_micros(),
            place: Place::Turn,
        },
        Item::Episode(EpisodeCandidate { episode: e, focus, .. }) => Line {
            id: e.id,
            section: Section::Interactions,
            text: if let Some(line) = compact.then(|| turns.line(e, turn_rank, *focus)).flatten() {
                line
            } else if let Some(full) = full_text.get(&e.id) {
                turn_line(full, e.metadata.get("outcome"), usize::MAX)
            } else if compact && e.payload.get("messages").is_some_and(Value::is_array) {
                turn_line(&episode_text(&e.payload), e.metadata.get("outcome"), EPISODE_LINE_CHARS)
            } else {
                episode_line(&e.source, &e.kind, &episode_text(&e.payload), e.metadata.get("outcome"))
            },
            session_id: e.session_id.clone(),
            date: Some(e.occurred_at.format("%Y-%m-%d").to_string()),
            order: e.occurred_at.timestamp_micros(),
            place: Place::Turn,
        },
    }
}

/// The source label of an item that is evidence ([`crate::model::voice`]): an episode whose
/// source the tenant's trust names evidence, or a memory made from one (`metadata.voice`).
fn quoted(item: &Item, trust: &Trust) -> Option<String> {
    match item {
        Item::Memory(MemoryCandidate { memory: m, .. }) => {
            (m.metadata.get("voice").and_then(Value::as_str) == Some(Voice::Evidence.as_str())).then(|| {
                let source = m.metadata.get("evidence_source").and_then(Value::as_str).unwrap_or("evidence");
                format!("{} {}", source_label(source), m.kind.as_str().replace('_', " "))
            })
        }
        Item::Episode(EpisodeCandidate { episode: e, .. }) => (trust.voice(&e.source) == Voice::Evidence)
            .then(|| format!("{}/{}", source_label(&e.source), source_label(&e.kind))),
    }
}

/// The line of an evidence item in the quoted section: its label and date, then the memory's
/// content, or the episode's text as a turn would show it (the task's sentences when compact).
fn quoted_line_for(
    item: &Item,
    label: &str,
    compact: bool,
    full_text: &HashMap<Uuid, String>,
    turns: &TurnText,
) -> Line {
    match item {
        Item::Memory(MemoryCandidate { memory: m, .. }) => Line {
            id: m.id,
            section: Section::Quoted,
            text: quoted_line(label, Some(m.valid_from), &m.content, None),
            session_id: None,
            date: None,
            order: m.valid_from.timestamp_micros(),
            place: Place::Turn,
        },
        Item::Episode(EpisodeCandidate { episode: e, focus, .. }) => {
            let text = episode_text(&e.payload);
            let body = match full_text.get(&e.id) {
                Some(full) => newlines_flat(full),
                None if compact => {
                    let parts = [Part { prefix: "", text: &text }];
                    newlines_flat(&excerpt_at(&parts, &turns.stems, turns.chars, *focus))
                }
                None => text.chars().take(EPISODE_LINE_CHARS).collect(),
            };
            Line {
                id: e.id,
                section: Section::Quoted,
                text: quoted_line(label, Some(e.occurred_at), &body, e.metadata.get("outcome")),
                session_id: e.session_id.clone(),
                date: Some(e.occurred_at.format("%Y-%m-%d").to_string()),
                order: e.occurred_at.timestamp_micros(),
                place: Place::Turn,
            }
        }
    }
}

/// Ids of included items, by kind, for the response's `provenance`.
pub fn provenance(bundle: &Bundle) -> Value {
    let ids = |v: &[Memory], kind: MemoryKind| -> Vec<String> {
        v.iter().filter(|m| m.kind == kind).map(|m| m.id.to_string()).collect()
    };
    let episode_ids: BTreeSet<String> = bundle.episodes.iter().map(|e| e.id.to_string()).collect();
    serde_json::json!({
        "fact_ids": ids(&bundle.facts, MemoryKind::ProfileFact),
        "summary_ids": ids(&bundle.facts, MemoryKind::EpisodeSummary),
        "procedure_ids": ids(&bundle.procedures, MemoryKind::Procedure),
        "episode_ids": bundle.episodes.iter().map(|e| e.id.to_string()).filter(|i| episode_ids.contains(i)).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_best_turn_takes_at_most_its_share_of_the_budget() {
        assert_eq!(whole_chars(2000, 16), 500);
        assert_eq!(whole_chars(1000, 16), 250);
        assert_eq!(whole_chars(128_000, 16), PINNED_CHARS);
        assert_eq!(whole_chars(2000, 0), PINNED_CHARS);
    }

    #[test]
    fn deeper_turns_get_shorter_excerpts() {
        let text = "We planned the move to Denver in spring. The movers came on a rainy Tuesday morning. \
                    Everything arrived except the piano, which came two weeks later in one piece.";
        let e = crate::model::episode::Episode {
            id: Uuid::nil(),
            subject_id: "user:1".into(),
            source: "chat".into(),
            kind: "message".into(),
            payload: serde_json::json!({"messages": [{"role": "user", "content": text}]}),
            metadata: serde_json::json!({}),
            provenance: serde_json::json!({}),
            session_id: None,
            occurred_at: chrono::DateTime::UNIX_EPOCH,
            created_at: chrono::DateTime::UNIX_EPOCH,
        };
        let turns = TurnText {
            stems: TaskStems::new("when did the piano arrive after the move"),
            whole: 1,
            whole_chars: 1000,
            chars: 130,
            tail_from: 3,
            tail_chars: 60,
        };
        // The room holds the speaker and the text; the line adds its "- " bullet.
        let len = |rank| turns.line(&e, rank, None).unwrap().chars().count() - 2;
        assert!(len(0) > 130, "the best turn shows whole");
        assert!(len(1) <= 130 && len(2) <= 130 && len(1) > 60);
        assert_eq!(len(2), len(1));
        // The room bounds the text; the speaker and the gap marks come on top.
        let marks = "user: … …".chars().count();
        assert!(len(3) < len(1) && len(3) <= 60 + marks, "from tail_from on the room is tail_chars");
        assert_eq!(len(9), len(3));
        assert!(turns.line(&e, 3, None).unwrap().contains("piano"), "the excerpt keeps the task's words");
    }
}
