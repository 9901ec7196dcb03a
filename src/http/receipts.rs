//! Receipt endpoints: read, list, verify the signature, verify the tenant's chain, replay.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use crate::db;
use crate::error::{ApiError, ApiResult, Envelope};
use crate::http::extract::Tenant;
use crate::http::input::{parse_datetime, Query};
use crate::http::schema::params::{ReceiptListParams, ReplayParams};
use crate::http::schema::responses::Receipt;
use crate::http::schema::{CommonErrors, TenantHeader};
use crate::model::time::isoformat;
use crate::receipts::exact_json::parse_exact;
use crate::receipts::signing::verify as verify_signature;
use crate::services::receipts::{verify_chain, ChainReport};
use crate::services::replay::{replay as run_replay, ReplayDeps, ReplayError};
use crate::state::AppState;

fn not_found() -> ApiError {
    ApiError::not_found("receipt not found")
}

fn with_status(row: &db::receipts::ReceiptRow) -> ApiResult<Value> {
    let mut body = parse_exact(&row.body).map_err(ApiError::Internal)?;
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

/// A subject's receipts, newest first, cursor-paged by receipt id.
#[utoipa::path(get, path = "/v1/receipts", tag = "receipts", summary = "A subject's receipts, newest first",
    params(TenantHeader, ReceiptListParams),
    responses((status = 200, description = "Page", body = ReceiptPage), CommonErrors))]
pub async fn list(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<ReceiptPage>> {
    let mut q = Query::parse(raw.as_deref());
    let subject_id = q.req_str("subject_id", 1, 256);
    let since = q.opt_str("since", 64);
    let until = q.opt_str("until", 64);
    let cursor = q.opt_str("cursor", 26);
    let limit = q.int("limit", 1, 200, 50);
    let include_tombstoned = q.bool("include_tombstoned", false);
    let since_t = since.as_deref().map(|s| (s, parse_datetime(s)));
    let until_t = until.as_deref().map(|s| (s, parse_datetime(s)));
    for (name, v) in [("since", &since_t), ("until", &until_t)] {
        if let Some((_, None)) = v {
            q.errors.push(crate::error::FieldError {
                loc: vec!["query".into(), name.into()],
                msg: "must be an ISO-8601 datetime".into(),
                kind: "datetime_parsing",
            });
        }
    }
    q.finish()?;
    let mut conn = db::scope::begin(&st.pool, &tenant).await?;
    let rows = db::receipts::list(
        &mut conn,
        &tenant,
        &subject_id,
        since_t.and_then(|(_, t)| t),
        until_t.and_then(|(_, t)| t),
        cursor.as_deref(),
        limit,
        include_tombstoned,
    )
    .await?;
    let next_cursor = (rows.len() as i64 == limit).then(|| rows.last().map(|r| r.receipt_id.clone())).flatten();
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
    let body = parse_exact(&row.body).map_err(ApiError::Internal)?;
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
    let mut q = Query::parse(raw.as_deref());
    let mode = q.choice("mode", &["as_of", "current"], "as_of");
    q.finish()?;
    let deps = ReplayDeps { pool: &st.pool, embedder: &st.embedder, cache: &st.task_vectors, keys: &st.signing_keys };
    match run_replay(&deps, &tenant, &id, mode == "current").await {
        Ok(v) => Ok(Json(v)),
        Err(ReplayError::NotFound) => Err(not_found()),
        Err(ReplayError::Unreplayable { reason, message }) => {
            Err(ApiError::client(StatusCode::UNPROCESSABLE_ENTITY, &format!("unreplayable.{reason}"), message))
        }
        Err(ReplayError::Internal(e)) => Err(ApiError::Internal(e)),
    }
}
