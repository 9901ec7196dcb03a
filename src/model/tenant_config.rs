//! A tenant's configuration document as stored and served.

use serde_json::{json, Value};

/// The stored document of a tenant (version 0 and `{}` when none was ever written).
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigDoc {
    pub tenant_id: String,
    pub config: Value,
    pub version: i64,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
}

impl ConfigDoc {
    /// The wire shape of GET and PATCH.
    pub fn to_json(&self) -> Value {
        json!({"tenant_id": self.tenant_id, "config": self.config, "version": self.version,
               "created_at": self.created_at, "updated_at": self.updated_at})
    }
}
