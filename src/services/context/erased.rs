//! Copies of erased subjects dropped from this server's memory, whichever server or process
//! erased them.
//!
//! The server that erases a subject through the API drops its copies at once. Every other
//! server (and this one, when the erasure came through the console or the `mnemo erase`
//! command) finds the erasure here: about once a second, while it keeps any copy, it reads the
//! erasures of the last few minutes (`db::erasures::recent`: tenant and subject digest only) and
//! drops every kept copy whose (tenant, subject) has an erased digest. A copy therefore outlives
//! its subject's erasure by about a second, not until its next call or its eviction. An erasure
//! of chosen episodes and memories (`services::erase_items`) is recorded under the subject's
//! digest too, so it drops the whole copy the same way: a large subject's lexical index assumes
//! episodes are only ever appended, and is then rebuilt from the rows left.
//!
//! Each erasure is applied on every poll for [`REAPPLY`] after this server first saw it: a call
//! or an index refresh that read the subject just before the erasure committed may keep its rows
//! after the first pass. A subject written again under the same id within that time is only
//! read once more from Postgres; its copy is never wrong, since every use of a copy is checked
//! against the subject's state.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::PgPool;
use tokio::sync::watch;

use super::SubjectCache;
use crate::db::erasures::{self, Recent};

/// How often the erasures are read while copies are kept.
pub const POLL: Duration = Duration::from_secs(1);
/// How far back each read goes (on the database's clock): wide enough for a long erasure's late
/// commit and for a skewed clock of the erasing server.
const WINDOW_SECS: f64 = 300.0;
/// How long an erasure is applied again after it was first seen.
pub const REAPPLY: Duration = Duration::from_secs(10);

/// Erasures seen, by when this server first saw them.
#[derive(Debug, Default)]
pub struct Seen {
    first: HashMap<Recent, Instant>,
}

impl Seen {
    /// The (tenant, digest) pairs to drop now, of the erasures just read: those first seen less
    /// than [`REAPPLY`] ago. Forgets erasures no longer in the read window.
    pub fn due(&mut self, recent: Vec<Recent>, now: Instant) -> HashSet<(String, String)> {
        let current: HashSet<&Recent> = recent.iter().collect();
        self.first.retain(|r, _| current.contains(r));
        let mut due = HashSet::new();
        for r in recent {
            let first = *self.first.entry(r.clone()).or_insert(now);
            if now.duration_since(first) < REAPPLY {
                due.insert((r.tenant_id, r.subject_sha256));
            }
        }
        due
    }
}

/// Drops the copies of erased subjects until `stop` turns true.
pub async fn watch(pool: PgPool, subjects: Arc<SubjectCache>, mut stop: watch::Receiver<bool>) {
    let mut seen = Seen::default();
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        if *stop.borrow() {
            return;
        }
        // Nothing kept, nothing to drop: an idle server does not poll.
        if subjects.is_empty() {
            continue;
        }
        match erasures::recent(&pool, WINDOW_SECS).await {
            Ok(recent) => {
                let due = seen.due(recent, Instant::now());
                if !due.is_empty() {
                    let dropped = subjects.forget_erased(&due);
                    if dropped > 0 {
                        tracing::debug!(dropped, "copies of erased subjects dropped");
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "reading recent erasures failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn erasure(tenant: &str, id: &str, digest: &str) -> Recent {
        Recent { tenant_id: tenant.into(), erasure_id: id.into(), subject_sha256: digest.into() }
    }

    #[test]
    fn an_erasure_is_applied_for_a_while_after_it_is_first_seen() {
        let mut seen = Seen::default();
        let t0 = Instant::now();
        let a = erasure("t", "01A", "da");
        let pair = |r: &Recent| (r.tenant_id.clone(), r.subject_sha256.clone());
        assert_eq!(seen.due(vec![a.clone()], t0), HashSet::from([pair(&a)]));
        // Seen again within REAPPLY: applied again (a call may have kept rows read before it).
        assert_eq!(seen.due(vec![a.clone()], t0 + REAPPLY / 2), HashSet::from([pair(&a)]));
        // A newer erasure of another subject comes; the old one is past REAPPLY.
        let b = erasure("t", "01B", "db");
        let due = seen.due(vec![a.clone(), b.clone()], t0 + REAPPLY + Duration::from_millis(1));
        assert_eq!(due, HashSet::from([pair(&b)]));
        // Out of the read window it is forgotten; were it read again, it would count as new.
        assert!(seen.due(vec![b.clone()], t0 + REAPPLY * 3).is_empty());
        assert_eq!(seen.due(vec![a.clone(), b], t0 + REAPPLY * 3), HashSet::from([pair(&a)]));
    }

    #[test]
    fn two_erasures_of_one_subject_are_one_pair_to_drop() {
        let mut seen = Seen::default();
        let due = seen
            .due(vec![erasure("t", "01A", "d"), erasure("t", "01B", "d"), erasure("u", "01C", "d")], Instant::now());
        assert_eq!(due.len(), 2);
    }
}
