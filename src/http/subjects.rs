//! `GET /v1/subjects`, `DELETE /v1/subjects/{id}`, `POST /v1/subjects/{id}/erase` (chosen
//! episodes and memories) and `GET /v1/erasures/{id}`.

use axum::extract::{Path, RawQuery, State};
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::api::extract::{JsonBody, Tenant};
use crate::api::query::{paged, query};
use crate::api::schema::{CommonErrors, TenantHeader};
use crate::api::subjects::{items_not_found, EraseItems, Erasure, ErasureRecord, ItemErasure, SubjectPage};
use crate::db;
use crate::error::{ApiError, ApiResult, Envelope};
use crate::http::body::valid;
use crate::http::path::subject_id_path;
use crate::services::erase;
use crate::services::erase_items::{self};
use crate::state::AppState;

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
