//! Per-session service-level figures: time to first response and time to resolution.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::Session;
use crate::model::time::isoformat;

/// Breach thresholds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    pub first_response_minutes: f64,
    pub resolution_hours: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds { first_response_minutes: 5.0, resolution_hours: 24.0 }
    }
}

/// One session's figures (the SDK's `SessionSLA`; times are ISO strings).
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
#[schema(as = SessionSLA)]
pub struct SessionSla {
    pub session_id: String,
    // `resolved` or `open`.
    #[schema(value_type = SlaStatus, inline)]
    pub status: &'static str,
    pub first_message_at: Option<String>,
    pub first_response_at: Option<String>,
    pub resolved_at: Option<String>,
    pub first_response_seconds: Option<f64>,
    pub resolution_seconds: Option<f64>,
    pub open_duration_seconds: Option<f64>,
    pub first_response_breached: bool,
    pub resolution_breached: bool,
}

/// Whether a session is resolved.
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum SlaStatus {
    Resolved,
    Open,
}

/// A subject's figures (the SDK's `SLASummary`).
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
#[schema(as = SLASummary)]
pub struct SlaSummary {
    pub subject_id: String,
    pub total_sessions: usize,
    pub resolved_sessions: usize,
    pub open_sessions: usize,
    pub avg_first_response_seconds: Option<f64>,
    pub avg_resolution_seconds: Option<f64>,
    pub first_response_breach_count: usize,
    pub resolution_breach_count: usize,
    pub sessions: Vec<SessionSla>,
}

fn seconds(from: DateTime<Utc>, to: DateTime<Utc>) -> f64 {
    // Millisecond precision keeps the figures readable and stable.
    ((to - from).num_milliseconds().max(0) as f64) / 1000.0
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| (sum / n as f64 * 1000.0).round() / 1000.0)
}

/// The figures of one session at `now`.
///
/// The first message is the first turn where the customer writes; the first response is the
/// first later turn (or the same turn, after the customer) where someone answers. A session
/// still waiting is breached once it has waited longer than the threshold.
pub fn session_sla(s: &Session, t: Thresholds, now: DateTime<Utc>) -> SessionSla {
    let first_idx = s.turns.iter().position(|x| x.asks);
    let first = first_idx.map(|i| s.turns[i].occurred_at);
    let response = first_idx.and_then(|i| s.turns[i..].iter().find(|x| x.answers)).map(|x| x.occurred_at);
    let resolved = s.is_resolved();
    let resolved_at = if resolved { s.resolution.as_ref().and_then(|r| r.resolved_at) } else { None };
    let first_response_seconds = first.zip(response).map(|(a, b)| seconds(a, b));
    let resolution_seconds = first.zip(resolved_at).map(|(a, b)| seconds(a, b));
    let open_duration_seconds = if resolved { None } else { first.map(|a| seconds(a, now)) };
    let fr_limit = t.first_response_minutes * 60.0;
    let res_limit = t.resolution_hours * 3600.0;
    let waiting = if response.is_none() && !resolved { first.map(|a| seconds(a, now)) } else { None };
    SessionSla {
        session_id: s.id.clone(),
        status: if resolved { "resolved" } else { "open" },
        first_message_at: first.as_ref().map(isoformat),
        first_response_at: response.as_ref().map(isoformat),
        resolved_at: resolved_at.as_ref().map(isoformat),
        first_response_seconds,
        resolution_seconds,
        open_duration_seconds,
        first_response_breached: first_response_seconds.or(waiting).is_some_and(|v| v > fr_limit),
        resolution_breached: resolution_seconds.or(open_duration_seconds).is_some_and(|v| v > res_limit),
    }
}

/// The subject's summary over its sessions.
pub fn summary(subject_id: &str, sessions: &[Session], t: Thresholds, now: DateTime<Utc>) -> SlaSummary {
    let rows: Vec<SessionSla> = sessions.iter().map(|s| session_sla(s, t, now)).collect();
    let resolved = rows.iter().filter(|r| r.status == "resolved").count();
    SlaSummary {
        subject_id: subject_id.to_string(),
        total_sessions: rows.len(),
        resolved_sessions: resolved,
        open_sessions: rows.len() - resolved,
        avg_first_response_seconds: mean(rows.iter().filter_map(|r| r.first_response_seconds)),
        avg_resolution_seconds: mean(rows.iter().filter_map(|r| r.resolution_seconds)),
        first_response_breach_count: rows.iter().filter(|r| r.first_response_breached).count(),
        resolution_breach_count: rows.iter().filter(|r| r.resolution_breached).count(),
        sessions: rows,
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::group;
    use super::*;

    #[test]
    fn response_and_resolution_times() {
        let sessions = group(
            vec![
                turn(1, "a", "user", "my export fails", at(1, 9, 0)),
                turn(2, "a", "tool", "log line", at(1, 9, 1)),
                turn(3, "a", "support", "looking", at(1, 9, 3)),
                turn(4, "b", "customer", "still broken", at(2, 9, 0)),
            ],
            vec![resolution("a", "resolved", Some(at(1, 12, 0)))],
        );
        let sum = summary("u", &sessions, Thresholds::default(), at(3, 9, 0));
        let a = &sum.sessions[0];
        assert_eq!(a.status, "resolved");
        assert_eq!(a.first_response_seconds, Some(60.0), "a tool turn answers too");
        assert_eq!(a.resolution_seconds, Some(3.0 * 3600.0));
        assert!(!a.first_response_breached && !a.resolution_breached);
        assert_eq!(a.first_message_at.as_deref(), Some("2026-03-01T09:00:00+00:00"));
        let b = &sum.sessions[1];
        assert_eq!(b.status, "open");
        assert_eq!(b.first_response_seconds, None);
        assert_eq!(b.open_duration_seconds, Some(24.0 * 3600.0));
        assert!(b.first_response_breached, "waiting a day for a first answer");
        assert!(!b.resolution_breached, "exactly 24 h is not over the limit");
        assert_eq!((sum.total_sessions, sum.resolved_sessions, sum.open_sessions), (2, 1, 1));
        assert_eq!(sum.avg_first_response_seconds, Some(60.0));
        assert_eq!((sum.first_response_breach_count, sum.resolution_breach_count), (1, 0));
    }

    #[test]
    fn thresholds_and_sessions_without_messages() {
        let sessions = group(
            vec![turn(1, "a", "user", "q", at(1, 9, 0)), turn(2, "a", "agent", "a", at(1, 9, 10))],
            vec![resolution("r", "resolved", Some(at(1, 10, 0)))],
        );
        let strict = Thresholds { first_response_minutes: 0.5, resolution_hours: 1.0 };
        let sum = summary("u", &sessions, strict, at(1, 11, 0));
        let a = sum.sessions.iter().find(|s| s.session_id == "a").unwrap_or_else(|| unreachable!());
        assert!(a.first_response_breached && a.resolution_breached);
        let r = sum.sessions.iter().find(|s| s.session_id == "r").unwrap_or_else(|| unreachable!());
        assert_eq!((r.status, r.first_message_at.clone(), r.resolution_seconds), ("resolved", None, None));
        assert!(!r.first_response_breached && !r.resolution_breached);
    }
}
