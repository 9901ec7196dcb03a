//! Stage 1's rules: the lanes, applied to what the call's statement fetched. For a small subject
//! that is all its rows (as `mnemo_context_small` sent them, now or to an earlier call whose copy
//! is kept); for a large one, `mnemo_context`'s pool: each lane's leading candidates, fetched by
//! the lane's own order, and what the closure may take (the turns next to them, their summaries'
//! sources, the snapshot's pinned turns, the memories citing them). A lane that takes its first
//! N by a total order takes the same N from any set holding the first N of the subject, so both
//! give the same choice, and every rule (lane sizes, snapshot coverage, backing) is written
//! here only; `tests/api/context_lanes.rs` checks that the pool holds what the lanes take.
//!
//! The cosine distances come from Postgres (pgvector's own arithmetic), as does the task's
//! lexeme list (its `english` configuration), so the only arithmetic here is BM25's, done by
//! [`super::lexical::bm25`] as for every call: here over a small subject's rows, or before the
//! call for a large one (its lexical lanes come ranked).

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

use super::lexical::bm25::ranked;
use crate::compile::digest::is_digest;
use crate::db::context::{
    Backing, Found, Lexemes, LexicalLanes, SmallCall, SubjectEpisode, SubjectMemory, SubjectRows,
};
use crate::db::working_memory::SnapshotRow;
use crate::model::memory::{MemoryKind, MemoryStatus};

/// What the call asks of the lanes.
#[derive(Debug, Clone, Copy)]
pub struct Lanes<'a> {
    pub as_of: DateTime<Utc>,
    pub session: Option<&'a str>,
    pub days: &'a [DateTime<Utc>],
    pub around: bool,
    pub sources: bool,
    /// Lane sizes: lexical, semantic, recent facts, recent episodes, session episodes, date
    /// episodes, sessions' digests (the order of `mnemo_context`'s `p_lanes`, which fetches as
    /// many; its approximate candidates come seventh there).
    pub sizes: [usize; 7],
}

/// The candidates of the call (`call`: what depends on it, from its statement) among `rows`,
/// cloning only those it returns. `ranked`: the lexical lanes ranked before the call (a large
/// subject's pool); None ranks them here, by BM25 over the rows (all of a small subject's).
pub fn select(rows: &SubjectRows, call: &SmallCall, lanes: &Lanes<'_>, ranked: Option<&LexicalLanes>) -> Found {
    let as_of = lanes.as_of;
    let [lex_n, sem_n, facts_n, recent_n, session_n, dates_n, digests_n] = lanes.sizes;
    // The subject's size as BM25 counts it: the seq of its latest episode recorded by the call.
    let size = || {
        rows.episodes.iter().filter(|e| visible_episode(e, as_of)).map(|e| e.candidate.seq).max().unwrap_or(0) as f64
    };
    let lane = |given: fn(&LexicalLanes) -> &(Vec<Uuid>, Vec<f64>)| {
        ranked.map(|l| given(l).0.iter().copied().zip(given(l).1.iter().copied()).collect::<HashMap<Uuid, f64>>())
    };
    let snapshot = call.snapshot.as_ref();
    let mem_dist = |m: &SubjectMemory| call.memory_dists.get(&m.candidate.memory.id);
    let ep_dist = |e: &SubjectEpisode| call.episode_dists.get(&e.candidate.episode.id);

    // Memories: BM25, every current single-valued claim, the recent facts, the nearest vectors.
    let recorded: Vec<&SubjectMemory> =
        rows.memories.iter().map(AsRef::as_ref).filter(|m| m.recorded_at <= as_of).collect();
    let (digests, live): (Vec<&SubjectMemory>, Vec<&SubjectMemory>) = recorded
        .iter()
        .copied()
        .filter(|m| visible_memory(m, as_of))
        .partition(|m| is_digest(&m.candidate.memory.metadata));
    let mem_lx = lane(|l| &l.memories).unwrap_or_else(|| {
        bm25(live.iter().map(|m| (m.candidate.memory.id, &m.lexemes)), &call.memory_terms, size(), lex_n)
    });
    let mut mem_ids: HashSet<Uuid> = mem_lx.keys().copied().collect();
    mem_ids.extend(live.iter().filter(|m| m.candidate.claim_single).map(|m| m.candidate.memory.id));
    let mut facts: Vec<&&SubjectMemory> = live
        .iter()
        .filter(|m| matches!(m.candidate.memory.kind, MemoryKind::ProfileFact | MemoryKind::Procedure))
        .collect();
    facts.sort_by(|a, b| {
        let (a, b) = (&a.candidate.memory, &b.candidate.memory);
        b.valid_from.cmp(&a.valid_from).then(b.id.cmp(&a.id))
    });
    mem_ids.extend(facts.iter().take(facts_n).map(|m| m.candidate.memory.id));
    // The nearest: rows of the task vector's model only (none without a task vector).
    let mut near: Vec<(&&SubjectMemory, Option<f64>)> =
        live.iter().filter_map(|m| mem_dist(m).map(|d| (m, *d))).collect();
    near.sort_by(|(a, da), (b, db)| distance_order(*da, *db).then(a.candidate.memory.id.cmp(&b.candidate.memory.id)));
    mem_ids.extend(near.iter().take(sem_n).map(|(m, _)| m.candidate.memory.id));
    // A session's digest is no other lane's: a task about many moments takes the most recent
    // current ones (`digests_n`, 0 for any other task).
    let mut digests = digests;
    digests.sort_by(|a, b| {
        let (a, b) = (&a.candidate.memory, &b.candidate.memory);
        b.valid_from.cmp(&a.valid_from).then(b.id.cmp(&a.id))
    });
    mem_ids.extend(digests.iter().take(digests_n).map(|m| m.candidate.memory.id));
    if let Some(snap) = snapshot {
        // The summaries made only of turns the snapshot covers: its summary stands for them.
        let covered: HashSet<Uuid> =
            rows.episodes.iter().filter(|c| covered_by(snap, c)).map(|c| c.candidate.episode.id).collect();
        for m in &recorded {
            let mem = &m.candidate.memory;
            if mem.kind == MemoryKind::EpisodeSummary
                && !mem.source_episode_ids.is_empty()
                && mem.source_episode_ids.iter().all(|s| covered.contains(s))
            {
                mem_ids.remove(&mem.id);
            }
        }
    }

    // Episodes: BM25, the recent ones, the days the task names, the nearest vectors, the session's.
    let seen: Vec<&SubjectEpisode> =
        rows.episodes.iter().map(AsRef::as_ref).filter(|e| visible_episode(e, as_of)).collect();
    let ep_lx = lane(|l| &l.episodes).unwrap_or_else(|| {
        bm25(seen.iter().map(|e| (e.candidate.episode.id, &e.lexemes)), &call.episode_terms, size(), lex_n)
    });
    let mut ep_ids: HashSet<Uuid> = ep_lx.keys().copied().collect();
    ep_ids.extend(latest(seen.iter().copied(), recent_n));
    if !lanes.days.is_empty() {
        let mut dated: Vec<&SubjectEpisode> = Vec::new();
        for &d in lanes.days {
            let mut day: Vec<&SubjectEpisode> = seen
                .iter()
                .copied()
                .filter(|e| {
                    e.candidate.episode.occurred_at >= d && e.candidate.episode.occurred_at < d + Duration::days(1)
                })
                .collect();
            day.sort_by(|a, b| chronological(a, b));
            dated.extend(day.into_iter().take(dates_n));
        }
        dated.sort_by(|a, b| chronological(a, b));
        ep_ids.extend(dated.iter().take(dates_n).map(|e| e.candidate.episode.id));
    }
    // The nearest (an embedding row is written after its episode: one recorded by the call's
    // instant belongs to an episode recorded by then).
    let mut near: Vec<(&SubjectEpisode, Option<f64>)> =
        rows.episodes.iter().map(AsRef::as_ref).filter_map(|e| ep_dist(e).map(|d| (e, *d))).collect();
    near.sort_by(|(a, da), (b, db)| distance_order(*da, *db).then(a.candidate.episode.id.cmp(&b.candidate.episode.id)));
    ep_ids.extend(near.iter().take(sem_n).map(|(e, _)| e.candidate.episode.id));
    if let Some(session) = lanes.session {
        let in_session = seen.iter().copied().filter(|e| e.candidate.episode.session_id.as_deref() == Some(session));
        ep_ids.extend(latest(in_session, session_n));
    }

    // Every episode to return: the lanes', the turns next to them, the sources of single-turn
    // summaries, the snapshot's pinned turns; then without those the snapshot covers.
    let mut all: HashSet<Uuid> = ep_ids.clone();
    if lanes.around {
        let by_id: HashMap<Uuid, i64> =
            rows.episodes.iter().map(|e| (e.candidate.episode.id, e.candidate.seq)).collect();
        let next_to: HashSet<i64> =
            ep_ids.iter().filter_map(|id| by_id.get(id)).flat_map(|&s| [s - 1, s + 1]).collect();
        all.extend(seen.iter().filter(|e| next_to.contains(&e.candidate.seq)).map(|e| e.candidate.episode.id));
    }
    let summaries = || {
        recorded.iter().filter(|m| {
            m.candidate.memory.kind == MemoryKind::EpisodeSummary && mem_ids.contains(&m.candidate.memory.id)
        })
    };
    if lanes.sources {
        all.extend(
            summaries()
                .filter(|m| m.candidate.memory.source_episode_ids.len() == 1)
                .map(|m| m.candidate.memory.source_episode_ids[0]),
        );
    }
    if let Some(snap) = snapshot {
        all.extend(snap.pinned.iter().copied());
    }
    let returned: HashSet<Uuid> = seen
        .iter()
        .filter(|e| all.contains(&e.candidate.episode.id) && !snapshot.is_some_and(|s| covered_by(s, e)))
        .map(|e| e.candidate.episode.id)
        .collect();

    // The backing of every returned turn and of every source of a returned summary.
    let mut asked: HashSet<Uuid> = returned.clone();
    asked.extend(summaries().flat_map(|m| m.candidate.memory.source_episode_ids.iter().copied()));
    let mut backing: BTreeMap<Uuid, Backing> = BTreeMap::new();
    let mut back = |sources: &[Uuid], shows: bool, contradicted: bool| {
        for &e in sources.iter().filter(|e| asked.contains(e)) {
            let b = backing.entry(e).or_insert(Backing { episode_id: e, visible: false, contradicted: false });
            b.visible |= shows;
            b.contradicted |= contradicted;
        }
    };
    match &call.citers {
        Some(citers) => {
            for c in citers {
                let shows = shown_at(c.superseded_at, c.tombstoned, c.asserted_valid_to, as_of);
                back(&c.sources, shows, contradicted_at(c.contradiction, c.superseded_at, as_of));
            }
        }
        None => {
            // A session's digest quotes its turns; it was not extracted from them, so it does
            // not keep a turn whose own memories are gone (nor do the citers' statements count it).
            for h in recorded.iter().filter(|h| !is_digest(&h.candidate.memory.metadata)) {
                let contradicted = contradicted_at(h.contradiction, h.candidate.superseded_at, as_of);
                back(&h.candidate.memory.source_episode_ids, visible_memory(h, as_of), contradicted);
            }
        }
    }

    let mut memories: Vec<_> = recorded
        .iter()
        .filter(|m| mem_ids.contains(&m.candidate.memory.id))
        .map(|m| {
            let mut c = m.candidate.clone();
            c.lex = mem_lx.get(&c.memory.id).copied().unwrap_or(0.0);
            c.sem = mem_dist(m).and_then(|d| d.map(|d| 1.0 - d));
            c
        })
        .collect();
    memories.sort_by_key(|c| c.memory.id);
    let mut episodes: Vec<_> = seen
        .iter()
        .filter(|e| returned.contains(&e.candidate.episode.id))
        .map(|e| {
            let mut c = e.candidate.clone();
            c.lex = ep_lx.get(&c.episode.id).copied().unwrap_or(0.0);
            c.sem = ep_dist(e).and_then(|d| d.map(|d| 1.0 - d));
            c.focus = call.episode_focus.get(&c.episode.id).copied();
            c
        })
        .collect();
    episodes.sort_by_key(|c| c.episode.id);
    Found {
        memories,
        episodes,
        backing: backing.into_values().collect(),
        snapshot: call.snapshot.clone(),
        lexical_state: None,
        lexical_used: None,
    }
}

/// A memory shown at `as_of` (once recorded by then): not superseded by then, not tombstoned,
/// its asserted validity not ended.
fn visible_memory(m: &SubjectMemory, as_of: DateTime<Utc>) -> bool {
    let c = &m.candidate;
    shown_at(c.superseded_at, c.memory.status == MemoryStatus::Tombstoned, c.asserted_valid_to, as_of)
}

/// Whether a memory recorded by `as_of` is shown then (the rule of the memory lanes and of a
/// turn's backing): not superseded by then, not tombstoned, its asserted validity not
/// ended.
pub fn shown_at(
    superseded_at: Option<DateTime<Utc>>,
    tombstoned: bool,
    asserted_valid_to: Option<DateTime<Utc>>,
    as_of: DateTime<Utc>,
) -> bool {
    superseded_at.is_none_or(|t| t > as_of) && !tombstoned && asserted_valid_to.is_none_or(|t| t > as_of)
}

/// Whether a memory was superseded by `as_of` through a claim contradiction (`contradiction`:
/// a claim contradiction's record names it as the superseded memory).
pub fn contradicted_at(contradiction: bool, superseded_at: Option<DateTime<Utc>>, as_of: DateTime<Utc>) -> bool {
    contradiction && superseded_at.is_some_and(|t| t <= as_of)
}

/// A turn the snapshot stands for: in its session, up to its cursor, not pinned.
fn covered_by(snap: &SnapshotRow, e: &SubjectEpisode) -> bool {
    e.candidate.episode.session_id.as_deref() == Some(snap.session_id.as_str())
        && e.candidate.seq <= snap.covers_through
        && !snap.pinned.contains(&e.candidate.episode.id)
}

fn visible_episode(e: &SubjectEpisode, as_of: DateTime<Utc>) -> bool {
    e.candidate.episode.created_at <= as_of
}

/// The `n` latest episodes: occurred_at, then created_at, then id, all descending.
fn latest<'a>(eps: impl Iterator<Item = &'a SubjectEpisode>, n: usize) -> Vec<Uuid> {
    let mut v: Vec<&SubjectEpisode> = eps.collect();
    v.sort_by(|a, b| {
        let (a, b) = (&a.candidate.episode, &b.candidate.episode);
        b.occurred_at.cmp(&a.occurred_at).then(b.created_at.cmp(&a.created_at)).then(b.id.cmp(&a.id))
    });
    v.into_iter().take(n).map(|e| e.candidate.episode.id).collect()
}

/// occurred_at, then id, ascending.
fn chronological(a: &SubjectEpisode, b: &SubjectEpisode) -> Ordering {
    let (a, b) = (&a.candidate.episode, &b.candidate.episode);
    a.occurred_at.cmp(&b.occurred_at).then(a.id.cmp(&b.id))
}

/// Postgres's ascending order of float8 distances: NaN after every number, NULL after NaN, and
/// -0 equal to 0.
fn distance_order(a: Option<f64>, b: Option<f64>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => match (x.is_nan(), y.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        },
    }
}

/// The BM25 lane over a small subject's kept rows: the items holding any of `terms`, ranked by
/// [`ranked`] over the subject of `size` items. Returns id → score.
fn bm25<'a>(
    docs: impl Iterator<Item = (Uuid, &'a Lexemes)>,
    terms: &[String],
    size: f64,
    limit: usize,
) -> HashMap<Uuid, f64> {
    if terms.is_empty() {
        return HashMap::new();
    }
    let hashes: Vec<u64> = terms.iter().map(|t| Lexemes::hash(t)).collect();
    // (id, length in lexemes, the task terms it holds)
    let hits: Vec<(Uuid, f64, Vec<usize>)> = docs
        .filter_map(|(id, lexemes)| {
            let held: Vec<usize> = (0..terms.len()).filter(|&t| lexemes.holds(&terms[t], hashes[t])).collect();
            (!held.is_empty()).then_some((id, lexemes.len() as f64, held))
        })
        .collect();
    ranked(&hits, terms.len(), size, limit).into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::context::{Citer, EpisodeCandidate, MemoryCandidate};
    use std::sync::Arc;

    fn at(minute: u32) -> DateTime<Utc> {
        use chrono::TimeZone;
        Utc.with_ymd_and_hms(2026, 1, 1, 0, minute, 0).unwrap()
    }

    fn turn(n: u128) -> Arc<SubjectEpisode> {
        let episode = crate::model::episode::Episode {
            id: Uuid::from_u128(n),
            subject_id: "s".into(),
            source: "chat".into(),
            kind: "message".into(),
            payload: serde_json::json!({}),
            metadata: serde_json::json!({}),
            provenance: serde_json::json!({}),
            session_id: None,
            occurred_at: at(n as u32),
            created_at: at(n as u32),
        };
        let candidate =
            EpisodeCandidate { episode: Arc::new(episode), seq: n as i64, lex: 0.0, sem: None, focus: None };
        Arc::new(SubjectEpisode { candidate, lexemes: Lexemes::default() })
    }

    fn memory(n: u128, kind: MemoryKind, source: u128) -> Arc<SubjectMemory> {
        let memory = crate::model::memory::Memory {
            id: Uuid::from_u128(n),
            subject_id: "s".into(),
            kind,
            content: String::new(),
            summary: String::new(),
            confidence: 1.0,
            valid_from: at(5),
            valid_to: None,
            source_episode_ids: vec![Uuid::from_u128(source)],
            metadata: serde_json::json!({}),
            status: MemoryStatus::Active,
            sensitivity_labels: vec![],
            suggested_labels: vec![],
            created_at: at(5),
            updated_at: at(5),
        };
        let candidate = MemoryCandidate {
            memory: Arc::new(memory),
            asserted_valid_to: None,
            superseded_at: None,
            claim_single: false,
            lex: 0.0,
            sem: None,
        };
        Arc::new(SubjectMemory {
            candidate,
            recorded_at: at(5),
            lexemes: Lexemes::default(),
            contradiction: false,
            xmin: 1,
        })
    }

    /// A pool's lexical lanes come ranked (no BM25 over its rows, which carry no lexemes) and its
    /// citers, not its memories, decide which turns are backed; rows of a small subject decide by
    /// their own memories.
    #[test]
    fn a_pools_ranked_lanes_and_citers_decide_as_all_rows_would() {
        let rows = SubjectRows {
            memories: vec![memory(10, MemoryKind::EpisodeSummary, 1), memory(11, MemoryKind::ProfileFact, 2)],
            episodes: (1..=4).map(turn).collect(),
        };
        let lanes = Lanes {
            as_of: at(30),
            session: None,
            days: &[],
            around: false,
            sources: false,
            sizes: [10, 10, 0, 0, 0, 0, 0],
        };
        let ranked = LexicalLanes {
            memories: (vec![Uuid::from_u128(10)], vec![1.5]),
            episodes: (vec![Uuid::from_u128(2)], vec![0.7]),
            ..LexicalLanes::default()
        };
        let backing = |f: &Found| {
            f.backing.iter().map(|b| (b.episode_id.as_u128(), b.visible, b.contradicted)).collect::<Vec<_>>()
        };
        // As all rows: the summary backs turn 1, the fact turn 2.
        let mut call = SmallCall::default();
        let all = select(&rows, &call, &lanes, Some(&ranked));
        assert_eq!(all.memories.iter().map(|m| (m.memory.id.as_u128(), m.lex)).collect::<Vec<_>>(), [(10, 1.5)]);
        assert_eq!(all.episodes.iter().map(|e| (e.episode.id.as_u128(), e.lex)).collect::<Vec<_>>(), [(2, 0.7)]);
        assert_eq!(backing(&all), [(1, true, false), (2, true, false)]);
        // As a pool: the one citer of turn 2 was superseded at 20 through a contradiction, and
        // nothing the statement found cites turn 1.
        call.citers = Some(vec![Citer {
            sources: vec![Uuid::from_u128(2)],
            superseded_at: Some(at(20)),
            tombstoned: false,
            asserted_valid_to: None,
            contradiction: true,
        }]);
        let pool = select(&rows, &call, &lanes, Some(&ranked));
        assert_eq!(backing(&pool), [(2, false, true)]);
        // Before the contradiction the same citer backs the turn.
        let earlier = Lanes { as_of: at(15), ..lanes };
        assert_eq!(backing(&select(&rows, &call, &earlier, Some(&ranked))), [(2, true, false)]);
        // Without ranked lanes the rows' own lexemes are ranked: they hold none of no terms.
        let unranked = select(&rows, &call, &lanes, None);
        assert!(unranked.memories.is_empty() && unranked.episodes.is_empty());
    }

    #[test]
    fn distances_order_as_postgres_orders_float8() {
        let mut v = vec![Some(f64::NAN), None, Some(0.5), Some(-0.0), Some(0.0), Some(0.1)];
        v.sort_by(|a, b| distance_order(*a, *b));
        assert_eq!(format!("{v:?}"), "[Some(-0.0), Some(0.0), Some(0.1), Some(0.5), Some(NaN), None]");
    }

    #[test]
    fn bm25_prefers_rarer_terms_and_shorter_items_and_cuts_at_the_limit() {
        let ids: Vec<Uuid> = (1..=4u128).map(Uuid::from_u128).collect();
        let lex = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let docs = [
            Lexemes::new(lex(&["lag", "kafka", "consum"])),
            Lexemes::new(lex(&["deploy", "kafka"])),
            Lexemes::new(lex(&["again", "deploy", "fail", "pipelin", "stage"])),
            Lexemes::new(lex(&["budget"])),
        ];
        let terms = lex(&["deploy", "kafka", "lag"]);
        let all = bm25(ids.iter().copied().zip(docs.iter()), &terms, 10.0, 10);
        assert_eq!(all.len(), 3, "the item without a task term is not a hit");
        assert!(all[&ids[0]] > all[&ids[2]], "a rare term outweighs a common one");
        assert!(all[&ids[1]] > all[&ids[2]], "two terms over one in a longer item");
        let top = bm25(ids.iter().copied().zip(docs.iter()), &terms, 10.0, 1);
        assert_eq!(top.len(), 1);
        let best = all.iter().max_by(|a, b| a.1.partial_cmp(b.1).unwrap().then(b.0.cmp(a.0))).unwrap();
        assert_eq!(top.get(best.0), Some(best.1));
        assert!(bm25(ids.iter().copied().zip(docs.iter()), &[], 10.0, 10).is_empty());
    }
}
