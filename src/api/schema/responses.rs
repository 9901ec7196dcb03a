//! Response bodies whose bytes are stored canonical JSON (receipts, erasure certificates) and so
//! are not built from a Rust struct (doc-only). The tests below hold each schema to the keys the
//! real builders produce.

use std::collections::BTreeMap;

use serde_json::Value;
use utoipa::ToSchema;

/// A stored receipt body, plus `status` (and `tombstoned_at`) from its row. Tombstones keep the
/// chain fields and drop the rest.
#[derive(ToSchema)]
pub struct Receipt {
    pub receipt_id: String,
    /// `retrieval`, `handoff`, or `tombstone`.
    pub mode: String,
    pub tenant_id: String,
    pub subject_id: String,
    pub task: String,
    #[schema(format = DateTime)]
    pub as_of: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    pub parent_receipt_id: Option<String>,
    pub query_id: Option<String>,
    pub task_id: Option<String>,
    pub caller_id: Option<String>,
    pub caller_type: Option<String>,
    pub session_id: Option<String>,
    #[schema(value_type = Vec<Object>)]
    pub selected_entries: Value,
    #[schema(value_type = Object)]
    pub policy: Value,
    #[schema(value_type = Object)]
    pub policy_snapshot: Value,
    #[schema(value_type = Object)]
    pub output: Value,
    /// `{seq, prev_hash}`: the receipt's link in the tenant's hash chain.
    #[schema(value_type = Object)]
    pub chain: Value,
    pub region: Option<String>,
    pub max_tokens: i64,
    pub embedder_model: String,
    pub ranking_version: String,
    /// HMAC of the canonical body, when the tenant's key signed it.
    pub receipt_signature: Option<String>,
    pub receipt_signature_key_id: Option<String>,
    pub receipt_signature_algorithm: Option<String>,
    /// `active` or `tombstoned`.
    pub status: String,
    #[schema(format = DateTime)]
    pub tombstoned_at: Option<String>,
}

/// A signed statement of what erasing a subject removed; it names the subject only by digest.
#[derive(ToSchema)]
pub struct ErasureCertificate {
    pub certificate_version: String,
    pub erasure_id: String,
    pub tenant_id: String,
    /// sha256 of tenant and subject id.
    pub subject_sha256: String,
    #[schema(format = DateTime)]
    pub erased_at: String,
    /// Rows deleted (receipts: tombstoned) per table.
    pub counts: BTreeMap<String, u64>,
    pub total_rows: u64,
    pub verified_tables: Vec<String>,
    pub rows_remaining: u64,
    pub signature_key_id: Option<String>,
    pub signature_algorithm: Option<String>,
    pub signature: Option<String>,
}

/// A signed statement of what erasing chosen episodes and memories of a subject removed; it
/// names the subject only by digest, the items by id (never their content).
#[derive(ToSchema)]
pub struct ItemErasureCertificate {
    /// `mnemo-erasure-items-v1`.
    pub certificate_version: String,
    pub erasure_id: String,
    pub tenant_id: String,
    /// sha256 of tenant and subject id.
    pub subject_sha256: String,
    #[schema(format = DateTime)]
    pub erased_at: String,
    /// Episodes deleted.
    pub episode_ids: Vec<String>,
    /// Memories deleted (asked for, and derived from the episodes).
    pub memory_ids: Vec<String>,
    /// Rows deleted (receipts: tombstoned) per table.
    pub counts: BTreeMap<String, u64>,
    pub total_rows: u64,
    /// Tables checked for no row naming an erased item.
    pub verified_tables: Vec<String>,
    pub rows_remaining: u64,
    pub signature_key_id: Option<String>,
    pub signature_algorithm: Option<String>,
    pub signature: Option<String>,
}

/// A stored certificate: of a subject's erasure or of an item erasure (`certificate_version`
/// tells them apart).
#[derive(ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum AnyErasureCertificate {
    Subject(ErasureCertificate),
    Items(ItemErasureCertificate),
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use chrono::Utc;
    use serde_json::json;
    use utoipa::PartialSchema;

    use super::*;
    use crate::receipts::certificate::{build, build_items, ErasureFacts, ItemErasureFacts};
    use crate::receipts::signing::SigningKeys;
    use crate::services::receipts::{body_frame, Frame, ReceiptMeta};

    fn properties<T: PartialSchema>() -> BTreeSet<String> {
        let schema = serde_json::to_value(T::schema()).unwrap_or_default();
        schema["properties"].as_object().map(|p| p.keys().cloned().collect()).unwrap_or_default()
    }

    fn keys(v: &Value) -> BTreeSet<String> {
        v.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default()
    }

    #[test]
    fn erasure_certificate_schema_names_exactly_the_built_keys() {
        let counts = BTreeMap::from([("episodes".to_string(), 2)]);
        let facts = ErasureFacts {
            erasure_id: "e1",
            tenant: "t",
            subject_sha256: "abc",
            erased_at: Utc::now(),
            counts: &counts,
            verified_tables: &["episodes".to_string()],
        };
        let cert = build(&facts, &SigningKeys::empty(), None);
        assert_eq!(keys(&cert), properties::<ErasureCertificate>());
    }

    #[test]
    fn item_erasure_certificate_schema_names_exactly_the_built_keys() {
        let counts = BTreeMap::from([("episodes".to_string(), 1)]);
        let facts = ItemErasureFacts {
            erasure_id: "e2",
            tenant: "t",
            subject_sha256: "abc",
            erased_at: Utc::now(),
            episode_ids: &["x".to_string()],
            memory_ids: &[],
            counts: &counts,
            verified_tables: &["episodes".to_string()],
        };
        let cert = build_items(&facts, &SigningKeys::empty(), None);
        assert_eq!(keys(&cert), properties::<ItemErasureCertificate>());
    }

    #[test]
    fn receipt_schema_names_every_body_key() {
        let meta = ReceiptMeta::default();
        let policy = crate::services::policy::PolicyContext::default();
        let body = body_frame(&Frame {
            tenant: "t",
            subject_id: "s",
            task: "task",
            mode: "retrieval",
            as_of: &Utc::now(),
            meta: &meta,
            entries: vec![],
            policy_block: &json!({}),
            policy: &policy,
            output_text: "text",
            token_estimate: 1,
            max_tokens: 10,
            session_id: None,
            embedder_model: "m",
        });
        let (documented, built) = (properties::<Receipt>(), keys(&body));
        let undocumented: Vec<_> = built.difference(&documented).collect();
        assert!(undocumented.is_empty(), "body keys missing from the Receipt schema: {undocumented:?}");
        // Added after the frame: by `emit` (id, time, chain, signature) and by the handler (row status).
        let later: BTreeSet<String> = [
            "receipt_id",
            "created_at",
            "chain",
            "receipt_signature_key_id",
            "receipt_signature_algorithm",
            "status",
            "tombstoned_at",
        ]
        .map(String::from)
        .into();
        let stale: Vec<_> = documented.difference(&built).filter(|k| !later.contains(*k)).collect();
        assert!(stale.is_empty(), "Receipt schema names keys no receipt has: {stale:?}");
    }
}
