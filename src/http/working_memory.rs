//! Sessions as working memory (mnemo extensions): `GET /v1/subjects/{subject_id}/sessions`,
//! `GET|PATCH /v1/subjects/{subject_id}/sessions/{session_id}` and
//! `PUT /v1/subjects/{subject_id}/sessions/{session_id}/snapshot`.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::api::extract::{JsonBody, Tenant};
use crate::api::query::{int, length, query, MAX_OFFSET};
use crate::api::schema::{CommonErrors, TenantHeader};
use crate::db::working_memory::{LoggedEpisode, SessionRow, SnapshotRow};
use crate::error::{ApiError, ApiResult, Envelope, FieldError};
use crate::http::body::valid;
use crate::http::path::{subject_id_path, text_id_path};
use crate::input::rules::{between, chars, no_nul, nullable};
use crate::model::episode::Episode;
use crate::model::time::isoformat;
use crate::services::working_memory::{
    self as svc, cursor, parse_cursor, NewSnapshot, SnapshotRefusal, MAX_METADATA_BYTES, MAX_PINNED, MAX_SUMMARY_CHARS,
};
use crate::state::AppState;

/// Default and largest page of the session listing and of a session's tail.
const DEFAULT_PAGE: i64 = 50;
const MAX_SESSIONS_PAGE: i64 = 200;
const MAX_TAIL_PAGE: i64 = 1000;

/// One session of a subject.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionSummary {
    pub session_id: String,
    pub episode_count: i64,
    /// The first and last episode's `occurred_at`.
    #[schema(format = DateTime)]
    pub first_at: String,
    #[schema(format = DateTime)]
    pub last_at: String,
    #[schema(value_type = Object)]
    pub metadata: Value,
    /// The latest snapshot, if the session was ever compacted.
    pub snapshot_id: Option<Uuid>,
}

impl From<SessionRow> for SessionSummary {
    fn from(r: SessionRow) -> Self {
        SessionSummary {
            session_id: r.session_id,
            episode_count: r.episode_count,
            first_at: isoformat(&r.first_at),
            last_at: isoformat(&r.last_at),
            metadata: r.metadata,
            snapshot_id: r.snapshot_id,
        }
    }
}

/// A page of sessions, most recent activity first.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionPage {
    pub sessions: Vec<SessionSummary>,
    pub has_more: bool,
}

/// A compaction snapshot: `summary` stands for every episode of the session up to and
/// including `covers_through`, except the `pinned` ones.
#[derive(Debug, Serialize, ToSchema)]
pub struct Snapshot {
    pub id: Uuid,
    pub session_id: String,
    /// 1 for the session's first snapshot, then one more per snapshot.
    pub position: i32,
    pub prev: Option<Uuid>,
    pub summary: String,
    pub pinned: Vec<Uuid>,
    /// Cursor of the last episode the snapshot stands for.
    pub covers_through: String,
    #[schema(format = DateTime)]
    pub created_at: String,
}

impl From<SnapshotRow> for Snapshot {
    fn from(r: SnapshotRow) -> Self {
        Snapshot {
            id: r.id,
            session_id: r.session_id,
            position: r.position,
            prev: r.prev_id,
            summary: r.summary,
            pinned: r.pinned,
            covers_through: cursor(r.covers_through),
            created_at: isoformat(&r.created_at),
        }
    }
}

/// An episode with its cursor (its position in the subject's log).
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionEpisode {
    #[serde(flatten)]
    pub episode: Episode,
    pub cursor: String,
}

impl From<LoggedEpisode> for SessionEpisode {
    fn from(e: LoggedEpisode) -> Self {
        SessionEpisode { episode: e.episode, cursor: cursor(e.seq) }
    }
}

/// A session's working memory: its latest snapshot, the pinned episodes, and the episodes
/// after the snapshot's cursor, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionLog {
    #[serde(flatten)]
    pub session: SessionSummary,
    pub snapshot: Option<Snapshot>,
    pub pinned_episodes: Vec<SessionEpisode>,
    pub episodes: Vec<SessionEpisode>,
    pub has_more: bool,
    /// Pass as `after` for the next page (null when this is the last one).
    pub next_cursor: Option<String>,
}

/// `GET /v1/subjects/{subject_id}/sessions/{session_id}` query.
#[derive(Debug, Deserialize, IntoParams, garde::Validate)]
#[into_params(parameter_in = Query)]
pub struct TailParams {
    /// Episodes per page.
    #[serde(default = "int::<DEFAULT_PAGE>")]
    #[garde(custom(between(1, MAX_TAIL_PAGE)))]
    #[param(minimum = 1, maximum = 1000, default = int::<DEFAULT_PAGE>)]
    pub limit: i64,
    /// Only episodes after this cursor (the previous page's `next_cursor`).
    #[garde(custom(length(0, 256)))]
    #[param(max_length = 256)]
    pub after: Option<String>,
}

/// `GET /v1/subjects/{subject_id}/sessions` query.
#[derive(Debug, Deserialize, IntoParams, garde::Validate)]
#[into_params(parameter_in = Query)]
pub struct SessionListParams {
    /// Sessions per page.
    #[serde(default = "int::<DEFAULT_PAGE>")]
    #[garde(custom(between(1, MAX_SESSIONS_PAGE)))]
    #[param(minimum = 1, maximum = 200, default = int::<DEFAULT_PAGE>)]
    pub limit: i64,
    /// Sessions to skip.
    #[serde(default)]
    #[garde(custom(between(0, MAX_OFFSET)))]
    #[param(minimum = 0, maximum = 2147483647, default = 0)]
    pub offset: i64,
}

/// `PUT .../snapshot`: a new snapshot that replaces `prev` (null for the session's first).
#[derive(Debug, Deserialize, ToSchema, garde::Validate)]
#[serde(deny_unknown_fields)]
pub struct SnapshotRequest {
    /// The caller's summary of the covered turns (1-32768 characters, not blank).
    #[schema(min_length = 1, max_length = 32768)]
    #[garde(custom(chars(1, MAX_SUMMARY_CHARS)), custom(no_nul), custom(not_blank))]
    pub summary: String,
    /// Episodes of the session that are never summarised (at most 100 distinct; repeats are
    /// counted once).
    #[serde(default)]
    #[schema(max_items = 100)]
    #[garde(custom(distinct_at_most(MAX_PINNED)))]
    pub pinned: Vec<Uuid>,
    /// Cursor of the last episode the summary stands for.
    #[garde(skip)]
    pub covers_through: String,
    /// The latest snapshot this one replaces; null for the first. Required.
    #[serde(deserialize_with = "nullable")]
    #[garde(skip)]
    pub prev: Option<Uuid>,
}

/// garde rule: text with something besides whitespace.
fn not_blank(value: &str, _: &()) -> garde::Result {
    if value.trim().is_empty() && !value.is_empty() {
        return Err(garde::Error::new("must not be blank"));
    }
    Ok(())
}

/// garde rule: at most `max` distinct ids.
fn distinct_at_most(max: usize) -> impl FnOnce(&Vec<Uuid>, &()) -> garde::Result {
    move |ids, _| {
        let distinct: std::collections::BTreeSet<&Uuid> = ids.iter().collect();
        if distinct.len() > max {
            return Err(garde::Error::new(format!("must have at most {max} distinct episodes")));
        }
        Ok(())
    }
}

/// `PATCH /v1/subjects/{subject_id}/sessions/{session_id}`.
#[derive(Debug, Deserialize, ToSchema, garde::Validate)]
#[serde(deny_unknown_fields)]
pub struct SessionPatch {
    /// Keys to set; a key set to null is removed.
    #[schema(value_type = Object)]
    #[garde(custom(no_nul))]
    pub metadata: Map<String, Value>,
}

fn session_id_path(session_id: &str) -> ApiResult<()> {
    text_id_path("session_id", session_id)
}

fn no_session(session_id: &str) -> ApiError {
    ApiError::client(
        StatusCode::NOT_FOUND,
        "session_not_found",
        format!("The subject has no episode in session {session_id:?}"),
    )
}

fn invalid_cursor(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::detailed(StatusCode::UNPROCESSABLE_ENTITY, "invalid_cursor", message, json!({"field": field}))
}

/// The subject's sessions, most recent activity first.
#[utoipa::path(get, path = "/v1/subjects/{subject_id}/sessions", tag = "working memory",
    summary = "A subject's sessions, most recent activity first",
    params(TenantHeader, ("subject_id" = String, Path, description = "Subject."), SessionListParams),
    responses((status = 200, description = "Sessions", body = SessionPage), CommonErrors))]
pub async fn list(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path(subject_id): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<SessionPage>> {
    subject_id_path(&subject_id)?;
    let q: SessionListParams = query(raw.as_deref())?;
    let (rows, has_more) = svc::list(&st.pool, &tenant, &subject_id, q.limit, q.offset).await?;
    Ok(Json(SessionPage { sessions: rows.into_iter().map(SessionSummary::from).collect(), has_more }))
}

/// A session's latest snapshot and the episodes after it.
#[utoipa::path(get, path = "/v1/subjects/{subject_id}/sessions/{session_id}", tag = "working memory",
    summary = "A session's working memory: latest snapshot, pinned episodes, the turns after it",
    params(TenantHeader, ("subject_id" = String, Path, description = "Subject."),
           ("session_id" = String, Path, description = "Session."), TailParams),
    responses((status = 200, description = "The session", body = SessionLog),
              (status = 404, description = "No episode in this session", body = Envelope), CommonErrors))]
pub async fn get(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path((subject_id, session_id)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<SessionLog>> {
    subject_id_path(&subject_id)?;
    session_id_path(&session_id)?;
    let q: TailParams = query(raw.as_deref())?;
    let limit = q.limit;
    let after = match q.after.filter(|s| !s.is_empty()) {
        Some(c) => Some(parse_cursor(&c).ok_or_else(|| invalid_cursor("after", "after is not a cursor of this log"))?),
        None => None,
    };
    let view = svc::view(&st.pool, &tenant, &subject_id, &session_id, after, limit)
        .await?
        .ok_or_else(|| no_session(&session_id))?;
    let next_cursor = view.has_more.then(|| view.episodes.last().map(|e| cursor(e.seq))).flatten();
    Ok(Json(SessionLog {
        session: view.session.into(),
        snapshot: view.snapshot.map(Snapshot::from),
        pinned_episodes: view.pinned.into_iter().map(SessionEpisode::from).collect(),
        episodes: view.episodes.into_iter().map(SessionEpisode::from).collect(),
        has_more: view.has_more,
        next_cursor,
    }))
}

/// Stores a snapshot if `prev` is still the latest one.
#[utoipa::path(put, path = "/v1/subjects/{subject_id}/sessions/{session_id}/snapshot", tag = "working memory",
    summary = "Compact a session: store a snapshot if `prev` is still the latest (compare-and-swap)",
    params(TenantHeader, ("subject_id" = String, Path, description = "Subject."),
           ("session_id" = String, Path, description = "Session.")),
    request_body = SnapshotRequest,
    responses((status = 201, description = "Stored", body = Snapshot),
              (status = 404, description = "No episode in this session", body = Envelope),
              (status = 409, description = "`prev` is not the latest snapshot; `error.details.latest` is", body = Envelope),
              CommonErrors))]
pub async fn put_snapshot(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path((subject_id, session_id)): Path<(String, String)>,
    JsonBody(body): JsonBody,
) -> ApiResult<(StatusCode, Json<Snapshot>)> {
    subject_id_path(&subject_id)?;
    session_id_path(&session_id)?;
    let req: SnapshotRequest = valid(body)?;
    let mut pinned: Vec<Uuid> = Vec::with_capacity(req.pinned.len());
    for id in &req.pinned {
        if !pinned.contains(id) {
            pinned.push(*id);
        }
    }
    let covers_through = parse_cursor(&req.covers_through)
        .ok_or_else(|| invalid_cursor("covers_through", "covers_through is not a cursor of this log"))?;
    let new = NewSnapshot { summary: req.summary, pinned, covers_through, prev: req.prev };
    match svc::put_snapshot(&st.pool, &tenant, &subject_id, &session_id, &new).await? {
        Ok(row) => Ok((StatusCode::CREATED, Json(row.into()))),
        Err(SnapshotRefusal::NoSession) => Err(no_session(&session_id)),
        Err(SnapshotRefusal::Conflict(latest)) => Err(ApiError::detailed(
            StatusCode::CONFLICT,
            "snapshot_conflict",
            "prev is not the session's latest snapshot; rebase on `details.latest` and retry",
            json!({"latest": latest.map(|l| Snapshot::from(*l))}),
        )),
        Err(SnapshotRefusal::InvalidCursor(msg)) => Err(invalid_cursor("covers_through", msg)),
        Err(SnapshotRefusal::ForeignPinned(ids)) => Err(ApiError::detailed(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_pinned",
            "pinned names episodes that are not in this session",
            json!({"episode_ids": ids}),
        )),
    }
}

/// Sets or removes keys of the session's metadata.
#[utoipa::path(patch, path = "/v1/subjects/{subject_id}/sessions/{session_id}", tag = "working memory",
    summary = "Set session metadata (a key set to null is removed)",
    params(TenantHeader, ("subject_id" = String, Path, description = "Subject."),
           ("session_id" = String, Path, description = "Session.")),
    request_body = SessionPatch,
    responses((status = 200, description = "The session", body = SessionSummary),
              (status = 404, description = "No episode in this session", body = Envelope), CommonErrors))]
pub async fn patch(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path((subject_id, session_id)): Path<(String, String)>,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<SessionSummary>> {
    subject_id_path(&subject_id)?;
    session_id_path(&session_id)?;
    let patch = valid::<SessionPatch>(body)?.metadata;
    match svc::patch_metadata(&st.pool, &tenant, &subject_id, &session_id, &patch).await? {
        None => Err(no_session(&session_id)),
        Some(Ok(row)) => Ok(Json(row.into())),
        Some(Err(size)) => Err(ApiError::validation(vec![FieldError {
            loc: vec!["body".into(), "metadata".into()],
            msg: format!("the session's metadata would be {size} bytes; at most {MAX_METADATA_BYTES}"),
            kind: "too_long",
        }])),
    }
}
