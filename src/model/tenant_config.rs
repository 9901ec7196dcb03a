//! A tenant's configuration document as stored and served.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// The stored document of a tenant (version 0 and `{}` when none was ever written); the wire
/// shape of GET and PATCH.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = TenantConfig)]
pub struct ConfigDoc {
    pub tenant_id: String,
    #[schema(value_type = Object)]
    pub config: Value,
    pub version: i64,
    #[schema(format = DateTime)]
    pub created_at: Option<String>,
    #[schema(format = DateTime)]
    pub updated_at: Option<String>,
}
