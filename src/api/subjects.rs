//! Subjects, erasures and item erasure: request and response bodies (REST, MCP, console).

use crate::api::schema::responses::{AnyErasureCertificate, ErasureCertificate, ItemErasureCertificate};
use crate::db::subjects::SubjectSummary;
use crate::error::{ApiError, FieldError};
use crate::input::rules::list_len;
use crate::receipts::certificate::CertificateCheck;
use crate::services::erase_items::{self, Items, ItemsErased};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::ToSchema;
use uuid::Uuid;

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

/// Most ids of each kind one item erasure takes.
pub const MAX_ITEMS: usize = 1000;

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
