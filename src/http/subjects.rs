//! `GET /v1/subjects`.

use axum::extract::{RawQuery, State};
use axum::Json;
use serde_json::{json, Value};

use crate::db;
use crate::error::ApiResult;
use crate::http::extract::Tenant;
use crate::http::input::Query;
use crate::state::AppState;

/// Lists the tenant's subjects with episode and memory counts.
pub async fn list(State(st): State<AppState>, Tenant(tenant): Tenant, RawQuery(raw): RawQuery) -> ApiResult<Json<Value>> {
    let mut q = Query::parse(raw.as_deref());
    let limit = q.int("limit", 1, 200, 50);
    let offset = q.int("offset", 0, i64::from(i32::MAX), 0);
    q.finish()?;
    let mut conn = st.pool.acquire().await?;
    let (subjects, total) = db::subjects::list(&mut conn, &tenant, limit, offset).await?;
    Ok(Json(json!({ "subjects": subjects, "total": total })))
}
