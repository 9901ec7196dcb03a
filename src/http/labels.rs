//! `/admin/memories/...`: the suggested-label review queue (admin keys only; see `http::auth`).

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::db::labels::SuggestedFilter;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::http::extract::{valid_tenant_id, JsonBody, Tenant};
use crate::http::input::{object_at, Query};
use crate::model::time::isoformat;
use crate::policy::suggest::CATALOGUE;
use crate::services::labels::{self as svc, PromoteFailure};
use crate::state::AppState;

/// The tenant to act on: `?tenant_id=` when given (admin routes may name any tenant), else the caller's.
fn target_tenant(q: &mut Query, caller: String) -> String {
    match q.opt_str("tenant_id", 256) {
        Some(t) if valid_tenant_id(&t) => t,
        Some(_) => {
            q.errors.push(FieldError {
                loc: vec!["query".into(), "tenant_id".into()],
                msg: "must be 1-256 printable characters".into(),
                kind: "string_length",
            });
            caller
        }
        None => caller,
    }
}

/// Memories with label suggestions awaiting review, newest first, and the label catalogue.
pub async fn list(
    State(st): State<AppState>,
    Tenant(caller): Tenant,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let mut q = Query::parse(raw.as_deref());
    let tenant = target_tenant(&mut q, caller);
    let subject_id = q.opt_str("subject_id", 256).filter(|s| !s.is_empty());
    let label = q.opt_str("label", 128).filter(|s| !s.is_empty());
    let limit = q.int("limit", 1, 500, 50);
    let offset = q.int("offset", 0, i64::from(i32::MAX), 0);
    q.finish()?;
    let label = label.map(|l| crate::policy::labels::normalise_label(&l));
    let filter = SuggestedFilter { subject_id: subject_id.as_deref(), label: label.as_deref() };
    let page = svc::list(&st.pool, &tenant, &filter, limit, offset).await?;
    let memories: Vec<Value> = page
        .rows
        .iter()
        .map(|m| {
            json!({
                "id": m.id.to_string(),
                "subject_id": m.subject_id,
                "tenant_id": tenant,
                "kind": m.kind,
                "content": m.content,
                "summary": m.summary,
                "suggested_labels": m.suggested_labels,
                "sensitivity_labels": m.sensitivity_labels,
                "created_at": isoformat(&m.created_at),
            })
        })
        .collect();
    let catalogue: Vec<Value> = CATALOGUE
        .iter()
        .map(|e| json!({"label": e.label, "description": e.description, "detector": e.detector}))
        .collect();
    Ok(Json(json!({
        "memories": memories,
        "total": page.total,
        "limit": limit,
        "offset": offset,
        "catalogue": catalogue,
    })))
}

/// Promotes suggested labels of one memory to its sensitivity labels.
pub async fn promote(
    State(st): State<AppState>,
    Tenant(caller): Tenant,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<Value>> {
    let mut q = Query::parse(raw.as_deref());
    let tenant = target_tenant(&mut q, caller);
    q.finish()?;
    let memory_id = Uuid::parse_str(&id).map_err(|_| {
        ApiError::validation(vec![FieldError {
            loc: vec!["path".into(), "memory_id".into()],
            msg: "must be a UUID".into(),
            kind: "uuid_parsing",
        }])
    })?;
    let mut errors = Vec::new();
    let mut labels = Vec::new();
    if let Some(mut r) = object_at(&body, vec!["body".into()], &mut errors) {
        let loc = r.child_loc("labels");
        for (i, v) in r.req_array("labels", 0, 1000).iter().enumerate() {
            match v.as_str() {
                Some(s) if s.chars().count() <= 128 && !s.contains('\0') => labels.push(s.to_string()),
                _ => {
                    let mut l = loc.clone();
                    l.push(i.to_string());
                    r.errors().push(FieldError {
                        loc: l,
                        msg: "must be a string of at most 128 characters".into(),
                        kind: "string_type",
                    });
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    match svc::promote(&st.pool, &tenant, memory_id, &labels).await {
        Ok(p) => Ok(Json(json!({
            "memory_id": memory_id.to_string(),
            "promoted": p.promoted,
            "sensitivity_labels": p.sensitivity_labels,
            "suggested_labels": p.suggested_labels,
        }))),
        Err(PromoteFailure::NotFound) => Err(ApiError::client(StatusCode::NOT_FOUND, "http_error", "memory not found")),
        Err(PromoteFailure::Refused(e)) => {
            Err(ApiError::client(StatusCode::UNPROCESSABLE_ENTITY, e.code(), e.to_string()))
        }
        Err(PromoteFailure::Db(e)) => Err(e.into()),
    }
}
