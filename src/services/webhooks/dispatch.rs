//! The dispatcher: claims due events, POSTs them, records each outcome, applies retention.
//!
//! Every server process runs one when webhooks are on. A claim leases its rows (they are not
//! due again until the lease ends), so replicas never deliver the same event concurrently; an
//! outcome is recorded only while the row still carries the claim's attempt number. Deliveries
//! run on the blocking pool, a claimed batch concurrently. On shutdown the batch in flight
//! finishes (each delivery is bounded by the timeout) before the dispatcher returns.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sqlx::PgPool;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::delivery::{self, Attempt, Next};
use super::{WebhookConfig, WebhookEvent, Webhooks};
use crate::db;
use crate::db::webhooks::{Outcome, WebhookRow};

/// Events claimed at once.
const BATCH: i32 = 16;
/// How often retention runs.
const PURGE_EVERY: Duration = Duration::from_secs(3600);
/// After a local enqueue the dispatcher looks again this often, a few times: the enqueueing
/// transaction may not have committed when the wake-up arrived.
const RECHECK: Duration = Duration::from_millis(25);
const RECHECKS: u32 = 8;

/// The body POSTed for an event: `{id, event, timestamp, tenant_id, data}`.
pub fn body(row: &WebhookRow, data: &Value) -> Vec<u8> {
    let doc = json!({
        "id": row.id,
        "event": row.event,
        "timestamp": crate::model::time::format(&row.created_at),
        "tenant_id": row.tenant_id,
        "data": data,
    });
    serde_json::to_vec(&doc).unwrap_or_default()
}

/// Delivers events until `shutdown` flips to true (returns at once when webhooks are off).
pub async fn run_dispatcher(pool: PgPool, hooks: Arc<Webhooks>, mut shutdown: watch::Receiver<bool>) {
    let Some(cfg) = hooks.config().cloned() else { return };
    let agent = delivery::agent(cfg.timeout);
    // Long enough that a live dispatcher always records the outcome before the lease ends.
    let lease_secs = cfg.timeout.as_secs_f64() * 2.0 + 30.0;
    let mut last_purge: Option<Instant> = None;
    let mut rechecks = 0;
    loop {
        if *shutdown.borrow() {
            return;
        }
        if last_purge.is_none_or(|t| t.elapsed() >= PURGE_EVERY) {
            last_purge = Some(Instant::now());
            purge(&pool, &cfg).await;
        }
        match claim(&pool, lease_secs).await {
            Ok(rows) if !rows.is_empty() => {
                deliver_all(&pool, &agent, &cfg, rows).await;
                continue;
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "claiming webhook events failed"),
        }
        let wait = if rechecks > 0 {
            rechecks -= 1;
            RECHECK
        } else {
            cfg.poll_interval
        };
        tokio::select! {
            _ = hooks.woken() => rechecks = RECHECKS,
            _ = tokio::time::sleep(wait) => {}
            changed = shutdown.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
    }
}

async fn claim(pool: &PgPool, lease_secs: f64) -> sqlx::Result<Vec<WebhookRow>> {
    let mut conn = pool.acquire().await?;
    db::webhooks::claim(&mut conn, BATCH, lease_secs).await
}

async fn purge(pool: &PgPool, cfg: &WebhookConfig) {
    let hours = i64::try_from(cfg.retention.as_secs() / 3600).unwrap_or(i64::MAX);
    let purged = async { db::webhooks::purge(&mut *pool.acquire().await?, hours).await };
    match purged.await {
        Ok(n) if n > 0 => tracing::info!(deleted = n, "expired webhook events removed"),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "webhook retention failed"),
    }
}

async fn deliver_all(pool: &PgPool, agent: &ureq::Agent, cfg: &WebhookConfig, rows: Vec<WebhookRow>) {
    let mut set = JoinSet::new();
    for row in rows {
        let (pool, agent, cfg) = (pool.clone(), agent.clone(), cfg.clone());
        set.spawn(async move { deliver(&pool, agent, &cfg, row).await });
    }
    while set.join_next().await.is_some() {}
}

async fn deliver(pool: &PgPool, agent: ureq::Agent, cfg: &WebhookConfig, row: WebhookRow) {
    // A pending event always has its payload and a dispatcher always has its URL.
    let (Some(data), Some(url)) = (row.payload.as_ref(), cfg.url.clone()) else {
        let missing = Attempt { status: None, error: Some("payload missing".into()), retry_after: None };
        record(pool, &row, Next::DeadLetter, &missing).await;
        return;
    };
    let body = body(&row, data);
    let (event, id, attempts) = (row.event.clone(), row.id.clone(), row.attempts);
    let secret = cfg.secret.expose().to_vec();
    let timestamp = chrono::Utc::now().timestamp();
    let sent = tokio::task::spawn_blocking(move || {
        let req = delivery::Request {
            url: &url,
            event: &event,
            delivery_id: &id,
            attempt: attempts,
            body: &body,
            secret: &secret,
            timestamp,
        };
        delivery::send(&agent, &req)
    })
    .await;
    let attempt = sent.unwrap_or_else(|_| Attempt {
        status: None,
        error: Some("delivery task failed".into()),
        retry_after: None,
    });
    let next = delivery::next_step(&attempt, row.attempts, row.max_attempts, cfg.backoff_base, rand::random());
    record(pool, &row, next, &attempt).await;
}

async fn record(pool: &PgPool, row: &WebhookRow, next: Next, attempt: &Attempt) {
    let (status, retry_in) = match next {
        Next::Delivered => ("delivered", Duration::ZERO),
        Next::DeadLetter => ("dead_letter", Duration::ZERO),
        Next::RetryIn(d) => ("pending", d),
    };
    let outcome = Outcome {
        status,
        retry_in_secs: retry_in.as_secs_f64(),
        http_status: attempt.status.map(i32::from),
        last_error: attempt.error.as_deref(),
        scrub: WebhookEvent::scrub_when_done(&row.event),
    };
    let recorded = async {
        let mut tx = db::scope::begin(pool, &row.tenant_id).await?;
        db::webhooks::record(&mut tx, &row.tenant_id, &row.id, row.attempts, &outcome).await?;
        tx.commit().await
    };
    let error = attempt.error.as_deref().unwrap_or("");
    match recorded.await {
        Ok(()) => match next {
            Next::Delivered => tracing::debug!(event_id = %row.id, event = %row.event, "webhook delivered"),
            Next::DeadLetter => {
                tracing::warn!(event_id = %row.id, event = %row.event, attempts = row.attempts, error, "webhook dead-lettered")
            }
            Next::RetryIn(d) => tracing::info!(event_id = %row.id, event = %row.event, attempts = row.attempts,
                retry_in_ms = d.as_millis() as u64, error, "webhook delivery failed; will retry"),
        },
        // The lease runs out and another attempt follows: at least once, never lost.
        Err(e) => tracing::error!(event_id = %row.id, error = %e, "recording a webhook outcome failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_carries_id_event_time_tenant_and_data() {
        let at = chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let row = WebhookRow {
            tenant_id: "acme".into(),
            id: "01HZ".into(),
            subject_id: Some("u1".into()),
            event: "episode.created".into(),
            payload: None,
            status: "pending".into(),
            attempts: 1,
            max_attempts: 5,
            next_attempt_at: at,
            last_attempt_at: None,
            last_error: None,
            http_status: None,
            created_at: at,
            delivered_at: None,
        };
        let bytes = body(&row, &json!({"id": "e1", "subject_id": "u1"}));
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            r#"{"data":{"id":"e1","subject_id":"u1"},"event":"episode.created","id":"01HZ","tenant_id":"acme","timestamp":"2023-11-14T22:13:20.000000Z"}"#
        );
    }
}
