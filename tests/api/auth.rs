//! Per-tenant API keys, admin scope, rate limits shared by replicas, residency, CORS and
//! security headers.
#![allow(clippy::unwrap_used)]

use crate::common::{spawn, spawn_replica, spawn_with, TestApp};
use mnemo::services::access::AccessPolicy;
use mnemo::RuntimeConfig;
use serde_json::{json, Value};

async fn call(app: &TestApp, key: Option<&str>, tenant: Option<&str>, path: &str) -> (u16, Value) {
    let mut r = app.client.get(app.url(path));
    if let Some(k) = key {
        r = r.header("X-API-Key", k);
    }
    if let Some(t) = tenant {
        r = r.header("X-Tenant-ID", t);
    }
    crate::common::split(r.send().await.unwrap()).await
}

async fn ingest(app: &TestApp, key: &str, subject: &str, text: &str) -> (u16, Value) {
    let r =
        app.client.post(app.url("/v1/episodes")).header("X-API-Key", key).json(&crate::common::episode(subject, text));
    crate::common::split(r.send().await.unwrap()).await
}

#[tokio::test]
async fn tenant_keys_bind_their_tenant_and_operator_keys_may_choose() {
    let app = spawn().await;
    let alpha = mnemo::services::keys::create(&app.pool, "alpha", mnemo::services::keys::Scope::Tenant, Some("ci"))
        .await
        .unwrap();
    let admin =
        mnemo::services::keys::create(&app.pool, "ops", mnemo::services::keys::Scope::Operator, None).await.unwrap();
    // Stored keys exist, so a keyless request is refused; a wrong key is 403.
    assert_eq!(call(&app, None, None, "/v1/subjects").await.0, 401);
    let (s, b) = call(&app, Some("mnemo_nope_nope"), None, "/v1/subjects").await;
    assert_eq!((s, b["error"]["code"].clone()), (403, json!("invalid_api_key")));
    // A tenant key acts for its tenant without a header, and refuses another tenant.
    assert_eq!(ingest(&app, &alpha.secret, "user:1", "I live in Bergen.").await.0, 201);
    let (s, b) = call(&app, Some(&alpha.secret), None, "/v1/subjects").await;
    assert_eq!((s, b["total"].clone()), (200, json!(1)));
    assert_eq!(call(&app, Some(&alpha.secret), Some("alpha"), "/v1/subjects").await.0, 200);
    let (s, b) = call(&app, Some(&alpha.secret), Some("beta"), "/v1/subjects").await;
    assert_eq!((s, b["error"]["code"].clone()), (403, json!("tenant_mismatch")));
    // The key's episode landed in alpha, not in default.
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM episodes WHERE tenant_id = 'alpha'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n, 1);
    // An operator key may act on any tenant; a tenant key may not reach /admin.
    let (s, b) = call(&app, Some(&admin.secret), Some("alpha"), "/v1/subjects").await;
    assert_eq!((s, b["total"].clone()), (200, json!(1)));
    let (s, b) = call(&app, Some(&alpha.secret), None, "/admin/tenants").await;
    assert_eq!((s, b["error"]["code"].clone()), (403, json!("admin_required")));
    // Revocation takes effect on the next request.
    assert!(mnemo::services::keys::revoke(&app.pool, "alpha", &alpha.row.key_id).await.unwrap());
    assert_eq!(call(&app, Some(&alpha.secret), None, "/v1/subjects").await.0, 403);
    // Probes stay public.
    assert_eq!(call(&app, None, None, "/healthz").await.0, 200);
    // Only digests are stored.
    let stored: Vec<Vec<u8>> =
        sqlx::query_scalar("SELECT key_sha256 FROM api_keys").fetch_all(&app.pool).await.unwrap();
    assert!(stored.iter().all(|d| d.len() == 32));
}

#[tokio::test]
async fn cli_creates_lists_and_revokes_keys() {
    let app = spawn().await;
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
            .args(args)
            .env("MNEMO_DATABASE_URL", app.database_url())
            .output()
            .unwrap()
    };
    let ok = |out: &std::process::Output| {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    let out = run(&["keys", "create", "--tenant", "acme", "--label", "agent-1"]);
    ok(&out);
    let created: Value = serde_json::from_slice(&out.stdout).unwrap();
    let key = created["key"].as_str().unwrap();
    assert_eq!(ingest(&app, key, "s", "I use Rust.").await.0, 201);
    let listed = run(&["keys", "list", "--tenant", "acme"]);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed[0]["label"], "agent-1");
    assert!(!String::from_utf8_lossy(&serde_json::to_vec(&listed).unwrap()).contains(key));
    let id = created["key_id"].as_str().unwrap();
    ok(&run(&["keys", "revoke", id, "--tenant", "acme"]));
    assert_eq!(ingest(&app, key, "s", "I use Rust.").await.0, 403);
    assert!(!run(&["keys", "revoke", id, "--tenant", "acme"]).status.success(), "revoking twice fails");
}

fn limited(rpm: u32) -> RuntimeConfig {
    RuntimeConfig { access: AccessPolicy { region: None, rate_limit_rpm: rpm }, ..RuntimeConfig::default() }
}

#[tokio::test]
async fn rate_limits_are_shared_by_replicas_per_key_and_per_tenant() {
    let a = spawn_with(limited(6)).await;
    let b = spawn_replica(&a, limited(6)).await;
    let key = mnemo::services::keys::create(&a.pool, "acme", mnemo::services::keys::Scope::Tenant, None)
        .await
        .unwrap()
        .secret;
    let mut ok = 0;
    let mut limited_resp = None;
    for i in 0..12 {
        let app = if i % 2 == 0 { &a } else { &b };
        let (s, body) = call(app, Some(&key), None, "/v1/subjects").await;
        match s {
            200 => ok += 1,
            429 => limited_resp = Some(body),
            other => panic!("unexpected {other}: {body}"),
        }
    }
    // Six tokens in the shared bucket: the two replicas together allow six.
    assert_eq!(ok, 6);
    let body = limited_resp.unwrap();
    assert_eq!(body["error"]["code"], "rate_limited");
    assert_eq!(body["error"]["message"], "Rate limit exceeded. Max 6 requests per minute.");
    let r = a.client.get(a.url("/v1/subjects")).header("X-API-Key", &key).send().await.unwrap();
    assert_eq!(r.status(), 429);
    let retry: u64 = r.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    // Probes are exempt; another tenant has its own bucket.
    for _ in 0..10 {
        assert_eq!(call(&a, None, None, "/healthz").await.0, 200);
    }
    let other = mnemo::services::keys::create(&a.pool, "globex", mnemo::services::keys::Scope::Tenant, None)
        .await
        .unwrap()
        .secret;
    assert_eq!(call(&b, Some(&other), None, "/v1/subjects").await.0, 200);
    // The tenant config can override the server default.
    sqlx::query(
        "INSERT INTO tenant_configs (tenant_id, config, version) VALUES ('globex', '{\"rate_limit_rpm\": 1}', 1)",
    )
    .execute(&a.pool)
    .await
    .unwrap();
    let statuses: Vec<u16> = futures_statuses(&b, &other, 3).await;
    assert!(statuses.contains(&429), "{statuses:?}");
}

async fn futures_statuses(app: &TestApp, key: &str, n: usize) -> Vec<u16> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(call(app, Some(key), None, "/v1/subjects").await.0);
    }
    out
}

#[tokio::test]
async fn tenants_pinned_to_another_region_are_refused() {
    let config =
        RuntimeConfig { access: AccessPolicy { region: Some("eu".into()), rate_limit_rpm: 0 }, ..Default::default() };
    let app = spawn_with(config).await;
    for (tenant, region) in [("acme", "us"), ("fjord", "eu")] {
        sqlx::query("INSERT INTO tenant_configs (tenant_id, config, version) VALUES ($1, jsonb_build_object('region', $2::text), 1)")
            .bind(tenant)
            .bind(region)
            .execute(&app.pool)
            .await
            .unwrap();
    }
    let (s, b) = call(&app, None, Some("acme"), "/v1/subjects").await;
    assert_eq!(s, 403);
    assert_eq!(b["error"]["code"], "residency.mismatch");
    assert_eq!(
        b["error"]["message"],
        "tenant 'acme' is pinned to region 'us'; this request did not reach the right region. \
         Retry against the regional endpoint."
    );
    assert_eq!(call(&app, None, Some("fjord"), "/v1/subjects").await.0, 200);
    assert_eq!(call(&app, None, Some("unpinned"), "/v1/subjects").await.0, 200);
    assert_eq!(call(&app, None, Some("acme"), "/healthz").await.0, 200);
}

#[tokio::test]
async fn security_headers_always_and_cors_only_when_configured() {
    let app = spawn().await;
    let r = app.client.get(app.url("/v1/subjects")).header("Origin", "https://evil.example").send().await.unwrap();
    for h in ["x-content-type-options", "x-frame-options", "referrer-policy", "content-security-policy"] {
        assert!(r.headers().contains_key(h), "{h}");
    }
    assert_eq!(r.headers()["cache-control"], "no-store");
    assert!(!r.headers().contains_key("access-control-allow-origin"));
    let config = RuntimeConfig { cors_origins: vec!["https://app.example".into()], ..Default::default() };
    let app = spawn_with(config).await;
    let pre = app
        .client
        .request(reqwest::Method::OPTIONS, app.url("/v1/context"))
        .header("Origin", "https://app.example")
        .header("Access-Control-Request-Method", "POST")
        .header("Access-Control-Request-Headers", "x-api-key,content-type")
        .send()
        .await
        .unwrap();
    assert!(pre.status().is_success(), "{}", pre.status());
    assert_eq!(pre.headers()["access-control-allow-origin"], "https://app.example");
    let other = app.client.get(app.url("/v1/subjects")).header("Origin", "https://evil.example").send().await.unwrap();
    assert!(!other.headers().contains_key("access-control-allow-origin"));
}

#[tokio::test]
async fn tenant_config_is_versioned_validated_and_region_checked() {
    let config =
        RuntimeConfig { access: AccessPolicy { region: Some("eu".into()), rate_limit_rpm: 0 }, ..Default::default() };
    let app = spawn_with(config).await;
    let (s, doc) = app.get("/admin/tenants/acme/config").await;
    assert_eq!((s, doc["version"].clone(), doc["config"].clone()), (200, json!(0), json!({})));
    let patch = |body: Value| {
        let app = &app;
        async move {
            let r = app.client.patch(app.url("/admin/tenants/acme/config")).json(&body).send().await.unwrap();
            crate::common::split(r).await
        }
    };
    let (s, doc) =
        patch(json!({"expected_version": 0, "receipts": "always", "claim_keys": {"billing.plan": "single"}})).await;
    assert_eq!(s, 200, "{doc}");
    assert_eq!(doc["version"], 1);
    let (s, doc) = patch(json!({"policy_mode": "enforce"})).await;
    assert_eq!((s, doc["version"].clone()), (200, json!(2)));
    assert_eq!(
        doc["config"],
        json!({"receipts": "always", "claim_keys": {"billing.plan": "single"}, "policy_mode": "enforce"})
    );
    let (s, b) = patch(json!({"expected_version": 1, "receipts": "never"})).await;
    assert_eq!((s, b["error"]["code"].clone()), (409, json!("version_conflict")));
    let (s, b) = patch(json!({"colour": "blue"})).await;
    assert_eq!((s, b["error"]["code"].clone()), (422, json!("validation_error")));
    let (s, _) = patch(json!({"claim_keys": {"name": "single"}})).await;
    assert_eq!(s, 422, "built-in claim keys cannot be redefined");
    let (s, b) = patch(json!({"region": "us"})).await;
    assert_eq!((s, b["error"]["code"].clone()), (422, json!("residency.invalid_pin")));
    // Nothing of the refused patches was written.
    let (_, doc) = app.get("/admin/tenants/acme/config").await;
    assert_eq!(doc["version"], 2);
    let (s, _) = patch(json!({"region": "us", "force_region_pin": true})).await;
    assert_eq!(s, 200);
    assert_eq!(call(&app, None, Some("acme"), "/v1/subjects").await.0, 403);
    // The compile registry honours the tenant's claim keys; the listing names the tenant.
    let (_, list) = app.get("/admin/tenants").await;
    assert!(list["tenants"].as_array().unwrap().iter().any(|t| t["tenant_id"] == "acme"), "{list}");
}

/// A client whose connections come from `ip` (any 127.0.0.0/8 address reaches the server).
fn client_from(ip: &str) -> reqwest::Client {
    reqwest::Client::builder().local_address(ip.parse::<std::net::IpAddr>().unwrap()).build().unwrap()
}

async fn status_with(app: &TestApp, c: &reqwest::Client, key: &str) -> reqwest::Response {
    c.get(app.url("/v1/subjects")).header("X-API-Key", key).send().await.unwrap()
}

#[tokio::test]
async fn failed_key_attempts_are_throttled_per_address_and_per_key_prefix() {
    let app = spawn_with(RuntimeConfig { auth_failures_per_minute: 3, ..RuntimeConfig::default() }).await;
    let key =
        mnemo::services::keys::create(&app.pool, "acme", mnemo::services::keys::Scope::Tenant, None).await.unwrap();
    // One address guessing: three failures, then 429 with Retry-After, even for the right key.
    let guesser = client_from("127.0.0.2");
    for i in 0..3 {
        assert_eq!(status_with(&app, &guesser, &format!("guess-{i}")).await.status(), 403);
    }
    let r = status_with(&app, &guesser, &key.secret).await;
    assert_eq!(r.status(), 429);
    let retry: u64 = r.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    let (_, b) = crate::common::split(r).await;
    assert_eq!(b["error"]["code"], "too_many_failed_attempts");
    // Another address is not affected.
    assert_eq!(status_with(&app, &client_from("127.0.0.3"), &key.secret).await.status(), 200);
    // One key id guessed from several addresses: its prefix is blocked wherever from.
    let id_prefix = format!("mnemo_{}_", key.row.key_id);
    for (i, ip) in ["127.0.0.4", "127.0.0.5", "127.0.0.6"].iter().enumerate() {
        let r = status_with(&app, &client_from(ip), &format!("{id_prefix}wrong{i}")).await;
        assert_eq!(r.status(), 403);
    }
    assert_eq!(status_with(&app, &client_from("127.0.0.7"), &format!("{id_prefix}wrong9")).await.status(), 429);
    // Requests without a key are not attempts.
    let r = client_from("127.0.0.2").get(app.url("/v1/subjects")).send().await.unwrap();
    assert_eq!(r.status(), 401);
}

#[tokio::test]
async fn a_short_operator_key_stops_the_server_at_start() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(["serve"])
        .env("MNEMO_API_KEY", "change-me")
        .env("MNEMO_EMBEDDER", "hash")
        .env("MNEMO_DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("MNEMO_API_KEY is 9 characters long; it must have at least 32"), "{err}");
    assert!(!err.contains("change-me"), "the key is never printed");
}
