//! One delivery attempt: the request, what its answer means, and when to try again.
//!
//! Pure parts (verdict, backoff) are separate from the blocking HTTP call so they can be tested
//! alone. Nothing here logs or stores the URL, the body or the receiver's answer body: the error
//! kept for an attempt is a status code or a transport error kind.

use std::time::Duration;

use super::signature;

/// The longest wait between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(3600);

/// What an attempt's outcome means for the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// 2xx: done.
    Delivered,
    /// Worth another attempt (5xx, 408, 429, 3xx, timeouts, connection errors).
    Retry,
    /// The receiver refused it for good (other 4xx): dead-letter now.
    Permanent,
}

/// The verdict for an HTTP status.
pub fn verdict(status: u16) -> Verdict {
    match status {
        200..=299 => Verdict::Delivered,
        408 | 429 => Verdict::Retry,
        400..=499 => Verdict::Permanent,
        _ => Verdict::Retry,
    }
}

/// Delay before the attempt after `attempts` failed ones: `base * 2^(attempts-1)`, capped at
/// [`MAX_BACKOFF`], then "equal jitter" (half fixed, half scaled by `jitter` in 0..1) so
/// replicas retrying the same outage spread out.
pub fn backoff(base: Duration, attempts: u32, jitter: f64) -> Duration {
    let exp = 2u32.saturating_pow(attempts.saturating_sub(1).min(31));
    let full = base.saturating_mul(exp).min(MAX_BACKOFF);
    let half = full / 2;
    half + half.mul_f64(jitter.clamp(0.0, 1.0))
}

/// What happens to an event after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Delivered,
    DeadLetter,
    RetryIn(Duration),
}

/// Decides an event's fate after its `attempts`-th attempt (of `max_attempts`); `jitter` in 0..1.
pub fn next_step(attempt: &Attempt, attempts: i32, max_attempts: i32, base: Duration, jitter: f64) -> Next {
    match attempt.verdict() {
        Verdict::Delivered => Next::Delivered,
        Verdict::Permanent => Next::DeadLetter,
        Verdict::Retry if attempts >= max_attempts => Next::DeadLetter,
        Verdict::Retry => {
            let wait = backoff(base, u32::try_from(attempts).unwrap_or(1), jitter);
            Next::RetryIn(attempt.retry_after.map_or(wait, |r| r.max(wait)))
        }
    }
}

/// The result of one HTTP attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The receiver's status, when it answered.
    pub status: Option<u16>,
    /// Short description of a failure (no URL, no body).
    pub error: Option<String>,
    /// A `Retry-After` in seconds (429/503), honoured up to [`MAX_BACKOFF`].
    pub retry_after: Option<Duration>,
}

impl Attempt {
    /// The attempt's verdict (transport failures are retried).
    pub fn verdict(&self) -> Verdict {
        self.status.map_or(Verdict::Retry, verdict)
    }
}

/// What is sent: the body bytes and the headers that name the event.
pub struct Request<'a> {
    pub url: &'a str,
    pub event: &'a str,
    pub delivery_id: &'a str,
    pub attempt: i32,
    pub body: &'a [u8],
    /// Signing secret bytes (empty: unsigned).
    pub secret: &'a [u8],
    /// Unix seconds, the signature's `t`.
    pub timestamp: i64,
}

/// An HTTP agent for deliveries: overall timeout, no redirects followed (a redirect is a
/// failed attempt: the configured URL is the only receiver).
pub fn agent(timeout: Duration) -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(timeout)
        .redirects(0)
        .user_agent(concat!("mnemo-webhooks/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// POSTs one event (blocking; run it on the blocking pool).
pub fn send(agent: &ureq::Agent, req: &Request<'_>) -> Attempt {
    let mut r = agent
        .post(req.url)
        .set("Content-Type", "application/json")
        .set("X-Mnemo-Event", req.event)
        .set("X-Mnemo-Delivery", req.delivery_id)
        .set("X-Mnemo-Attempt", &req.attempt.to_string());
    if !req.secret.is_empty() {
        r = r.set(signature::HEADER, &signature::sign(req.secret, req.timestamp, req.body));
    }
    match r.send_bytes(req.body) {
        Ok(resp) => {
            let status = resp.status();
            let error = (verdict(status) != Verdict::Delivered).then(|| format!("HTTP {status}"));
            Attempt { status: Some(status), error, retry_after: None }
        }
        Err(ureq::Error::Status(status, resp)) => {
            let retry_after = resp
                .header("retry-after")
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(|s| Duration::from_secs(s).min(MAX_BACKOFF));
            Attempt { status: Some(status), error: Some(format!("HTTP {status}")), retry_after }
        }
        Err(ureq::Error::Transport(t)) => Attempt { status: None, error: Some(transport_error(&t)), retry_after: None },
    }
}

/// A transport failure by kind only (ureq's full message includes the URL).
fn transport_error(t: &ureq::Transport) -> String {
    let timed_out = std::error::Error::source(t)
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .is_some_and(|e| matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock));
    if timed_out {
        "timeout".to_string()
    } else {
        format!("transport error: {}", t.kind())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_verdicts() {
        for s in [200, 201, 204, 299] {
            assert_eq!(verdict(s), Verdict::Delivered, "{s}");
        }
        for s in [400, 401, 403, 404, 410, 413, 422] {
            assert_eq!(verdict(s), Verdict::Permanent, "{s}");
        }
        for s in [408, 429, 500, 502, 503, 504, 301, 302, 100] {
            assert_eq!(verdict(s), Verdict::Retry, "{s}");
        }
        let lost = Attempt { status: None, error: Some("timeout".into()), retry_after: None };
        assert_eq!(lost.verdict(), Verdict::Retry);
    }

    #[test]
    fn backoff_doubles_within_its_jitter_band_and_is_capped() {
        let base = Duration::from_secs(10);
        for attempts in 1..=6u32 {
            let full = base * 2u32.pow(attempts - 1);
            let lo = backoff(base, attempts, 0.0);
            let hi = backoff(base, attempts, 1.0);
            assert_eq!(lo, full / 2, "attempt {attempts}");
            assert_eq!(hi, full, "attempt {attempts}");
            let mid = backoff(base, attempts, 0.5);
            assert!(lo <= mid && mid <= hi);
        }
        assert_eq!(backoff(base, 40, 1.0), MAX_BACKOFF);
        assert_eq!(backoff(Duration::from_secs(u64::MAX / 4), 3, 1.0), MAX_BACKOFF);
        // Out-of-range jitter is clamped; attempt 0 behaves like attempt 1.
        assert_eq!(backoff(base, 1, 7.0), base);
        assert_eq!(backoff(base, 0, 0.0), base / 2);
    }

    #[test]
    fn retries_until_the_last_attempt_then_dead_letters() {
        let base = Duration::from_millis(100);
        let failed = Attempt { status: Some(503), error: Some("HTTP 503".into()), retry_after: None };
        assert_eq!(next_step(&failed, 1, 5, base, 1.0), Next::RetryIn(base));
        assert_eq!(next_step(&failed, 4, 5, base, 1.0), Next::RetryIn(base * 8));
        assert_eq!(next_step(&failed, 5, 5, base, 1.0), Next::DeadLetter);
        let refused = Attempt { status: Some(400), error: Some("HTTP 400".into()), retry_after: None };
        assert_eq!(next_step(&refused, 1, 5, base, 0.3), Next::DeadLetter);
        let ok = Attempt { status: Some(204), error: None, retry_after: None };
        assert_eq!(next_step(&ok, 5, 5, base, 0.3), Next::Delivered);
        // Retry-After lengthens the wait, never shortens it.
        let slow = Attempt { status: Some(429), error: None, retry_after: Some(Duration::from_secs(9)) };
        assert_eq!(next_step(&slow, 1, 5, base, 1.0), Next::RetryIn(Duration::from_secs(9)));
        let soon = Attempt { status: Some(429), error: None, retry_after: Some(Duration::ZERO) };
        assert_eq!(next_step(&soon, 1, 5, base, 1.0), Next::RetryIn(base));
    }

    #[test]
    fn unreachable_receivers_are_described_without_the_url() {
        let a = agent(Duration::from_secs(2));
        let req = Request {
            url: "http://127.0.0.1:1/secret-path?token=abc",
            event: "episode.created",
            delivery_id: "01TEST",
            attempt: 1,
            body: b"{}",
            secret: b"",
            timestamp: 0,
        };
        let out = send(&a, &req);
        assert_eq!(out.status, None);
        let err = out.error.unwrap();
        assert!(!err.contains("token") && !err.contains("secret-path"), "{err}");
    }
}
