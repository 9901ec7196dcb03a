//! `POST /v1/episodes` and `POST /v1/episodes/batch`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult, Envelope};
use crate::http::extract::{JsonBody, Tenant};
use crate::http::input::{object_at, Reader};
use crate::http::schema::requests::{CreateEpisode, EpisodeBatchRequest};
use crate::http::schema::{CommonErrors, TenantHeader};
use crate::model::episode::{Episode, Inserted, NewEpisode, MAX_IDEMPOTENCY_KEY};
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

/// The episodes a batch recorded.
#[derive(Debug, Serialize, ToSchema)]
pub struct EpisodeBatch {
    pub episodes_created: usize,
    pub episodes: Vec<Episode>,
}

/// Records one episode: 201 when new, 200 when the idempotency key already named one.
#[utoipa::path(post, path = "/v1/episodes", tag = "episodes", summary = "Record one episode (idempotent with a key)",
    params(TenantHeader), request_body = CreateEpisode,
    responses((status = 201, description = "Created", body = Episode),
              (status = 200, description = "Existing episode for the idempotency key", body = Episode),
              (status = 413, description = "Body too large", body = Envelope), CommonErrors))]
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
#[utoipa::path(post, path = "/v1/episodes/batch", tag = "episodes", summary = "Record 1-100 episodes atomically",
    params(TenantHeader), request_body = EpisodeBatchRequest,
    responses((status = 201, description = "Created", body = EpisodeBatch), CommonErrors))]
pub async fn create_batch(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    let inputs = parse_batch(&body)?;
    let (rows, created) = svc::ingest_batch(&st.pool, &st.tenants, &st.webhooks, &tenant, &inputs).await?;
    Ok((StatusCode::CREATED, Json(EpisodeBatch { episodes_created: created, episodes: rows })).into_response())
}
