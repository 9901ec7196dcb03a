//! `GET /v1/subjects`, `DELETE /v1/subjects/{id}`, `POST /v1/subjects/{id}/erase` (chosen
//! episodes and memories) and `GET /v1/erasures/{id}`.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::db;
use crate::db::subjects::SubjectSummary;
use crate::error::{ApiError, ApiResult, Envelope, FieldError};
use crate::http::body::valid;
use crate::http::extract::{JsonBody, Tenant};
use crate::http::path::subject_id_path;
use crate::http::query::{paged, query};
use crate::http::schema::responses::{AnyErasureCertificate, ErasureCertificate, ItemErasureCertificate};
use crate::http::schema::{CommonErrors, TenantHeader};
use crate::input::rules::list_len;
use crate::receipts::certificate::CertificateCheck;
use crate::services::erase;
use crate::services::erase_items::{self, Items, ItemsErased};
use crate::state::AppState;

/// One page of subjects and how many there are.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubjectPage {
    pub subjects: Vec<SubjectSummary>,
    pub total: i64,
}

/// What erasing a subject removed, and its certificate.
#[derive(Debug, Serialize, ToSchema)]
pub struct Erasure {
    pub subject_id: String,
    pub episodes_deleted: u64,
    pub memories_deleted: u64,
    pub erasure_id: String,
    #[schema(value_type = ErasureCertificate)]
    pub certificate: Value,
}

/// `POST /v1/subjects/{subject_id}/erase`: the episodes and memories of the subject to erase
/// (at least one id in all). An episode takes with it its embeddings and every memory derived
/// from it; a memory its supersession records.
#[derive(Debug, Deserialize, ToSchema, garde::Validate)]
#[serde(deny_unknown_fields)]
pub struct EraseItems {
    /// Episodes to erase (at most 1000).
    #[serde(default)]
    #[schema(max_items = 1000)]
    #[garde(custom(list_len(0, MAX_ITEMS)))]
    pub episode_ids: Vec<Uuid>,
    /// Memories to erase (at most 1000).
    #[serde(default)]
    #[schema(max_items = 1000)]
    #[garde(custom(list_len(0, MAX_ITEMS)))]
    pub memory_ids: Vec<Uuid>,
}

/// Most ids of each kind one item erasure takes.
pub const MAX_ITEMS: usize = 1000;

impl EraseItems {
    /// The ids as the service takes them, or a 422 when there are none.
    pub fn items(self) -> Result<Items, ApiError> {
        if self.episode_ids.is_empty() && self.memory_ids.is_empty() {
            return Err(ApiError::validation(vec![FieldError {
                loc: vec!["body".into()],
                msg: "name at least one episode or memory to erase (episode_ids, memory_ids)".into(),
                kind: "value_error",
            }]));
        }
        Ok(Items { episode_ids: self.episode_ids, memory_ids: self.memory_ids })
    }
}

/// What erasing chosen episodes and memories removed, and its certificate.
#[derive(Debug, Serialize, ToSchema)]
pub struct ItemErasure {
    pub subject_id: String,
    /// Episodes deleted.
    pub episode_ids: Vec<Uuid>,
    /// Memories deleted: those asked for and those derived from the erased episodes.
    pub memory_ids: Vec<Uuid>,
    pub episodes_deleted: u64,
    pub memories_deleted: u64,
    /// Receipts that showed an erased item, tombstoned (content removed, hashes kept).
    pub receipts_tombstoned: u64,
    pub erasure_id: String,
    #[schema(value_type = ItemErasureCertificate)]
    pub certificate: Value,
}

impl ItemErasure {
    /// The wire shape of an item erasure.
    pub fn new(subject_id: String, erased: ItemsErased) -> Self {
        ItemErasure {
            subject_id,
            episodes_deleted: erased.count("episodes"),
            memories_deleted: erased.count("memories"),
            receipts_tombstoned: erased.count("receipts"),
            episode_ids: erased.episode_ids,
            memory_ids: erased.memory_ids,
            erasure_id: erased.erasure_id,
            certificate: erased.certificate,
        }
    }
}

/// The 404 for ids the subject does not have (nothing was erased).
pub fn items_not_found(missing: &erase_items::NotFound) -> ApiError {
    ApiError::detailed(
        StatusCode::NOT_FOUND,
        "http_error",
        missing.message(),
        json!({"episode_ids": missing.episode_ids, "memory_ids": missing.memory_ids}),
    )
}

/// A stored certificate and whether its signature checks out.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErasureRecord {
    pub erasure_id: String,
    #[schema(value_type = AnyErasureCertificate)]
    pub certificate: Value,
    pub signature_check: CertificateCheck,
}

paged! {
    /// `GET /v1/subjects`.
    #[derive(Debug, Deserialize, IntoParams, garde::Validate)]
    #[into_params(parameter_in = Query)]
    pub struct PageParams {
    }
}

/// Lists the tenant's subjects with episode and memory counts.
#[utoipa::path(get, path = "/v1/subjects", tag = "subjects", summary = "Subjects with counts",
    params(TenantHeader, PageParams),
    responses((status = 200, description = "Subjects", body = SubjectPage), CommonErrors))]
pub async fn list(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<SubjectPage>> {
    let q: PageParams = query(raw.as_deref())?;
    let mut conn = db::scope::begin(&st.pool, &tenant).await?;
    let (subjects, total) = db::subjects::list(&mut conn, &tenant, q.limit, q.offset).await?;
    Ok(Json(SubjectPage { subjects, total }))
}

/// Deletes every row of a subject in the tenant; 200 with counts even when nothing existed.
#[utoipa::path(delete, path = "/v1/subjects/{subject_id}", tag = "subjects", summary = "Erase every row of a subject",
    params(TenantHeader, ("subject_id" = String, Path, description = "Identifier.")),
    responses((status = 200, description = "Counts", body = Erasure), CommonErrors))]
pub async fn delete(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path(subject_id): Path<String>,
) -> ApiResult<Json<Erasure>> {
    subject_id_path(&subject_id)?;
    let erased = erase::erase_subject(&st.pool, &st.signing_keys, &st.webhooks, &tenant, &subject_id).await?;
    // This server's copies go now; another server's within about a second (`context::erased`).
    st.subjects.forget(&tenant, &subject_id);
    Ok(Json(Erasure {
        episodes_deleted: erased.count("episodes"),
        memories_deleted: erased.count("memories"),
        subject_id,
        erasure_id: erased.erasure_id,
        certificate: erased.certificate,
    }))
}

/// Erases chosen episodes and memories of a subject (all or none), with a certificate.
#[utoipa::path(post, path = "/v1/subjects/{subject_id}/erase", tag = "subjects",
    summary = "Erase chosen episodes and memories of a subject",
    params(TenantHeader, ("subject_id" = String, Path, description = "Identifier.")), request_body = EraseItems,
    responses((status = 200, description = "What was erased, and the certificate", body = ItemErasure),
              (status = 404, description = "an id is not an episode or memory of the subject; nothing was erased",
               body = Envelope), CommonErrors))]
pub async fn erase_items(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path(subject_id): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<ItemErasure>> {
    subject_id_path(&subject_id)?;
    let items = valid::<EraseItems>(body)?.items()?;
    let erased = erase_items::erase_items(&st.pool, &st.signing_keys, &st.webhooks, &tenant, &subject_id, &items)
        .await?
        .map_err(|missing| items_not_found(&missing))?;
    // This server's copies go now; another server's stop matching at once and go within about
    // a second (`context::erased`).
    st.subjects.forget(&tenant, &subject_id);
    Ok(Json(ItemErasure::new(subject_id, erased)))
}

/// An erasure certificate of the tenant, with its signature check; 404 for unknown ids.
#[utoipa::path(get, path = "/v1/erasures/{erasure_id}", tag = "subjects",
    summary = "An erasure certificate and its signature check",
    params(TenantHeader, ("erasure_id" = String, Path, description = "Identifier.")),
    responses((status = 200, description = "Certificate", body = ErasureRecord),
              (status = 404, description = "erasure not found", body = Envelope), CommonErrors))]
pub async fn erasure(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path(erasure_id): Path<String>,
) -> ApiResult<Json<ErasureRecord>> {
    let found = erase::certificate(&st.pool, &st.signing_keys, &tenant, &erasure_id).await?;
    let (certificate, check) = found.ok_or_else(|| ApiError::not_found("Erasure not found."))?;
    Ok(Json(ErasureRecord { erasure_id, certificate, signature_check: check }))
}
