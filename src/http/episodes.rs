//! `POST /v1/episodes` and `POST /v1/episodes/batch`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::api::episodes::{CreateEpisode, EpisodeBatch, EpisodeBatchRequest};
use crate::api::extract::{JsonBody, Tenant};
use crate::api::schema::{CommonErrors, TenantHeader};
use crate::error::{ApiResult, Envelope};
use crate::http::body::valid;
use crate::model::episode::{Episode, Inserted, NewEpisode};
use crate::services::episodes as svc;
use crate::state::AppState;

impl From<CreateEpisode> for NewEpisode {
    fn from(e: CreateEpisode) -> Self {
        NewEpisode {
            subject_id: e.subject_id,
            source: e.source,
            kind: e.r#type,
            payload: e.payload,
            metadata: e.metadata.unwrap_or_default(),
            provenance: e.provenance.unwrap_or_default(),
            session_id: e.session_id,
            occurred_at: e.occurred_at,
            idempotency_key: e.idempotency_key.filter(|k| !k.is_empty()),
        }
    }
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
    let input: NewEpisode = valid::<CreateEpisode>(body)?.into();
    let (row, inserted) = svc::ingest_one(&st.group_commit, &st.tenants, &tenant, input).await?;
    st.subjects.lexical.episodes_written(&st.pool, &tenant, &row.subject_id);
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
    let inputs: Vec<NewEpisode> =
        valid::<EpisodeBatchRequest>(body)?.episodes.into_iter().map(NewEpisode::from).collect();
    let (rows, created) = svc::ingest_batch(&st.pool, &st.tenants, &st.webhooks, &st.lexer, &tenant, inputs).await?;
    let subjects: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.subject_id.as_str()).collect();
    subjects.into_iter().for_each(|s| st.subjects.lexical.episodes_written(&st.pool, &tenant, s));
    Ok((StatusCode::CREATED, Json(EpisodeBatch { episodes_created: created, episodes: rows })).into_response())
}
