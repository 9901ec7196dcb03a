//! Support sessions: `POST|GET /v1/resolutions`, `GET /v1/subjects/{id}/health|sla`, `POST /v1/handoff`.

use axum::extract::{Path, RawQuery, State};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

use crate::api::context::refused;
use crate::api::extract::{JsonBody, Tenant};
use crate::api::query::{choice, length, paged, query};
use crate::api::schema::{CommonErrors, TenantHeader};
use crate::db::resolutions::{ResolutionRow, ResolutionWrite};
use crate::error::ApiResult;
use crate::http::body::valid;
use crate::http::path::subject_id_path;
use crate::input::rules::{between, chars, no_nul, ONE_OF};
use crate::model::time::{isoformat, now_micros};

use crate::api::context::ReceiptFields;
use crate::model::limits::{DEFAULT_BUDGET_TOKENS, MAX_HANDOFF_TOKENS};
use crate::services::handoff::{self, handoff as build_handoff, HandoffView};
use crate::services::sessions as svc;
use crate::sessions::health::Health;
use crate::sessions::sla::{SlaSummary, Thresholds};
use crate::state::AppState;

const STATUSES: [&str; 3] = ["open", "resolved", "unresolved"];

/// `POST /v1/handoff`. Unknown fields are ignored; optional fields may be `null` (absent).
#[derive(Debug, Deserialize, ToSchema, garde::Validate)]
pub struct HandoffRequest {
    #[garde(custom(chars(1, 256)), custom(no_nul))]
    #[schema(min_length = 1, max_length = 256)]
    pub subject_id: String,
    #[garde(custom(chars(1, 256)), custom(no_nul))]
    #[schema(min_length = 1, max_length = 256)]
    pub session_id: String,
    /// An empty reason is the default.
    #[serde(default)]
    #[garde(custom(chars(0, 256)), custom(no_nul))]
    #[schema(max_length = 256, default = "escalation")]
    pub reason: Option<String>,
    #[serde(default)]
    #[garde(custom(between(1, MAX_HANDOFF_TOKENS)))]
    #[schema(minimum = 1, maximum = 16000, default = 4000)]
    pub max_tokens: Option<i64>,
    /// Whether a receipt is written, and what it records of the caller.
    #[serde(flatten)]
    #[garde(dive)]
    pub receipt: ReceiptFields,
}

impl From<HandoffRequest> for handoff::HandoffRequest {
    fn from(b: HandoffRequest) -> Self {
        let (emit_receipt, meta) = b.receipt.into_meta();
        handoff::HandoffRequest {
            subject_id: b.subject_id,
            session_id: b.session_id,
            reason: b.reason.filter(|s| !s.is_empty()).unwrap_or_else(|| "escalation".to_string()),
            max_tokens: b.max_tokens.unwrap_or(DEFAULT_BUDGET_TOKENS) as usize,
            emit_receipt,
            meta,
        }
    }
}

/// `POST /v1/resolutions`. Unknown fields are ignored; optional fields may be `null` (absent).
#[derive(Debug, Deserialize, ToSchema, garde::Validate)]
pub struct ResolutionRequest {
    #[garde(custom(chars(1, 256)), custom(no_nul))]
    #[schema(min_length = 1, max_length = 256)]
    pub subject_id: String,
    #[garde(custom(chars(1, 256)), custom(no_nul))]
    #[schema(min_length = 1, max_length = 256)]
    pub session_id: String,
    #[serde(default)]
    #[garde(custom(resolution_status))]
    #[schema(value_type = Option<ResolutionStatus>, inline, default = "open")]
    pub status: Option<String>,
    #[serde(default)]
    #[garde(custom(chars(0, 2000)), custom(no_nul))]
    #[schema(max_length = 2000)]
    pub resolution_summary: Option<String>,
    #[serde(default)]
    #[garde(custom(no_nul))]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
}

/// A resolution's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResolutionStatus {
    Open,
    Resolved,
    Unresolved,
}

impl ResolutionStatus {
    /// The stored word.
    pub fn as_str(self) -> &'static str {
        match self {
            ResolutionStatus::Open => "open",
            ResolutionStatus::Resolved => "resolved",
            ResolutionStatus::Unresolved => "unresolved",
        }
    }
}

/// garde rule: a status is one of [`STATUSES`] (kept a string so the 422 lists them).
fn resolution_status(status: &Option<String>, _: &()) -> garde::Result {
    match status {
        Some(s) if !STATUSES.contains(&s.as_str()) => {
            Err(garde::Error::new(format!("{ONE_OF} {}", STATUSES.join(", "))))
        }
        _ => Ok(()),
    }
}

/// A session's resolution.
#[derive(Debug, Serialize, ToSchema)]
pub struct Resolution {
    #[schema(format = Uuid)]
    pub id: String,
    pub subject_id: String,
    pub session_id: String,
    #[schema(value_type = ResolutionStatus, inline)]
    pub status: String,
    pub resolution_summary: Option<String>,
    #[schema(format = DateTime)]
    pub resolved_at: Option<String>,
    #[schema(value_type = Object)]
    pub metadata: Value,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

impl From<ResolutionRow> for Resolution {
    fn from(r: ResolutionRow) -> Self {
        Resolution {
            id: r.id.to_string(),
            resolved_at: r.resolved_at.as_ref().map(isoformat),
            created_at: isoformat(&r.created_at),
            updated_at: isoformat(&r.updated_at),
            subject_id: r.subject_id,
            session_id: r.session_id,
            status: r.status,
            resolution_summary: r.resolution_summary,
            metadata: r.metadata,
        }
    }
}

/// Creates or updates a session's resolution (200 with the row).
#[utoipa::path(post, path = "/v1/resolutions", tag = "sessions", summary = "Create or update a session's resolution",
    params(TenantHeader), request_body = ResolutionRequest,
    responses((status = 200, description = "Resolution", body = Resolution), CommonErrors))]
pub async fn upsert_resolution(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<Resolution>> {
    let req: ResolutionRequest = valid(body)?;
    let (subject_id, session_id, summary) = (req.subject_id, req.session_id, req.resolution_summary);
    let status = req.status.unwrap_or_else(|| "open".to_string());
    let metadata = req.metadata.map(Value::Object);
    let write = ResolutionWrite {
        subject_id: &subject_id,
        session_id: &session_id,
        status: &status,
        summary: summary.as_deref(),
        metadata: metadata.as_ref(),
    };
    let row = svc::upsert_resolution(&st.pool, &tenant, &write).await?;
    Ok(Json(row.into()))
}

paged! {
    /// `GET /v1/resolutions`.
    #[derive(Debug, Deserialize, IntoParams, garde::Validate)]
    #[into_params(parameter_in = Query)]
    pub struct ResolutionListParams {
        /// Subject.
        #[garde(custom(length(1, 256)))]
        #[param(min_length = 1, max_length = 256)]
        pub subject_id: String,
        /// Only this status.
        #[serde(default, deserialize_with = "choice::<_, _, 32>")]
        #[garde(skip)]
        #[param(inline)]
        pub status: Option<ResolutionStatus>,
    }
}

/// The subject's resolutions as a bare array, most recently updated first.
#[utoipa::path(get, path = "/v1/resolutions", tag = "sessions",
    summary = "A subject's resolutions (a bare array, most recently updated first)",
    params(TenantHeader, ResolutionListParams),
    responses((status = 200, description = "Resolutions", body = Vec<Resolution>), CommonErrors))]
pub async fn list_resolutions(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Vec<Resolution>>> {
    let q: ResolutionListParams = query(raw.as_deref())?;
    let status = q.status.map(ResolutionStatus::as_str);
    let rows = svc::list_resolutions(&st.pool, &tenant, &q.subject_id, status, q.limit, q.offset).await?;
    Ok(Json(rows.into_iter().map(Resolution::from).collect()))
}

/// The subject's health score, state and factors.
#[utoipa::path(get, path = "/v1/subjects/{subject_id}/health", tag = "sessions",
    summary = "The subject's health score, state and factors",
    params(TenantHeader, ("subject_id" = String, Path, description = "Identifier.")),
    responses((status = 200, description = "Health", body = Health), CommonErrors))]
pub async fn health(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path(subject_id): Path<String>,
) -> ApiResult<Json<Health>> {
    subject_id_path(&subject_id)?;
    let (h, transition) = svc::health(&st.pool, &st.webhooks, &tenant, &subject_id, now_micros()).await?;
    if let Some(t) = transition {
        tracing::info!(event = t.event.as_str(), from = %t.previous_state, to = h.state, "subject health changed");
    }
    Ok(Json(h))
}

/// `GET /v1/subjects/{subject_id}/sla`.
#[derive(Debug, Deserialize, IntoParams, garde::Validate)]
#[into_params(parameter_in = Query)]
pub struct SlaParams {
    /// First-response target in minutes.
    #[serde(default = "first_response_minutes", deserialize_with = "threshold")]
    #[garde(custom(above_zero(525_600.0)))]
    #[param(exclusive_minimum = 0, maximum = 525600, default = first_response_minutes)]
    pub first_response_threshold_minutes: f64,
    /// Resolution target in hours.
    #[serde(default = "resolution_hours", deserialize_with = "threshold")]
    #[garde(custom(above_zero(87_600.0)))]
    #[param(exclusive_minimum = 0, maximum = 87600, default = resolution_hours)]
    pub resolution_threshold_hours: f64,
}

fn first_response_minutes() -> f64 {
    Thresholds::default().first_response_minutes
}

fn resolution_hours() -> f64 {
    Thresholds::default().resolution_hours
}

/// `deserialize_with` for a threshold: text of at most 32 characters, trimmed; text that is not
/// a number reads as NaN, which [`above_zero`] refuses with the message naming the range.
fn threshold<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let raw = String::deserialize(d)?;
    if raw.chars().count() > 32 || raw.contains('\0') {
        return Err(serde::de::Error::custom("must be 0..32 characters without NUL"));
    }
    Ok(raw.trim().parse::<f64>().unwrap_or(f64::NAN))
}

/// garde rule `custom(above_zero(max))`: a finite number in `(0, max]`.
fn above_zero(max: f64) -> impl FnOnce(&f64, &()) -> garde::Result {
    move |v, _| match *v {
        v if v.is_finite() && v > 0.0 && v <= max => Ok(()),
        _ => Err(garde::Error::new(format!("must be a number greater than 0 and at most {max}"))),
    }
}

/// The subject's SLA figures per session.
#[utoipa::path(get, path = "/v1/subjects/{subject_id}/sla", tag = "sessions",
    summary = "First-response and resolution times per session",
    params(TenantHeader, ("subject_id" = String, Path, description = "Identifier."), SlaParams),
    responses((status = 200, description = "SLA summary", body = SlaSummary), CommonErrors))]
pub async fn sla(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path(subject_id): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<SlaSummary>> {
    subject_id_path(&subject_id)?;
    let q: SlaParams = query(raw.as_deref())?;
    let t = Thresholds {
        first_response_minutes: q.first_response_threshold_minutes,
        resolution_hours: q.resolution_threshold_hours,
    };
    let summary = svc::sla(&st.pool, &tenant, &subject_id, t, now_micros()).await?;
    Ok(Json(summary))
}

/// The handoff brief for a session.
#[utoipa::path(post, path = "/v1/handoff", tag = "sessions", summary = "A handoff brief for whoever takes over a session",
    params(TenantHeader), request_body = HandoffRequest,
    responses((status = 200, description = "Handoff", body = HandoffView), CommonErrors))]
pub async fn handoff(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<HandoffView>> {
    let req: handoff::HandoffRequest = valid::<HandoffRequest>(body)?.into();
    match build_handoff(&st.context_deps(), &tenant, &req).await {
        Ok(h) => Ok(Json(h.view(&req))),
        Err(e) => Err(refused(e)),
    }
}
