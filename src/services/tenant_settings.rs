//! The tenant's config and active policy bundle as context calls use them, kept in memory per
//! tenant and checked on every call against the tenant's settings version.
//!
//! The version (`tenant_versions`) is written by triggers in the same
//! transaction as any change of the config, the policy bundles or the active bundle, and read
//! by the context call's one statement (`mnemo_context`, [`crate::db::context::candidates`])
//! right after it names the tenant. A cached entry is used only when its version equals the one
//! just read, so a change committed through any process sharing the database is seen by the
//! next call of every process. A miss loads the settings in a transaction of their own
//! ([`SettingsCache::current`], whose first statement reads the version again).
//!
//! An entry is tagged with the version read *before* its config and policy were loaded (each
//! statement of a READ COMMITTED transaction has its own snapshot). What was loaded is then at
//! least as new as the tag: a change committed in between carries a higher version, which the
//! next call reads, so it reloads. An entry can be reloaded once too often, never used stale.

use std::sync::Arc;

use quick_cache::sync::Cache;

use serde_json::Value;
use sqlx::PgConnection;

use crate::db;
use crate::services::policy::{self, ActivePolicy};

/// Tenants kept at most; a full cache is emptied and refills on the next calls.
const CACHE_CAP: usize = 4096;

/// One tenant's settings at a version.
#[derive(Debug, Clone)]
pub struct TenantSettings {
    /// The settings version they were loaded at (see the module doc for why it may lag).
    pub version: i64,
    /// The config document (`{}` when none).
    pub config: Value,
    /// The active policy bundle, parsed.
    pub policy: Option<Arc<ActivePolicy>>,
}

/// Settings by tenant (bounded; the least useful entries go first, S3-FIFO).
pub struct SettingsCache(Cache<String, Arc<TenantSettings>>);

impl Default for SettingsCache {
    fn default() -> Self {
        SettingsCache(Cache::new(CACHE_CAP))
    }
}

impl SettingsCache {
    /// The cached settings of `tenant` if they were loaded at exactly `version`.
    pub fn get(&self, tenant: &str, version: i64) -> Option<Arc<TenantSettings>> {
        self.0.get(tenant).filter(|s| s.version == version)
    }

    /// Caches `settings` for `tenant` unless an entry of a later version is there already (a
    /// slower call that read an older version must not replace it; versions only grow).
    pub fn put(&self, tenant: &str, settings: Arc<TenantSettings>) {
        // Not atomic with the insert: a racing older version may still land, and then costs the
        // next call one reload (a stale entry is never served: `get` checks the exact version).
        if self.0.get(tenant).is_some_and(|s| s.version >= settings.version) {
            return;
        }
        self.0.insert(tenant.to_string(), settings);
    }

    /// The tenant's settings as they are now: the cached entry when its version is current, else
    /// loaded and cached (one tenant transaction that reads the version first).
    pub async fn current(&self, pool: &sqlx::PgPool, tenant: &str) -> sqlx::Result<Arc<TenantSettings>> {
        let (mut tx, version) = db::scope::begin_versioned(pool, tenant).await?;
        self.resolve(&mut tx, tenant, version).await
    }

    /// The tenant's settings at `version` (just read in `conn`'s transaction): the cached entry
    /// when it has that version, else loaded in the same transaction and cached.
    async fn resolve(&self, conn: &mut PgConnection, tenant: &str, version: i64) -> sqlx::Result<Arc<TenantSettings>> {
        if let Some(s) = self.get(tenant, version) {
            return Ok(s);
        }
        let config = db::tenants::config(&mut *conn, tenant).await?;
        let active = policy::active(conn, tenant).await?.map(Arc::new);
        let settings = Arc::new(TenantSettings { version, config, policy: active });
        self.put(tenant, settings.clone());
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(version: i64, config: Value) -> Arc<TenantSettings> {
        Arc::new(TenantSettings { version, config, policy: None })
    }

    #[test]
    fn an_entry_answers_only_its_own_version() {
        let c = SettingsCache::default();
        assert!(c.get("acme", 0).is_none());
        c.put("acme", at(0, json!({})));
        assert_eq!(c.get("acme", 0).map(|s| s.config.clone()), Some(json!({})));
        // The database moved on (a change anywhere): the entry no longer answers.
        assert!(c.get("acme", 7).is_none());
        // Nor does it answer for another tenant.
        assert!(c.get("globex", 0).is_none());
    }

    #[test]
    fn a_newer_version_replaces_an_older_one_and_not_the_reverse() {
        let c = SettingsCache::default();
        c.put("acme", at(3, json!({"receipts": "never"})));
        c.put("acme", at(9, json!({"receipts": "always"})));
        assert_eq!(c.get("acme", 9).unwrap().config, json!({"receipts": "always"}));
        // A slower call that read version 5 loads after the one that read 9: 9 stays.
        c.put("acme", at(5, json!({"receipts": "never"})));
        assert!(c.get("acme", 5).is_none());
        assert_eq!(c.get("acme", 9).unwrap().config, json!({"receipts": "always"}));
        // The same version again keeps the first entry (either is as good).
        c.put("acme", at(9, json!({"other": true})));
        assert_eq!(c.get("acme", 9).unwrap().config, json!({"receipts": "always"}));
    }

    #[test]
    fn tenants_are_kept_apart_and_the_cache_is_bounded() {
        let c = SettingsCache::default();
        c.put("acme", at(1, json!({"a": 1})));
        c.put("globex", at(2, json!({"g": 2})));
        assert_eq!(c.get("acme", 1).unwrap().config, json!({"a": 1}));
        assert_eq!(c.get("globex", 2).unwrap().config, json!({"g": 2}));
        for i in 0..CACHE_CAP + 10 {
            c.put(&format!("t{i}"), at(1, json!({})));
        }
        let len = c.0.len();
        assert!(len <= CACHE_CAP, "{len}");
    }

    #[test]
    fn a_tenant_in_use_survives_a_burst_of_others() {
        let c = SettingsCache::default();
        c.put("hot", at(1, json!({})));
        for i in 0..3 * CACHE_CAP {
            c.put(&format!("once{i}"), at(1, json!({})));
            if i % 64 == 0 {
                assert!(c.get("hot", 1).is_some(), "evicted after {i} others");
            }
        }
    }
}
