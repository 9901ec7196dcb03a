//! A subject's health score: 100, minus what needs attention, plus recent good outcomes.
//!
//! Penalties: 15 per open session (at most 45); 20 when an open session raises an issue a
//! resolved session already had; 10 per urgent customer message in open sessions (at most 20);
//! 15 when an open session has been idle 7 days or more; 10 per resolution-SLA breach (at most
//! 20); 5 when the average first response exceeds 10 minutes. Bonuses: 10 for a resolution in
//! the last 7 days; 10 when more than 80% of sessions are resolved. Clamped to 0..=100.
//! States: `healthy` (70+), `watch` (40-69), `at_risk` (below 40).

use std::sync::LazyLock;

use chrono::{DateTime, Duration, Utc};
use regex::Regex;
use serde::Serialize;
use utoipa::ToSchema;

use super::sla::{summary, Thresholds};
use super::{same_issue, Session};

/// One reason the score moved.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, ToSchema)]
#[schema(as = HealthFactor)]
pub struct Factor {
    #[schema(value_type = String)]
    pub signal: &'static str,
    /// Points added (positive) or taken (negative).
    pub impact: i64,
    pub detail: String,
}

/// The score, its state and every factor, largest effect first.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, ToSchema)]
pub struct Health {
    pub subject_id: String,
    #[schema(minimum = 0, maximum = 100)]
    pub score: i64,
    #[schema(value_type = HealthState, inline)]
    pub state: &'static str,
    pub factors: Vec<Factor>,
}

/// A health state: `healthy` (70+), `watch` (40-69), `at_risk` (below 40).
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum HealthState {
    Healthy,
    Watch,
    AtRisk,
}

static URGENT: LazyLock<Regex> = LazyLock::new(|| {
    #[allow(clippy::expect_used)] // a constant pattern, exercised by the tests
    Regex::new(
        r"(?i)\b(?:urgent|urgently|asap|emergency|immediately|right now|critical|outage|down for|escalate|unacceptable|furious|cancel my)\b",
    )
    .expect("urgency pattern compiles")
});

/// The state for a score.
pub fn state_for(score: i64) -> &'static str {
    match score {
        70.. => "healthy",
        40..=69 => "watch",
        _ => "at_risk",
    }
}

/// Rank of a state, higher is healthier (to tell degradation from improvement).
pub fn state_rank(state: &str) -> u8 {
    match state {
        "healthy" => 2,
        "watch" => 1,
        _ => 0,
    }
}

/// Scores the subject's sessions at `now`.
pub fn score(subject_id: &str, sessions: &[Session], now: DateTime<Utc>) -> Health {
    let mut factors = Vec::new();
    let mut add = |signal, impact: i64, detail: String| {
        if impact != 0 {
            factors.push(Factor { signal, impact, detail });
        }
    };
    let open: Vec<&Session> = sessions.iter().filter(|s| !s.is_resolved()).collect();
    let resolved: Vec<&Session> = sessions.iter().filter(|s| s.is_resolved()).collect();

    add("open_sessions", -(15 * open.len() as i64).min(45), format!("{} open session(s)", open.len()));

    let repeat = open.iter().find_map(|o| {
        let text = o.customer_text();
        resolved.iter().find(|r| same_issue(&text, &r.customer_text())).map(|r| (o.id.clone(), r.id.clone()))
    });
    if let Some((open_id, resolved_id)) = repeat {
        add("repeat_issue", -20, format!("session {open_id} repeats the issue of resolved session {resolved_id}"));
    }

    let urgent = open.iter().flat_map(|s| &s.turns).filter(|t| t.asks && URGENT.is_match(&t.asked)).count() as i64;
    add("urgency", -(10 * urgent).min(20), format!("{urgent} urgent message(s) in open sessions"));

    let idle_since = now - Duration::days(7);
    if let Some(s) = open.iter().find(|s| !s.turns.is_empty() && s.last_activity().is_some_and(|t| t <= idle_since)) {
        add("idle_open_session", -15, format!("session {} has been idle for 7 days or more", s.id));
    }

    let sla = summary(subject_id, sessions, Thresholds::default(), now);
    let breaches = sla.resolution_breach_count as i64;
    add(
        "resolution_sla_breach",
        -(10 * breaches).min(20),
        format!("{breaches} session(s) over the 24 h resolution target"),
    );
    if let Some(avg) = sla.avg_first_response_seconds.filter(|a| *a > 600.0) {
        add("slow_first_response", -5, format!("average first response {:.0} min", avg / 60.0));
    }

    let recent = resolved.iter().filter_map(|s| s.resolution.as_ref()?.resolved_at).any(|t| t > idle_since && t <= now);
    if recent {
        add("recent_resolution", 10, "a session was resolved in the last 7 days".to_string());
    }
    if !sessions.is_empty() && resolved.len() * 5 > sessions.len() * 4 {
        add("high_resolution_rate", 10, format!("{} of {} sessions resolved", resolved.len(), sessions.len()));
    }

    let score = (100 + factors.iter().map(|f| f.impact).sum::<i64>()).clamp(0, 100);
    factors.sort_by(|a, b| b.impact.abs().cmp(&a.impact.abs()).then(a.signal.cmp(b.signal)));
    Health { subject_id: subject_id.to_string(), score, state: state_for(score), factors }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::group;
    use super::*;

    #[test]
    fn a_subject_without_sessions_is_healthy() {
        let h = score("u", &[], at(1, 0, 0));
        assert_eq!((h.score, h.state, h.factors.len()), (100, "healthy", 0));
    }

    #[test]
    fn open_urgent_repeated_issue_is_at_risk() {
        let sessions = group(
            vec![
                turn(1, "old", "user", "My invoice payment failed with the card", at(1, 9, 0)),
                turn(2, "old", "agent", "Fixed the card", at(1, 9, 2)),
                turn(3, "new", "user", "Payment failed again on my invoice card, this is urgent", at(10, 9, 0)),
                turn(4, "new", "user", "I need this fixed immediately", at(10, 9, 5)),
                turn(5, "other", "user", "Where is the export button?", at(10, 10, 0)),
            ],
            vec![resolution("old", "resolved", Some(at(1, 10, 0)))],
        );
        let h = score("u", &sessions, at(10, 12, 0));
        let impact = |s: &str| h.factors.iter().find(|f| f.signal == s).map(|f| f.impact);
        assert_eq!(impact("open_sessions"), Some(-30));
        assert_eq!(impact("repeat_issue"), Some(-20));
        assert_eq!(impact("urgency"), Some(-20));
        assert_eq!(impact("recent_resolution"), None, "resolved 9 days ago");
        assert_eq!(impact("slow_first_response"), None);
        assert_eq!(h.score, 30);
        assert_eq!(h.state, "at_risk");
        assert_eq!(h.factors[0].signal, "open_sessions", "largest effect first");
    }

    #[test]
    fn resolved_history_earns_bonuses_but_never_passes_100() {
        let sessions = group(
            vec![turn(1, "a", "user", "question", at(1, 9, 0)), turn(2, "a", "agent", "answer", at(1, 9, 1))],
            vec![resolution("a", "resolved", Some(at(1, 9, 30)))],
        );
        let h = score("u", &sessions, at(3, 0, 0));
        assert_eq!(h.score, 100);
        assert!(h.factors.iter().any(|f| f.signal == "recent_resolution" && f.impact == 10));
        assert!(h.factors.iter().any(|f| f.signal == "high_resolution_rate"));
    }

    #[test]
    fn idle_and_breached_sessions() {
        let sessions = group(vec![turn(1, "a", "user", "hello there", at(1, 9, 0))], vec![]);
        let h = score("u", &sessions, at(9, 9, 0));
        let signals: Vec<&str> = h.factors.iter().map(|f| f.signal).collect();
        assert_eq!(signals, ["idle_open_session", "open_sessions", "resolution_sla_breach"]);
        assert_eq!(h.score, 100 - 15 - 15 - 10);
        assert_eq!(state_for(h.score), "watch");
    }

    #[test]
    fn states_and_ranks() {
        assert_eq!(
            (state_for(70), state_for(69), state_for(40), state_for(39)),
            ("healthy", "watch", "watch", "at_risk")
        );
        assert!(state_rank("healthy") > state_rank("watch") && state_rank("watch") > state_rank("at_risk"));
    }
}
