//! The tenant config patch as `services::tenant_config::parse_patch` reads it (doc-only; see
//! the module docs of `http::schema`).

use std::collections::BTreeMap;

use serde::Deserialize;
use utoipa::ToSchema;

/// When receipts are written.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReceiptsMode {
    Always,
    OnRequest,
    Never,
}

/// How policy decisions apply.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PolicyMode {
    LogOnly,
    Enforce,
}

/// How many current values a claim key may hold.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClaimScope {
    Single,
    Multi,
}

/// One tenant verb frame: a phrase with one value slot, and the claim key it states.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AttributeFrame {
    /// e.g. `"we bill through {name}"`; slots `{value}`, `{name}`, `{place}`, `{role}`,
    /// `{cadence}`, `{diet}`, speakers `{i}` and `{im}`, choices `(a|b)`, optional `(x )?`.
    #[schema(max_length = 500)]
    pub pattern: String,
    /// A known claim key, an `attr.*` key, or `link`.
    pub key: String,
    /// Also read when told in the past ("first day at …").
    pub event: Option<bool>,
}

/// `PATCH /admin/tenants/{tenant_id}/config`: present keys are set, `null` resets one.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantConfigPatch {
    #[schema(inline)]
    pub receipts: Option<ReceiptsMode>,
    #[schema(minimum = 0, maximum = 36500)]
    pub receipt_retention_days: Option<i64>,
    #[schema(inline)]
    pub policy_mode: Option<PolicyMode>,
    pub require_caller_identity: Option<bool>,
    #[schema(min_length = 1, max_length = 64)]
    pub region: Option<String>,
    #[schema(min_length = 1, max_length = 64)]
    pub receipt_signing_key_id: Option<String>,
    #[schema(inline)]
    pub claim_keys: Option<BTreeMap<String, ClaimScope>>,
    /// The tenant's own verb frames for the heuristic compiler (at most 64).
    #[schema(max_items = 64)]
    pub attribute_frames: Option<Vec<AttributeFrame>>,
    #[schema(minimum = 0, maximum = 1000000)]
    pub rate_limit_rpm: Option<i64>,
    pub auto_labeling: Option<bool>,
    /// 409 unless it equals the stored version.
    #[schema(minimum = 0)]
    pub expected_version: Option<i64>,
    /// Pin a region other than this server's.
    pub force_region_pin: Option<bool>,
}
