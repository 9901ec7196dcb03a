//! Failed API-key attempts, counted per client address and per presented key prefix: after
//! `limit` failures within a minute, key attempts from that address, or with that prefix, are
//! refused (429 with Retry-After) until the minute ends, before the key is even looked up, so a
//! guess made meanwhile cannot succeed.
//!
//! The counts live in memory, in a bounded cache (quick_cache, already used for task vectors):
//! a flood of distinct addresses evicts old entries instead of growing the process. Each server
//! counts its own attempts. Prefixes are kept as digests, never as key material. (A rate
//! limiter such as governor spends a cell on every check; here the question "is this address
//! blocked?" must be asked before every key lookup without counting it.)
//!
//! Behind a reverse proxy every client has the proxy's address: one client's failures then
//! block key attempts through that proxy for the rest of the minute. `MNEMO_AUTH_FAILURES_PER_MINUTE=0`
//! turns the throttle off.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use quick_cache::sync::Cache;
use sha2::{Digest, Sha256};

/// How long failures are counted.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Entries kept (addresses and prefixes together).
const KEPT: usize = 16_384;
/// Characters of a presented key that name it: `mnemo_` and the key id of a stored key.
const PREFIX_CHARS: usize = 32;

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Who {
    Addr(IpAddr),
    Prefix([u8; 16]),
}

struct Window {
    started: Instant,
    failures: AtomicU32,
}

/// Failed key attempts per address and per key prefix.
pub struct AuthThrottle {
    limit: u32,
    seen: Cache<Who, Arc<Window>>,
}

fn prefix(key: &str) -> Who {
    let head: String = key.chars().take(PREFIX_CHARS).collect();
    let digest = Sha256::digest(head.as_bytes());
    let mut out = [0u8; 16];
    out.copy_from_slice(&digest[..16]);
    Who::Prefix(out)
}

impl AuthThrottle {
    /// A throttle refusing attempts after `limit` failures a minute (0: off).
    pub fn new(limit: u32) -> Self {
        AuthThrottle { limit, seen: Cache::new(KEPT) }
    }

    fn current(&self, who: Who, now: Instant) -> Option<Arc<Window>> {
        self.seen.get(&who).filter(|w| now.duration_since(w.started) < WINDOW)
    }

    /// How long attempts from `addr` or with `key`'s prefix are still refused, if they are.
    pub fn blocked(&self, addr: Option<IpAddr>, key: &str) -> Option<Duration> {
        if self.limit == 0 {
            return None;
        }
        let now = Instant::now();
        addr.map(Who::Addr)
            .into_iter()
            .chain([prefix(key)])
            .filter_map(|who| self.current(who, now))
            .filter(|w| w.failures.load(Ordering::Relaxed) >= self.limit)
            .map(|w| WINDOW.saturating_sub(now.duration_since(w.started)))
            .max()
    }

    /// Counts a failed attempt from `addr` with `key`.
    pub fn failed(&self, addr: Option<IpAddr>, key: &str) {
        if self.limit == 0 {
            return;
        }
        let now = Instant::now();
        for who in addr.map(Who::Addr).into_iter().chain([prefix(key)]) {
            let window = match self.current(who, now) {
                Some(w) => w,
                None => {
                    let w = Arc::new(Window { started: now, failures: AtomicU32::new(0) });
                    self.seen.insert(who, Arc::clone(&w));
                    w
                }
            };
            window.failures.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_are_refused_after_the_limit_per_address_and_per_prefix() {
        let t = AuthThrottle::new(3);
        let a: IpAddr = "10.0.0.1".parse().unwrap_or_else(|_| unreachable!());
        let b: IpAddr = "10.0.0.2".parse().unwrap_or_else(|_| unreachable!());
        for i in 0..3 {
            assert!(t.blocked(Some(a), &format!("guess-{i}")).is_none());
            t.failed(Some(a), &format!("guess-{i}"));
        }
        let left = t.blocked(Some(a), "another guess").expect("the address is blocked");
        assert!(left <= WINDOW && left > WINDOW - Duration::from_secs(5));
        assert!(t.blocked(Some(b), "another guess").is_none(), "other addresses are not");
        // One key id guessed from many addresses: the prefix is blocked.
        let id = "mnemo_01jzzzzzzzzzzzzzzzzzzzzzzz";
        for (i, n) in (10..13).enumerate() {
            let addr: IpAddr = format!("10.0.1.{n}").parse().unwrap_or_else(|_| unreachable!());
            t.failed(Some(addr), &format!("{id}_secret{i}"));
        }
        assert!(t.blocked(Some(b), &format!("{id}_anything")).is_some());
        assert!(AuthThrottle::new(0).blocked(Some(a), "x").is_none(), "0 turns it off");
    }
}
