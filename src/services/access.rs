//! Per-request access decisions after authentication: residency and rate limits.

use serde_json::Value;
use sqlx::PgPool;

use crate::db;

/// Server-wide access settings.
#[derive(Debug, Clone, Default)]
pub struct AccessPolicy {
    /// `MNEMO_REGION`: tenants pinned to another region are refused.
    pub region: Option<String>,
    /// `MNEMO_RATE_LIMIT_RPM`: requests per minute per key and per tenant (0 = off).
    pub rate_limit_rpm: u32,
}

impl AccessPolicy {
    /// Whether any per-request check needs the database.
    pub fn active(&self) -> bool {
        self.region.is_some() || self.rate_limit_rpm > 0
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// The tenant is pinned to another region (the message names only the tenant's region).
    Residency { message: String },
    /// A bucket is empty.
    RateLimited { rpm: u32, retry_after_secs: u64 },
}

/// The residency message: names the tenant and its region, never this server's.
pub fn residency_message(tenant: &str, pinned: &Value) -> String {
    let region = match pinned {
        Value::String(s) => format!("'{s}'"),
        other => other.to_string(),
    };
    format!(
        "tenant '{tenant}' is pinned to region {region}; this request did not reach the right region. \
         Retry against the regional endpoint."
    )
}

/// The rate for a tenant: its config's `rate_limit_rpm` when set, else the server default.
pub fn tenant_rpm(config: &Value, default_rpm: u32) -> u32 {
    config
        .get("rate_limit_rpm")
        .and_then(Value::as_u64)
        .map(|v| u32::try_from(v).unwrap_or(u32::MAX))
        .unwrap_or(default_rpm)
}

/// Seconds until a bucket with `tokens` holds one whole token again (at least 1).
pub fn retry_after(tokens: f64, per_sec: f64) -> u64 {
    if per_sec <= 0.0 {
        return 60;
    }
    ((1.0 - tokens) / per_sec).ceil().max(1.0) as u64
}

/// Checks residency and takes rate-limit tokens for the tenant (and the key, if any).
///
/// A database error fails open with a warning: losing the limiter must not take the API down.
pub async fn check(pool: &PgPool, policy: &AccessPolicy, tenant: &str, key_id: Option<&str>) -> Result<(), Refusal> {
    match check_inner(pool, policy, tenant, key_id).await {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(error = %e, "access check failed; allowing the request");
            Ok(())
        }
    }
}

async fn check_inner(
    pool: &PgPool,
    policy: &AccessPolicy,
    tenant: &str,
    key_id: Option<&str>,
) -> sqlx::Result<Result<(), Refusal>> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    let config = db::tenants::config(&mut tx, tenant).await?;
    if policy.region.is_some() {
        if let Some(pinned) = config.get("region").filter(|v| !v.is_null()) {
            if pinned.as_str() != policy.region.as_deref() {
                return Ok(Err(Refusal::Residency { message: residency_message(tenant, pinned) }));
            }
        }
    }
    if policy.rate_limit_rpm == 0 {
        return Ok(Ok(()));
    }
    let rpm = tenant_rpm(&config, policy.rate_limit_rpm);
    if rpm == 0 {
        return Ok(Ok(()));
    }
    let capacity = f64::from(rpm);
    let per_sec = capacity / 60.0;
    let key_bucket = key_id.map(|k| format!("key:{k}"));
    for bucket in key_bucket.as_deref().into_iter().chain(["tenant"]) {
        let (tokens, allowed) = db::rate_limits::take(&mut tx, tenant, bucket, capacity, per_sec).await?;
        if !allowed {
            tx.commit().await?;
            return Ok(Err(Refusal::RateLimited { rpm, retry_after_secs: retry_after(tokens, per_sec) }));
        }
    }
    tx.commit().await?;
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn residency_message_names_only_the_tenant_region() {
        let m = residency_message("acme", &json!("eu"));
        assert_eq!(
            m,
            "tenant 'acme' is pinned to region 'eu'; this request did not reach the right region. \
             Retry against the regional endpoint."
        );
        assert!(residency_message("acme", &json!(7)).contains("region 7;"));
    }

    #[test]
    fn tenant_rate_overrides_the_default() {
        assert_eq!(tenant_rpm(&json!({}), 60), 60);
        assert_eq!(tenant_rpm(&json!({"rate_limit_rpm": 5}), 60), 5);
        assert_eq!(tenant_rpm(&json!({"rate_limit_rpm": 0}), 60), 0);
        assert_eq!(tenant_rpm(&json!({"rate_limit_rpm": "x"}), 60), 60);
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        assert_eq!(retry_after(0.0, 1.0), 1);
        assert_eq!(retry_after(-0.5, 0.5), 3);
        assert_eq!(retry_after(0.99, 100.0), 1);
        assert_eq!(retry_after(0.0, 1.0 / 60.0), 60);
    }
}
