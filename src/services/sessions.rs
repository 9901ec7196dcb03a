//! Resolutions, SLA and health of a subject's support sessions (the pure logic is `crate::sessions`).

use chrono::{DateTime, Utc};
use serde_json::json;
use sqlx::{PgConnection, PgPool};

use crate::compile::pipeline::source_label;
use crate::db;
use crate::db::resolutions::{ResolutionRow, ResolutionWrite};
use crate::model::id::new_id;
use crate::model::voice::{Trust, Voice};
use crate::services::webhooks::{WebhookEvent, Webhooks};
use crate::sessions::health::{self, state_rank, Health};
use crate::sessions::sla::{self, SlaSummary, Thresholds};
use crate::sessions::{group, ResolutionView, Session, Turn};

/// Sessions are built from at most this many of the subject's most recent episodes.
pub const RECENT_EPISODES: i64 = 2000;
/// And from at most this many resolutions.
const MAX_RESOLUTIONS: i64 = 1000;

/// Records a session's resolution (insert or update); the subject's writers wait for an erasure.
pub async fn upsert_resolution(pool: &PgPool, tenant: &str, w: &ResolutionWrite<'_>) -> sqlx::Result<ResolutionRow> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    // An erasure holds this lock from its deletes to its verification.
    db::jobs::lock_submit(&mut tx, tenant, w.subject_id).await?;
    let row = db::resolutions::upsert(&mut tx, tenant, new_id(), w).await?;
    tx.commit().await?;
    Ok(row)
}

/// A page of the subject's resolutions, most recently updated first.
pub async fn list_resolutions(
    pool: &PgPool,
    tenant: &str,
    subject_id: &str,
    status: Option<&str>,
    limit: i64,
    offset: i64,
) -> sqlx::Result<Vec<ResolutionRow>> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    let rows = db::resolutions::page(&mut tx, tenant, subject_id, status, limit, offset).await?;
    tx.commit().await?;
    Ok(rows)
}

/// The subject's sessions from its recent episodes and its resolutions.
pub async fn load(conn: &mut PgConnection, tenant: &str, subject_id: &str) -> sqlx::Result<Vec<Session>> {
    let (episodes, _) =
        db::episodes::page(conn, tenant, subject_id, RECENT_EPISODES, 0, true, &Default::default()).await?;
    let trust = Trust::from_config(&db::tenants::config(&mut *conn, tenant).await?);
    let turns = episodes
        .iter()
        .map(|e| {
            let mut turn = Turn::from_episode(e.id, e.session_id.clone(), &e.source, &e.payload, e.occurred_at);
            if trust.voice(&e.source) == Voice::Evidence {
                turn.quoted = Some(source_label(&e.source));
            }
            turn
        })
        .collect();
    let resolutions = db::resolutions::page(conn, tenant, subject_id, None, MAX_RESOLUTIONS, 0)
        .await?
        .into_iter()
        .map(|r| ResolutionView {
            session_id: r.session_id,
            status: r.status,
            summary: r.resolution_summary,
            resolved_at: r.resolved_at,
            updated_at: r.updated_at,
        })
        .collect();
    Ok(group(turns, resolutions))
}

/// The subject's SLA figures at `now`.
pub async fn sla(
    pool: &PgPool,
    tenant: &str,
    subject_id: &str,
    t: Thresholds,
    now: DateTime<Utc>,
) -> sqlx::Result<SlaSummary> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    let sessions = load(&mut tx, tenant, subject_id).await?;
    tx.commit().await?;
    Ok(sla::summary(subject_id, &sessions, t, now))
}

/// A change of health state since the last time it was computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub previous_state: String,
    pub previous_score: i64,
    pub event: WebhookEvent,
}

/// The subject's health at `now`; records the state so a change is announced once
/// (`subject.health_degraded|improved`, committed with the new state).
pub async fn health(
    pool: &PgPool,
    hooks: &Webhooks,
    tenant: &str,
    subject_id: &str,
    now: DateTime<Utc>,
) -> sqlx::Result<(Health, Option<Transition>)> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    db::jobs::lock_submit(&mut tx, tenant, subject_id).await?;
    let sessions = load(&mut tx, tenant, subject_id).await?;
    let h = health::score(subject_id, &sessions, now);
    let cached = db::resolutions::cached_health(&mut tx, tenant, subject_id).await?;
    let transition = match &cached {
        Some((state, score)) if state != h.state => Some(Transition {
            previous_state: state.clone(),
            previous_score: i64::from(*score),
            event: if state_rank(h.state) < state_rank(state) {
                WebhookEvent::SubjectHealthDegraded
            } else {
                WebhookEvent::SubjectHealthImproved
            },
        }),
        _ => None,
    };
    // A subject with nothing recorded leaves no row behind (a GET must not create subjects).
    if cached.is_some() || !sessions.is_empty() {
        let score = i32::try_from(h.score).unwrap_or(0);
        db::resolutions::store_health(&mut tx, tenant, subject_id, h.state, score).await?;
    }
    if let Some(t) = &transition {
        let data = json!({"subject_id": subject_id, "state": h.state, "score": h.score,
                          "previous_state": t.previous_state, "previous_score": t.previous_score});
        hooks.enqueue(&mut tx, tenant, t.event, data).await?;
    }
    tx.commit().await?;
    Ok((h, transition))
}
