//! Choosing which ranked lines fit the token budget.
//!
//! Packing is greedy in rank order with per-line costs that include the headers a line would
//! open; the assembled text is then counted exactly, so `token_estimate == tokens::count(&text)
//! <= max_tokens` holds for every result.

use std::collections::{BTreeSet, HashMap};

use uuid::Uuid;

use super::render::{self, Line, Section};
use super::tokens;

/// The packed bundle.
#[derive(Debug, Clone, PartialEq)]
pub struct Packed {
    /// Ids of the included lines, in inclusion (rank) order.
    pub included: Vec<uuid::Uuid>,
    /// The rendered bundle.
    pub text: String,
    /// Exact cl100k_base token count of `text`.
    pub token_estimate: usize,
    /// True when the task text had to be shortened to fit.
    pub task_truncated: bool,
}

/// Interaction group already opened by an included line, keyed by session.
struct OpenGroup<'a> {
    session_id: Option<&'a str>,
    /// `order` of the group's chronologically first line, whose date the header shows.
    first_order: i64,
    /// Tokens currently charged for the header.
    header_cost: usize,
}

/// Running cost bookkeeping while walking the ranked lines.
struct Budget<'a> {
    current_session: Option<&'a str>,
    remaining: usize,
    sections_open: [bool; 5],
    current_open: bool,
    groups: Vec<OpenGroup<'a>>,
}

impl<'a> Budget<'a> {
    /// Tokens needed to add `line`, including any header it opens or re-dates.
    fn cost(&self, line: &'a Line) -> usize {
        let mut cost = tokens::count(&line.text) + tokens::count("\n");
        if !self.sections_open[section_index(line.section)] {
            cost += render::header_cost(line.section);
        }
        if line.section != Section::Interactions {
            return cost;
        }
        let sid = line.session_id.as_deref();
        if let (Some(current), true) = (self.current_session, self.current_session == sid) {
            if !self.current_open {
                cost += render::header_line_cost(&render::current_session_header(current));
            }
            return cost;
        }
        match self.groups.iter().find(|g| g.session_id == sid) {
            // An earlier line moves the header date; charge the new header in full, the old one is refunded on add.
            Some(g) if line.order < g.first_order => {
                let header = render::group_header(sid, line.date.as_deref());
                (cost + render::header_line_cost(&header)).saturating_sub(g.header_cost)
            }
            Some(_) => cost,
            None => cost + render::header_line_cost(&render::group_header(sid, line.date.as_deref())),
        }
    }

    /// Records `line` as included after its cost was checked.
    fn add(&mut self, line: &'a Line, cost: usize) {
        self.remaining -= cost;
        self.sections_open[section_index(line.section)] = true;
        if line.section != Section::Interactions {
            return;
        }
        let sid = line.session_id.as_deref();
        if self.current_session.is_some() && self.current_session == sid {
            self.current_open = true;
            return;
        }
        let header_cost = render::header_line_cost(&render::group_header(sid, line.date.as_deref()));
        match self.groups.iter_mut().find(|g| g.session_id == sid) {
            Some(g) if line.order < g.first_order => {
                *g = OpenGroup { session_id: sid, first_order: line.order, header_cost };
            }
            Some(_) => {}
            None => self.groups.push(OpenGroup { session_id: sid, first_order: line.order, header_cost }),
        }
    }
}

/// Position of a section in `render::SECTIONS`.
fn section_index(section: Section) -> usize {
    match section {
        Section::Facts => 0,
        Section::Procedures => 1,
        Section::History => 2,
        Section::Quoted => 3,
        Section::Interactions => 4,
    }
}

/// Greedy: walk `ranked` (already sorted best-first), include a line when its cost — tokens of the line plus a newline, plus the tokens of any section/group header it would open — fits the remaining budget, else skip it and try the next. Then render and count exactly; if BPE merges made the exact count exceed `max_tokens`, drop the last-included line and re-render until it fits. If the task header alone exceeds the budget, truncate the task text (tokens::truncate) so the result still fits; with max_tokens too small even for "## Task\n\n", return the longest fitting prefix of that.
///
/// Lines whose id was already included are skipped, so `included` never repeats an id. When the
/// task fits but task plus caveat does not, no line can fit either, so the caveat (which only
/// qualifies the lines below it) is dropped rather than truncating the task.
pub fn pack(task: &str, caveat: bool, current_session: Option<&str>, ranked: &[Line], max_tokens: usize) -> Packed {
    pack_covering(task, caveat, current_session, ranked, max_tokens, &HashMap::new())
}

/// [`pack`], where an included line stands for the items `covers` lists under its id (a
/// session's digest for the turns it quotes): those are not packed after it.
pub fn pack_covering(
    task: &str,
    caveat: bool,
    current_session: Option<&str>,
    ranked: &[Line],
    max_tokens: usize,
    covers: &HashMap<Uuid, Vec<Uuid>>,
) -> Packed {
    let base = render::render(task, caveat, current_session, &[]);
    let base_tokens = tokens::count(&base);
    if base_tokens > max_tokens {
        return pack_task_only(task, current_session, max_tokens);
    }

    let mut budget = Budget {
        current_session,
        remaining: max_tokens - base_tokens,
        sections_open: [false; 5],
        current_open: false,
        groups: Vec::new(),
    };
    let mut included: Vec<&Line> = Vec::new();
    let mut seen = BTreeSet::new();
    for line in ranked {
        if seen.contains(&line.id) {
            continue;
        }
        let cost = budget.cost(line);
        if cost <= budget.remaining {
            budget.add(line, cost);
            seen.insert(line.id);
            seen.extend(covers.get(&line.id).into_iter().flatten().copied());
            included.push(line);
        }
    }

    // Per-line costs are estimates (BPE can merge across line boundaries); the exact count decides.
    loop {
        let text = render::render(task, caveat, current_session, &included);
        let token_estimate = tokens::count(&text);
        if token_estimate <= max_tokens || included.is_empty() {
            return Packed {
                included: included.iter().map(|l| l.id).collect(),
                text,
                token_estimate,
                task_truncated: false,
            };
        }
        included.pop();
    }
}

/// Moves the first of `lines` flagged (standing procedures, sessions' digests) to the front, in
/// their order, as long as their tokens stay within `share` (the rest keep their rank order):
/// the user's standing instructions ride in every bundle, and a task about many moments reads
/// the sessions' digests first, without crowding out what the task needs.
pub fn first_within(lines: Vec<(bool, Line)>, share: usize) -> Vec<Line> {
    let mut first = Vec::new();
    let mut rest = Vec::new();
    let mut used = 0;
    for (flagged, line) in lines {
        let cost = if flagged { tokens::count(&line.text) + 1 } else { 0 };
        if flagged && used + cost <= share {
            used += cost;
            first.push(line);
        } else {
            rest.push(line);
        }
    }
    first.extend(rest);
    first
}

/// Bundle with no lines and no caveat whose task is shortened as little as possible to fit.
fn pack_task_only(task: &str, current_session: Option<&str>, max_tokens: usize) -> Packed {
    let full = render::render(task, false, current_session, &[]);
    let full_tokens = tokens::count(&full);
    if full_tokens <= max_tokens {
        return Packed { included: Vec::new(), text: full, token_estimate: full_tokens, task_truncated: false };
    }
    let empty = render::render("", false, current_session, &[]);
    let empty_tokens = tokens::count(&empty);
    if empty_tokens > max_tokens {
        let text = tokens::truncate(&empty, max_tokens);
        let token_estimate = tokens::count(&text);
        return Packed { included: Vec::new(), text, token_estimate, task_truncated: true };
    }
    // Start from the budget left after the frame; merges at the seams may need a few tokens back.
    let mut task_tokens = max_tokens - empty_tokens;
    loop {
        let text = render::render(&tokens::truncate(task, task_tokens), false, current_session, &[]);
        let token_estimate = tokens::count(&text);
        if token_estimate <= max_tokens || task_tokens == 0 {
            return Packed { included: Vec::new(), text, token_estimate, task_truncated: true };
        }
        task_tokens -= 1;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    fn line(n: u128, section: Section, text: &str) -> Line {
        Line {
            id: uuid::Uuid::from_u128(n),
            section,
            text: text.to_owned(),
            session_id: None,
            date: None,
            order: 0,
            place: Default::default(),
        }
    }

    fn check(p: &Packed, max: usize) {
        assert_eq!(p.token_estimate, tokens::count(&p.text));
        assert!(p.token_estimate <= max, "{} > {max}", p.token_estimate);
    }

    #[test]
    fn short_low_ranked_line_fills_gap_left_by_long_one() {
        let long = line(1, Section::Facts, &format!("- {}", "very long fact ".repeat(60)));
        let short = line(2, Section::Facts, "- Likes tea");
        let max = tokens::count("## Task\nT\n") + 20;
        let p = pack("T", false, None, &[long, short], max);
        check(&p, max);
        assert_eq!(p.included, vec![uuid::Uuid::from_u128(2)]);
        assert_eq!(p.text, "## Task\nT\n\n## About this user\n- Likes tea\n");
    }

    #[test]
    fn procedures_lead_within_their_share() {
        let lines = vec![
            (false, line(1, Section::Facts, "- f")),
            (true, line(2, Section::Procedures, "- Always format dates as MM/DD/YYYY")),
            (false, line(3, Section::History, "- h")),
            (true, line(4, Section::Procedures, &format!("- {}", "long rule ".repeat(40)))),
            (true, line(5, Section::Procedures, "- Keep answers short")),
        ];
        let ids: Vec<u128> = first_within(lines, 30).iter().map(|l| l.id.as_u128()).collect();
        assert_eq!(ids, vec![2, 5, 1, 3, 4]);
    }

    #[test]
    fn everything_fits_with_a_generous_budget() {
        let lines =
            [line(1, Section::History, "- h"), line(2, Section::Facts, "- f"), line(1, Section::Facts, "- dup")];
        let p = pack("T", true, None, &lines, 1000);
        check(&p, 1000);
        assert_eq!(p.included, vec![uuid::Uuid::from_u128(1), uuid::Uuid::from_u128(2)]);
        assert!(p.text.contains("## About this user\n- f\n\n## Recent history\n- h\n"));
        assert!(!p.task_truncated);
    }

    #[test]
    fn long_task_is_truncated_to_fit() {
        let task = "Please refactor the billing module and add tests. ".repeat(40);
        let p = pack(&task, true, None, &[line(1, Section::Facts, "- f")], 50);
        check(&p, 50);
        assert!(p.task_truncated);
        assert!(p.included.is_empty());
        assert!(p.text.starts_with("## Task\nPlease refactor"));
        assert!(p.token_estimate >= 45, "truncation should use most of the budget: {}", p.token_estimate);
    }

    #[test]
    fn caveat_is_dropped_before_the_task_is_cut() {
        let max = tokens::count("## Task\nT\n");
        let p = pack("T", true, None, &[], max);
        check(&p, max);
        assert_eq!(p.text, "## Task\nT\n");
        assert!(!p.task_truncated);
    }

    #[test]
    fn tiny_budgets_return_a_prefix_of_the_frame() {
        for max in 0..4 {
            let p = pack("anything", false, None, &[], max);
            check(&p, max);
            assert!("## Task\n\n".starts_with(&p.text));
            assert!(p.task_truncated);
        }
        assert_eq!(pack("x", false, None, &[], 1).text, "##");
        assert_eq!(pack("anything at all", false, None, &[], 3).text, "## Task\n\n");
    }

    #[test]
    fn interaction_headers_are_charged() {
        let mut a = line(1, Section::Interactions, "- [chat/message] hi");
        a.session_id = Some("s1".into());
        a.date = Some("2026-01-01".into());
        let base = tokens::count("## Task\nT\n");
        let exact =
            tokens::count("## Task\nT\n\n## Recent interactions\n### Session s1 · 2026-01-01\n- [chat/message] hi\n");
        // The estimate may exceed the exact count by the merged blank line, never fall short of it.
        let p = pack("T", false, None, std::slice::from_ref(&a), exact + 1);
        assert_eq!(p.included.len(), 1);
        let p = pack("T", false, None, std::slice::from_ref(&a), exact - 1);
        assert!(p.included.is_empty());
        assert_eq!(p.token_estimate, base);
    }

    fn arb_text() -> impl Strategy<Value = String> {
        let pieces = prop_oneof![
            Just("word ".to_owned()),
            Just("😀".to_owned()),
            Just("👩‍💻 ".to_owned()),
            Just("漢字テキスト".to_owned()),
            Just("\n".to_owned()),
            Just("  ".to_owned()),
            Just(".,;!".to_owned()),
            Just("2026-03-02 ".to_owned()),
            "[a-zA-Z0-9 ]{1,12}",
            "\\PC{1,6}",
        ];
        prop::collection::vec(pieces, 0..120).prop_map(|v| v.concat().chars().take(400).collect())
    }

    fn arb_line() -> impl Strategy<Value = Line> {
        let section = prop_oneof![
            Just(Section::Facts),
            Just(Section::Procedures),
            Just(Section::History),
            Just(Section::Interactions)
        ];
        let session = prop::option::of(prop_oneof![Just("cur".to_owned()), Just("s1".to_owned()), "[a-z]{1,4}"]);
        let date = prop::option::of(prop_oneof![Just("2026-03-01".to_owned()), Just("2025-12-31".to_owned())]);
        (0u128..40, section, arb_text(), session, date, -50i64..50).prop_map(
            |(id, section, text, session_id, date, order)| Line {
                id: uuid::Uuid::from_u128(id),
                section,
                text,
                session_id,
                date,
                order,
                place: Default::default(),
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
        #[test]
        fn pack_invariants(
            ranked in prop::collection::vec(arb_line(), 0..30),
            task in arb_text(),
            caveat in any::<bool>(),
            current in prop::option::of(Just("cur".to_owned())),
            max in 1usize..2000,
        ) {
            let p = pack(&task, caveat, current.as_deref(), &ranked, max);
            prop_assert_eq!(p.token_estimate, tokens::count(&p.text));
            prop_assert!(p.token_estimate <= max);
            let mut seen = std::collections::BTreeSet::new();
            for id in &p.included {
                prop_assert!(seen.insert(*id), "duplicate id {}", id);
            }
            // Subsequence of ranked: each included id appears after the previous match.
            let mut pos = 0;
            for id in &p.included {
                match ranked[pos..].iter().position(|l| l.id == *id) {
                    Some(i) => pos += i + 1,
                    None => prop_assert!(false, "{} is not in order in ranked", id),
                }
            }
            let again = pack(&task, caveat, current.as_deref(), &ranked, max);
            prop_assert_eq!(&p, &again);
        }
    }
}
