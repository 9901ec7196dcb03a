//! Doc-only OpenAPI types: the shapes of responses whose bytes are built elsewhere (signed or
//! canonical JSON), checked against real output by the unit tests in `responses`; the tenant
//! header and the common errors.
//!
//! Nothing here is (de)serialized on the request path: request bodies and query strings are
//! the serde types beside their handlers (the tenant config patch is
//! `services::tenant_config::TenantConfigPatch`, which the console shares).

pub mod responses;

use utoipa::{IntoParams, IntoResponses};

use crate::error::Envelope;

/// The tenant header, accepted by every tenant-scoped route.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
pub struct TenantHeader {
    /// Tenant; absent means the tenant `default`.
    #[param(rename = "X-Tenant-ID", required = false)]
    pub tenant: String,
}

/// The errors any authenticated route with input can answer.
#[derive(IntoResponses)]
pub enum CommonErrors {
    #[response(status = 401, description = "Missing API key")]
    MissingKey(Envelope),
    #[response(status = 403, description = "Invalid API key")]
    InvalidKey(Envelope),
    #[response(status = 422, description = "Invalid input")]
    Invalid(Envelope),
}
