//! Receipt endpoints: read, list, verify the signature, verify the tenant's chain, replay.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::{IntoParams, ToSchema};

use crate::api::extract::Tenant;
use crate::api::query::{instant, int, length, query};
use crate::api::schema::responses::Receipt;
use crate::api::schema::{CommonErrors, TenantHeader};
use crate::db;
use crate::error::{ApiError, ApiResult, Envelope};
use crate::input::rules::between;
use crate::model::time::isoformat;
use crate::receipts::canonical::parse_stored;
use crate::receipts::signing::verify as verify_signature;
use crate::services::receipts::{verify_chain, ChainReport};
use crate::services::replay::{replay as run_replay, ReplayDeps, ReplayError};
use crate::state::AppState;

fn not_found() -> ApiError {
    ApiError::not_found("receipt not found")
}

fn with_status(row: &db::receipts::ReceiptRow) -> ApiResult<Value> {
    let mut body = parse_stored(&row.body).map_err(ApiError::Internal)?;
    body["status"] = json!(row.status);
    if let Some(t) = &row.tombstoned_at {
        body["tombstoned_at"] = json!(isoformat(t));
    }
    Ok(body)
}

/// One page of receipts.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReceiptPage {
    #[schema(value_type = Vec<Receipt>)]
    pub receipts: Vec<Value>,
    /// The last receipt id when the page is full; pass it as `cursor`.
    pub next_cursor: Option<String>,
}

/// A receipt signature check.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReceiptVerdict {
    /// true/false when checked; null when the signature could not be checked.
    pub valid: Option<bool>,
    pub key_id: Option<String>,
    pub algorithm: Option<String>,
    /// `ok`, `signature_mismatch`, `key_unavailable`, `unsupported_algorithm` or `no_signature`.
    #[schema(value_type = String)]
    pub reason: &'static str,
    pub receipt_id: String,
}

/// The stored body plus `status` (and `tombstoned_at`).
#[utoipa::path(get, path = "/v1/receipts/{id}", tag = "receipts", summary = "One receipt",
    params(TenantHeader, ("id" = String, Path, description = "Identifier.")),
    responses((status = 200, description = "Receipt", body = Receipt),
              (status = 404, description = "receipt not found", body = Envelope)))]
pub async fn get(State(st): State<AppState>, Tenant(tenant): Tenant, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let mut conn = db::scope::begin(&st.pool, &tenant).await?;
    let row = db::receipts::get(&mut conn, &tenant, &id).await?.ok_or_else(not_found)?;
    Ok(Json(with_status(&row)?))
}

/// `GET /v1/receipts`.
#[derive(Debug, Deserialize, IntoParams, garde::Validate)]
#[into_params(parameter_in = Query)]
pub struct ReceiptListParams {
    /// Subject id (1-256 chars).
    #[garde(custom(length(1, 256)))]
    #[param(min_length = 1, max_length = 256)]
    pub subject_id: String,
    /// ISO datetime.
    #[serde(default, deserialize_with = "instant")]
    #[garde(skip)]
    #[param(value_type = Option<String>, max_length = 64, format = DateTime)]
    pub since: Option<DateTime<Utc>>,
    /// ISO datetime.
    #[serde(default, deserialize_with = "instant")]
    #[garde(skip)]
    #[param(value_type = Option<String>, max_length = 64, format = DateTime)]
    pub until: Option<DateTime<Utc>>,
    /// Receipt id to continue after.
    #[garde(custom(length(0, 26)))]
    #[param(max_length = 26)]
    pub cursor: Option<String>,
    /// Page size.
    #[serde(default = "int::<50>")]
    #[garde(custom(between(1, 200)))]
    #[param(minimum = 1, maximum = 200, default = int::<50>)]
    pub limit: i64,
    /// Include tombstones.
    #[serde(default)]
    #[garde(skip)]
    #[param(default = false)]
    pub include_tombstoned: bool,
}

/// A subject's receipts, newest first, cursor-paged by receipt id.
#[utoipa::path(get, path = "/v1/receipts", tag = "receipts", summary = "A subject's receipts, newest first",
    params(TenantHeader, ReceiptListParams),
    responses((status = 200, description = "Page", body = ReceiptPage), CommonErrors))]
pub async fn list(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<ReceiptPage>> {
    let q: ReceiptListParams = query(raw.as_deref())?;
    let mut conn = db::scope::begin(&st.pool, &tenant).await?;
    let rows = db::receipts::list(
        &mut conn,
        &tenant,
        &q.subject_id,
        q.since,
        q.until,
        q.cursor.as_deref(),
        q.limit,
        q.include_tombstoned,
    )
    .await?;
    let next_cursor = (rows.len() as i64 == q.limit).then(|| rows.last().map(|r| r.receipt_id.clone())).flatten();
    let receipts = rows.iter().map(with_status).collect::<ApiResult<Vec<Value>>>()?;
    Ok(Json(ReceiptPage { receipts, next_cursor }))
}

/// Checks the HMAC of the stored body with the operator's keys.
#[utoipa::path(get, path = "/v1/receipts/{id}/verify", tag = "receipts", summary = "Verify a receipt's signature",
    params(TenantHeader, ("id" = String, Path, description = "Identifier.")),
    responses((status = 200, description = "Verdict", body = ReceiptVerdict),
              (status = 404, description = "receipt not found", body = Envelope)))]
pub async fn verify(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
) -> ApiResult<Json<ReceiptVerdict>> {
    let mut conn = db::scope::begin(&st.pool, &tenant).await?;
    let row = db::receipts::get(&mut conn, &tenant, &id).await?.ok_or_else(not_found)?;
    let body = parse_stored(&row.body).map_err(ApiError::Internal)?;
    let v = verify_signature(&body, &st.signing_keys);
    Ok(Json(ReceiptVerdict {
        valid: v.valid,
        key_id: v.key_id,
        algorithm: v.algorithm,
        reason: v.reason,
        receipt_id: row.receipt_id,
    }))
}

/// Walks the tenant's receipt chain and reports the first break.
#[utoipa::path(get, path = "/v1/receipts/chain/verify", tag = "receipts",
    summary = "Verify the tenant's receipt hash chain",
    params(TenantHeader),
    responses((status = 200, description = "Report", body = ChainReport)))]
pub async fn verify_tenant_chain(State(st): State<AppState>, Tenant(tenant): Tenant) -> ApiResult<Json<ChainReport>> {
    Ok(Json(verify_chain(&st.pool, &tenant).await?))
}

/// How a receipt is replayed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(default = "as_of")]
pub enum ReplayMode {
    #[default]
    AsOf,
    Current,
}

/// `POST /v1/receipts/{id}/replay`.
#[derive(Debug, Deserialize, IntoParams, garde::Validate)]
#[into_params(parameter_in = Query)]
pub struct ReplayParams {
    /// Replay mode.
    #[serde(default)]
    #[garde(skip)]
    #[param(inline)]
    pub mode: ReplayMode,
}

/// Rebuilds the bundle as of the receipt (or against today's memories with `?mode=current`).
#[utoipa::path(post, path = "/v1/receipts/{id}/replay", tag = "receipts",
    summary = "Rebuild the bundle as of the receipt (or against current memories)",
    params(TenantHeader, ("id" = String, Path, description = "Identifier."), ReplayParams),
    responses((status = 200, description = "Replay result", body = Object),
              (status = 404, description = "receipt not found", body = Envelope),
              (status = 422, description = "unreplayable.<reason>", body = Envelope)))]
pub async fn replay(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let q: ReplayParams = query(raw.as_deref())?;
    let deps = ReplayDeps {
        pool: &st.pool,
        embedder: &st.embedder,
        cache: &st.task_vectors,
        subjects: &st.subjects,
        keys: &st.signing_keys,
    };
    match run_replay(&deps, &tenant, &id, q.mode == ReplayMode::Current).await {
        Ok(v) => Ok(Json(v)),
        Err(ReplayError::NotFound) => Err(not_found()),
        Err(ReplayError::Unreplayable { reason, message }) => {
            Err(ApiError::client(StatusCode::UNPROCESSABLE_ENTITY, &format!("unreplayable.{reason}"), message))
        }
        Err(ReplayError::Internal(e)) => Err(ApiError::Internal(e)),
    }
}
