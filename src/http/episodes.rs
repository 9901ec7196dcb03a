//! `POST /v1/episodes` and `POST /v1/episodes/batch`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::error::{ApiResult, Envelope};
use crate::http::body::valid;
use crate::http::extract::{JsonBody, Tenant};
use crate::http::schema::{CommonErrors, TenantHeader};
use crate::input::rules::{chars, datetime, list_len, no_nul};
use crate::model::episode::{Episode, Inserted, NewEpisode, MAX_IDEMPOTENCY_KEY};
use crate::services::episodes as svc;
use crate::state::AppState;

/// Maximum episodes in one batch (`EpisodeBatchRequest::episodes`).
pub const MAX_BATCH: usize = 100;

/// One episode (`POST /v1/episodes`, and each item of a batch). Unknown fields are ignored;
/// optional fields may be `null`, which is the same as absent.
#[derive(Debug, Deserialize, ToSchema, garde::Validate)]
pub struct CreateEpisode {
    #[garde(custom(chars(1, 256)), custom(no_nul))]
    #[schema(min_length = 1, max_length = 256)]
    pub subject_id: String,
    #[garde(custom(chars(1, 256)), custom(no_nul))]
    #[schema(min_length = 1, max_length = 256)]
    pub source: String,
    // a raw identifier, so limit errors name the wire field
    #[garde(custom(chars(1, 128)), custom(no_nul))]
    #[schema(min_length = 1, max_length = 128)]
    pub r#type: String,
    #[garde(custom(no_nul))]
    #[schema(value_type = Object)]
    pub payload: Map<String, Value>,
    #[serde(default)]
    #[garde(custom(no_nul))]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default)]
    #[garde(custom(no_nul))]
    #[schema(value_type = Option<Object>)]
    pub provenance: Option<Map<String, Value>>,
    #[serde(default)]
    #[garde(custom(chars(0, 256)), custom(no_nul))]
    #[schema(max_length = 256)]
    pub session_id: Option<String>,
    /// When it happened (ISO-8601; without an offset, UTC); default now.
    #[serde(default, deserialize_with = "datetime")]
    #[garde(skip)]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub occurred_at: Option<DateTime<Utc>>,
    /// Replays with the same key return the stored episode (an empty key is no key).
    #[serde(default)]
    #[garde(custom(chars(0, MAX_IDEMPOTENCY_KEY)), custom(no_nul))]
    #[schema(max_length = 512)]
    pub idempotency_key: Option<String>,
}

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

/// `POST /v1/episodes/batch`.
#[derive(Debug, Deserialize, ToSchema, garde::Validate)]
pub struct EpisodeBatchRequest {
    #[garde(custom(list_len(1, MAX_BATCH)), dive)]
    #[schema(min_items = 1, max_items = 100)]
    pub episodes: Vec<CreateEpisode>,
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
