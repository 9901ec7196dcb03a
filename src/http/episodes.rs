//! `POST /v1/episodes` and `POST /v1/episodes/batch`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::error::{ApiError, ApiResult};
use crate::http::extract::{JsonBody, Tenant};
use crate::http::input::{object_at, Reader};
use crate::model::episode::{Inserted, NewEpisode, MAX_IDEMPOTENCY_KEY};
use crate::services::episodes as svc;
use crate::state::AppState;

/// Maximum episodes in one batch.
pub const MAX_BATCH: usize = 100;

/// Reads one episode request object.
pub fn read_episode(r: &mut Reader<'_>) -> NewEpisode {
    NewEpisode {
        subject_id: r.req_str("subject_id", 1, 256),
        source: r.req_str("source", 1, 256),
        kind: r.req_str("type", 1, 128),
        payload: r.req_object("payload"),
        metadata: r.opt_object("metadata"),
        provenance: r.opt_object("provenance"),
        session_id: r.opt_str("session_id", 256),
        occurred_at: r.opt_datetime("occurred_at"),
        idempotency_key: r.opt_str("idempotency_key", MAX_IDEMPOTENCY_KEY).filter(|k| !k.is_empty()),
    }
}

fn parse_one(body: &Value) -> ApiResult<NewEpisode> {
    let mut errors = Vec::new();
    let episode = object_at(body, vec!["body".into()], &mut errors).map(|mut r| read_episode(&mut r));
    match episode {
        Some(e) if errors.is_empty() => Ok(e),
        _ => Err(ApiError::validation(errors)),
    }
}

fn parse_batch(body: &Value) -> ApiResult<Vec<NewEpisode>> {
    let mut errors = Vec::new();
    let items = match object_at(body, vec!["body".into()], &mut errors) {
        Some(mut r) => r.req_array("episodes", 1, MAX_BATCH),
        None => Vec::new(),
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let loc = vec!["body".into(), "episodes".into(), i.to_string()];
        if let Some(mut r) = object_at(item, loc, &mut errors) {
            out.push(read_episode(&mut r));
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(ApiError::validation(errors))
    }
}

/// Records one episode: 201 when new, 200 when the idempotency key already named one.
pub async fn create(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    let input = parse_one(&body)?;
    let (row, inserted) = svc::ingest_one(&st.pool, &st.tenants, &st.webhooks, &tenant, &input).await?;
    let status = match inserted {
        Inserted::New => StatusCode::CREATED,
        Inserted::Existing => StatusCode::OK,
    };
    Ok((status, Json(row)).into_response())
}

/// Records up to 100 episodes atomically; all are validated before any write.
pub async fn create_batch(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    let inputs = parse_batch(&body)?;
    let (rows, created) = svc::ingest_batch(&st.pool, &st.tenants, &st.webhooks, &tenant, &inputs).await?;
    Ok((StatusCode::CREATED, Json(json!({ "episodes_created": created, "episodes": rows }))).into_response())
}
