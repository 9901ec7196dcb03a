//! Webhooks: a transactional outbox of events, delivered by a dispatcher in every process.
//!
//! A change and its event commit together: callers enqueue inside the transaction that makes
//! the change ([`Webhooks::enqueue`]), so an event exists if and only if its change committed.
//! The dispatcher ([`dispatch::run_dispatcher`]) claims due events with `FOR UPDATE SKIP LOCKED`
//! and a lease, so replicas share the queue and deliver each event once in normal operation
//! (at least once if a process dies mid-delivery: receivers dedupe by `X-Mnemo-Delivery`).

pub mod admin;
pub mod delivery;
pub mod dispatch;
pub mod signature;

use std::fmt;
use std::time::Duration;

use serde_json::Value;
use sqlx::PgConnection;
use tokio::sync::Notify;

use crate::db;

/// The events mnemo announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WebhookEvent {
    /// `episode.created {id, subject_id}`: a single ingest created a row (not on an idempotent repeat).
    EpisodeCreated,
    /// `episodes.batch_created {count, subject_ids}`: a batch created at least one row.
    EpisodesBatchCreated,
    /// `items.erased {subject_id, erasure_id, episodes_deleted, memories_deleted,
    /// receipts_tombstoned}`: chosen episodes or memories of a subject were erased.
    ItemsErased,
    /// `memories.compiled {subject_id, memories_created}`: a compile batch consumed episodes.
    MemoriesCompiled,
    /// `subject.deleted {subject_id, episodes_deleted, memories_deleted, erasure_id}`.
    SubjectDeleted,
    /// `subject.health_degraded {subject_id, ...}`: a subject's health state got worse.
    SubjectHealthDegraded,
    /// `subject.health_improved {subject_id, ...}`: a subject's health state got better.
    SubjectHealthImproved,
}

impl WebhookEvent {
    /// Every event, in wire-name order.
    pub const ALL: [WebhookEvent; 7] = [
        WebhookEvent::EpisodeCreated,
        WebhookEvent::EpisodesBatchCreated,
        WebhookEvent::ItemsErased,
        WebhookEvent::MemoriesCompiled,
        WebhookEvent::SubjectDeleted,
        WebhookEvent::SubjectHealthDegraded,
        WebhookEvent::SubjectHealthImproved,
    ];

    /// The wire name (`X-Mnemo-Event`, `event` in the body).
    pub fn as_str(self) -> &'static str {
        match self {
            WebhookEvent::EpisodeCreated => "episode.created",
            WebhookEvent::EpisodesBatchCreated => "episodes.batch_created",
            WebhookEvent::MemoriesCompiled => "memories.compiled",
            WebhookEvent::SubjectDeleted => "subject.deleted",
            WebhookEvent::ItemsErased => "items.erased",
            WebhookEvent::SubjectHealthDegraded => "subject.health_degraded",
            WebhookEvent::SubjectHealthImproved => "subject.health_improved",
        }
    }

    /// The event with this wire name.
    pub fn parse(name: &str) -> Option<WebhookEvent> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// The `subject_id` column of the event's row: the subject it is about, so erasure deletes
    /// it with the subject. `subject.deleted` must outlive its subject (NULL; its payload is
    /// dropped once delivered); a batch names a subject only when it touched exactly one.
    pub fn subject_column(self, data: &Value) -> Option<String> {
        match self {
            WebhookEvent::SubjectDeleted => None,
            WebhookEvent::EpisodesBatchCreated => match data.get("subject_ids").and_then(Value::as_array) {
                Some(ids) if ids.len() == 1 => ids[0].as_str().map(str::to_string),
                _ => None,
            },
            _ => data.get("subject_id").and_then(Value::as_str).map(str::to_string),
        }
    }

    /// Whether the stored payload is removed once the event is delivered or dead-lettered
    /// (it names a subject that no longer exists).
    pub fn scrub_when_done(name: &str) -> bool {
        name == WebhookEvent::SubjectDeleted.as_str()
    }
}

impl fmt::Display for WebhookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Parses a comma-separated allowlist; empty means every event. Unknown names are an error.
pub fn parse_events(list: &str) -> Result<Vec<WebhookEvent>, String> {
    let names: Vec<&str> = list.split(',').map(str::trim).filter(|n| !n.is_empty()).collect();
    if names.is_empty() {
        return Ok(WebhookEvent::ALL.to_vec());
    }
    let mut events = Vec::new();
    for name in names {
        let Some(e) = WebhookEvent::parse(name) else {
            let known: Vec<&str> = WebhookEvent::ALL.iter().map(|e| e.as_str()).collect();
            return Err(format!("unknown webhook event {name:?}; known events: {}", known.join(", ")));
        };
        if !events.contains(&e) {
            events.push(e);
        }
    }
    events.sort();
    Ok(events)
}

/// A signing secret that never shows in `Debug` output or logs.
#[derive(Clone, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret (empty means none).
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }

    /// The secret's bytes, for signing only.
    pub fn expose(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// Whether a secret is set.
    pub fn is_set(&self) -> bool {
        !self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_set() { "Secret(<set>)" } else { "Secret(<unset>)" })
    }
}

/// Webhook settings (`MNEMO_WEBHOOK_*`).
#[derive(Clone)]
pub struct WebhookConfig {
    /// Where events are POSTed; None = webhooks off (nothing is enqueued).
    pub url: Option<String>,
    /// Events that are enqueued (the allowlist).
    pub events: Vec<WebhookEvent>,
    /// HMAC-SHA256 key for `X-Mnemo-Signature`; unset = unsigned.
    pub secret: Secret,
    /// Per-delivery timeout.
    pub timeout: Duration,
    /// Attempts before an event is dead-lettered.
    pub max_attempts: i32,
    /// First retry delay; doubles per attempt (with jitter), capped at an hour.
    pub backoff_base: Duration,
    /// How often an idle dispatcher looks for due events (it is also woken on local enqueue).
    pub poll_interval: Duration,
    /// Delivered and dead-lettered events are deleted after this long.
    pub retention: Duration,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        WebhookConfig {
            url: None,
            events: WebhookEvent::ALL.to_vec(),
            secret: Secret::default(),
            timeout: Duration::from_secs(5),
            max_attempts: 5,
            backoff_base: Duration::from_secs(30),
            poll_interval: Duration::from_secs(1),
            retention: Duration::from_secs(7 * 24 * 3600),
        }
    }
}

impl fmt::Debug for WebhookConfig {
    // The URL may carry a token in its query; only whether it is set is shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookConfig")
            .field("url", &self.url.as_ref().map(|_| "<set>"))
            .field("events", &self.events)
            .field("secret", &self.secret)
            .field("timeout", &self.timeout)
            .field("max_attempts", &self.max_attempts)
            .field("backoff_base", &self.backoff_base)
            .field("poll_interval", &self.poll_interval)
            .field("retention", &self.retention)
            .finish()
    }
}

/// Checks a webhook URL: absolute http(s) with a host.
pub fn check_url(url: &str) -> Result<(), String> {
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    match rest {
        Some(r) if !r.is_empty() && !r.starts_with('/') && !url.chars().any(char::is_whitespace) => Ok(()),
        _ => Err("MNEMO_WEBHOOK_URL must be an absolute http:// or https:// URL".to_string()),
    }
}

/// The process's webhook handle: whether and what to enqueue, and the dispatcher's wake-up.
#[derive(Debug, Default)]
pub struct Webhooks {
    config: Option<WebhookConfig>,
    wake: Notify,
}

impl Webhooks {
    /// A handle for these settings (off when no URL is configured).
    pub fn new(config: &WebhookConfig) -> Self {
        let config = config.url.as_deref().filter(|u| !u.is_empty()).map(|_| config.clone());
        Webhooks { config, wake: Notify::new() }
    }

    /// Webhooks off: nothing is enqueued.
    pub fn disabled() -> Self {
        Self::default()
    }

    /// The settings, when webhooks are on.
    pub fn config(&self) -> Option<&WebhookConfig> {
        self.config.as_ref()
    }

    /// Whether webhooks are on.
    pub fn is_enabled(&self) -> bool {
        self.config.is_some()
    }

    /// Whether this event would be enqueued.
    pub fn wants(&self, event: WebhookEvent) -> bool {
        self.config.as_ref().is_some_and(|c| c.events.contains(&event))
    }

    /// Enqueues an event inside the caller's transaction (a no-op when webhooks are off or the
    /// event is not in the allowlist). It is delivered only if that transaction commits.
    /// `data` is the body's `data` object; subject-scoped events must include `subject_id`.
    pub async fn enqueue(
        &self,
        conn: &mut PgConnection,
        tenant: &str,
        event: WebhookEvent,
        data: Value,
    ) -> sqlx::Result<()> {
        let Some(cfg) = self.config.as_ref().filter(|c| c.events.contains(&event)) else {
            return Ok(());
        };
        let subject = event.subject_column(&data);
        let id = ulid::Ulid::new().to_string();
        db::webhooks::insert(conn, tenant, &id, subject.as_deref(), event.as_str(), &data, cfg.max_attempts).await?;
        // The transaction has not committed yet; the dispatcher re-checks shortly after a wake.
        self.wake.notify_one();
        Ok(())
    }

    /// Wakes the local dispatcher (e.g. after a dead-lettered event was queued again).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    pub(crate) async fn woken(&self) {
        self.wake.notified().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn event_names_round_trip() {
        for e in WebhookEvent::ALL {
            assert_eq!(WebhookEvent::parse(e.as_str()), Some(e));
        }
        assert_eq!(WebhookEvent::parse("episode.deleted"), None);
    }

    #[test]
    fn allowlist_defaults_to_all_and_refuses_unknown_names() {
        assert_eq!(parse_events("").unwrap(), WebhookEvent::ALL.to_vec());
        assert_eq!(parse_events(" , ").unwrap(), WebhookEvent::ALL.to_vec());
        assert_eq!(
            parse_events("subject.deleted, episode.created,episode.created").unwrap(),
            vec![WebhookEvent::EpisodeCreated, WebhookEvent::SubjectDeleted]
        );
        let err = parse_events("episode.created,episode.updated").unwrap_err();
        assert!(err.contains("\"episode.updated\"") && err.contains("subject.health_improved"), "{err}");
    }

    #[test]
    fn subject_column_keeps_deletions_and_multi_subject_batches_unattributed() {
        let one = json!({"id": "x", "subject_id": "u1"});
        assert_eq!(WebhookEvent::EpisodeCreated.subject_column(&one).as_deref(), Some("u1"));
        assert_eq!(WebhookEvent::SubjectHealthDegraded.subject_column(&one).as_deref(), Some("u1"));
        assert_eq!(WebhookEvent::SubjectDeleted.subject_column(&one), None);
        let single = json!({"count": 2, "subject_ids": ["u1"]});
        assert_eq!(WebhookEvent::EpisodesBatchCreated.subject_column(&single).as_deref(), Some("u1"));
        let many = json!({"count": 2, "subject_ids": ["u1", "u2"]});
        assert_eq!(WebhookEvent::EpisodesBatchCreated.subject_column(&many), None);
        assert!(WebhookEvent::scrub_when_done("subject.deleted"));
        assert!(!WebhookEvent::scrub_when_done("episode.created"));
    }

    #[test]
    fn secrets_and_urls_stay_out_of_debug_output() {
        let cfg = WebhookConfig {
            url: Some("https://hooks.example/x?token=abc".into()),
            secret: Secret::new("s3cr3t"),
            ..WebhookConfig::default()
        };
        let shown = format!("{cfg:?}");
        assert!(!shown.contains("s3cr3t") && !shown.contains("token=abc"), "{shown}");
    }

    #[test]
    fn urls_must_be_absolute_http() {
        assert!(check_url("https://example.com/hook").is_ok());
        assert!(check_url("http://127.0.0.1:9000").is_ok());
        for bad in ["example.com", "ftp://x", "https://", "http:///x", "https://a b"] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn off_without_a_url() {
        let off = Webhooks::new(&WebhookConfig::default());
        assert!(!off.is_enabled() && !off.wants(WebhookEvent::EpisodeCreated));
        let cfg = WebhookConfig {
            url: Some("http://127.0.0.1:1".into()),
            events: vec![WebhookEvent::SubjectDeleted],
            ..WebhookConfig::default()
        };
        let on = Webhooks::new(&cfg);
        assert!(on.wants(WebhookEvent::SubjectDeleted) && !on.wants(WebhookEvent::EpisodeCreated));
    }
}
