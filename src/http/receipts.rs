//! Receipt endpoints: read, list, verify the signature, verify the tenant's chain, replay.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use crate::db;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::Tenant;
use crate::http::input::{parse_datetime, Query};
use crate::model::time::isoformat;
use crate::receipts::canonical::parse_exact;
use crate::receipts::signing::verify as verify_signature;
use crate::services::receipts::verify_chain;
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

/// The stored body plus `status` (and `tombstoned_at`).
pub async fn get(State(st): State<AppState>, Tenant(tenant): Tenant, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let mut conn = db::scope::begin(&st.pool, &tenant).await?;
    let row = db::receipts::get(&mut conn, &tenant, &id).await?.ok_or_else(not_found)?;
    Ok(Json(with_status(&row)?))
}

/// A subject's receipts, newest first, cursor-paged by receipt id.
pub async fn list(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
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
    Ok(Json(json!({ "receipts": receipts, "next_cursor": next_cursor })))
}

/// Checks the HMAC of the stored body with the operator's keys.
pub async fn verify(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let mut conn = db::scope::begin(&st.pool, &tenant).await?;
    let row = db::receipts::get(&mut conn, &tenant, &id).await?.ok_or_else(not_found)?;
    let body = parse_exact(&row.body).map_err(ApiError::Internal)?;
    let mut out = json!(verify_signature(&body, &st.signing_keys));
    out["receipt_id"] = json!(row.receipt_id);
    Ok(Json(out))
}

/// Walks the tenant's receipt chain and reports the first break.
pub async fn verify_tenant_chain(State(st): State<AppState>, Tenant(tenant): Tenant) -> ApiResult<Json<Value>> {
    let report = verify_chain(&st.pool, &tenant).await?;
    Ok(Json(json!(report)))
}

/// Rebuilds the bundle as of the receipt (or against today's memories with `?mode=current`).
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
