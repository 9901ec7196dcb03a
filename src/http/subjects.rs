//! `GET /v1/subjects`, `DELETE /v1/subjects/{id}` and `GET /v1/erasures/{id}`.

use axum::extract::{Path, RawQuery, State};
use axum::Json;
use serde_json::{json, Value};

use crate::db;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::Tenant;
use crate::http::input::Query;
use crate::services::erase;
use crate::state::AppState;

/// Lists the tenant's subjects with episode and memory counts.
pub async fn list(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let mut q = Query::parse(raw.as_deref());
    let limit = q.int("limit", 1, 200, 50);
    let offset = q.int("offset", 0, i64::from(i32::MAX), 0);
    q.finish()?;
    let mut conn = db::scope::begin(&st.pool, &tenant).await?;
    let (subjects, total) = db::subjects::list(&mut conn, &tenant, limit, offset).await?;
    Ok(Json(json!({ "subjects": subjects, "total": total })))
}

/// Deletes every row of a subject in the tenant; 200 with counts even when nothing existed.
pub async fn delete(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path(subject_id): Path<String>,
) -> ApiResult<Json<Value>> {
    let mut q = Query::parse(None);
    if subject_id.is_empty() || subject_id.chars().count() > 256 || subject_id.contains('\0') {
        q.errors.push(crate::error::FieldError {
            loc: vec!["path".into(), "subject_id".into()],
            msg: "must be 1-256 characters without NUL".into(),
            kind: "string_length",
        });
    }
    q.finish()?;
    let erased = erase::erase_subject(&st.pool, &st.signing_keys, &st.webhooks, &tenant, &subject_id).await?;
    Ok(Json(json!({
        "subject_id": subject_id,
        "episodes_deleted": erased.count("episodes"),
        "memories_deleted": erased.count("memories"),
        "erasure_id": erased.erasure_id,
        "certificate": erased.certificate,
    })))
}

/// An erasure certificate of the tenant, with its signature check; 404 for unknown ids.
pub async fn erasure(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path(erasure_id): Path<String>,
) -> ApiResult<Json<Value>> {
    let found = erase::certificate(&st.pool, &st.signing_keys, &tenant, &erasure_id).await?;
    let (certificate, check) = found.ok_or_else(|| ApiError::not_found("Erasure not found."))?;
    Ok(Json(json!({ "erasure_id": erasure_id, "certificate": certificate, "signature_check": check })))
}
