//! Key scopes (issue 49): an admin key acts for its own tenant only, through the API and the
//! console; operator keys (stored, or `MNEMO_API_KEY`) reach every tenant.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use mnemo::services::keys::{create, Scope};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::common::{split, TestApp};
use crate::console_http::{client, hidden, set_cookie, sign_in};

const ENV_OPERATOR_KEY: &str = "an-operator-key-of-at-least-32-characters";

async fn send(
    app: &TestApp,
    method: &str,
    key: &str,
    tenant: Option<&str>,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut r = app.client.request(method.parse().unwrap(), app.url(path)).header("X-API-Key", key);
    if let Some(t) = tenant {
        r = r.header("X-Tenant-ID", t);
    }
    if let Some(b) = body {
        r = r.json(&b);
    }
    split(r.send().await.unwrap()).await
}

fn code(r: &(u16, Value)) -> (u16, Value) {
    (r.0, r.1["error"]["code"].clone())
}

fn fixture() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/statewave/small-export.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test]
async fn an_admin_key_acts_for_its_own_tenant_and_only_operators_reach_across() {
    let config = mnemo::RuntimeConfig {
        api_key_sha256: Some(Sha256::digest(ENV_OPERATOR_KEY.as_bytes()).into()),
        ..Default::default()
    };
    let app = crate::common::spawn_with(config).await;
    let admin = create(&app.pool, "mine", Scope::Admin, None).await.unwrap().secret;
    let victim = create(&app.pool, "victim", Scope::Tenant, None).await.unwrap().secret;
    let operator = create(&app.pool, "ops", Scope::Operator, None).await.unwrap();
    assert!(operator.row.is_operator && operator.row.is_admin);
    let operator = operator.secret;
    let ep = |s: &str, t: &str| Some(crate::common::episode(s, t));
    assert_eq!(send(&app, "POST", &victim, None, "/v1/episodes", ep("user:v", "I live in Oslo.")).await.0, 201);
    assert_eq!(send(&app, "POST", &admin, None, "/v1/episodes", ep("user:m", "I live in Bergen.")).await.0, 201);
    let forbidden = |c: &str| (403, json!(c));

    // The finding: an admin key named another tenant in the header and exported its subject.
    let r = send(&app, "GET", &admin, Some("victim"), "/v1/subjects", None).await;
    assert_eq!(code(&r), forbidden("tenant_mismatch"));
    let r = send(&app, "GET", &admin, Some("victim"), "/admin/export/user:v", None).await;
    assert_eq!(code(&r), forbidden("tenant_mismatch"));
    let r = send(&app, "GET", &admin, None, "/admin/export/user:v?tenant_id=victim", None).await;
    assert_eq!(code(&r), forbidden("tenant_mismatch"));
    // Every other way of naming a tenant: path, query, body, and the import document itself.
    for (method, path, body) in [
        ("GET", "/admin/tenants/victim/config", None),
        ("PATCH", "/admin/tenants/victim/config", Some(json!({"receipt_retention_days": 1}))),
        ("GET", "/admin/policy/bundles?tenant_id=victim", None),
        ("GET", "/admin/policy/active?tenant_id=victim", None),
        ("POST", "/admin/policy/activate", Some(json!({"tenant_id": "victim", "bundle_hash": "x"}))),
        ("POST", "/admin/policy/bundles", Some(json!({"tenant_id": "victim", "bundle": "rules: []"}))),
        ("GET", "/admin/memories/with-suggested-labels?tenant_id=victim", None),
        ("POST", "/admin/import", Some(json!({"document": fixture(), "target_tenant_id": "victim"}))),
        // The fixture names tenant "acme" and the request no tenant: still another tenant.
        ("POST", "/admin/import", Some(json!({"document": fixture(), "preserve_ids": false}))),
    ] {
        let r = send(&app, method, &admin, None, path, body).await;
        assert_eq!(code(&r), forbidden("tenant_mismatch"), "{method} {path}: {}", r.1);
    }
    // Endpoints over every tenant at once need an operator.
    for path in ["/admin/tenants", "/admin/webhooks", "/admin/webhooks/stats", "/admin/webhooks/nope"] {
        let r = send(&app, "GET", &admin, None, path, None).await;
        assert_eq!(code(&r), forbidden("operator_required"), "{path}");
    }
    // Nothing reached the other tenants.
    for t in ["victim", "acme"] {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM episodes WHERE tenant_id = $1")
            .bind(t)
            .fetch_one(&app.pool)
            .await
            .unwrap();
        assert_eq!(n, i64::from(t == "victim"), "{t}");
    }
    assert_eq!(app.count("tenant_configs").await, 0);

    // Its own tenant, named or not, works as before.
    assert_eq!(send(&app, "GET", &admin, Some("mine"), "/v1/subjects", None).await.0, 200);
    assert_eq!(send(&app, "GET", &admin, None, "/admin/export/user:m?tenant_id=mine", None).await.0, 200);
    assert_eq!(send(&app, "GET", &admin, None, "/admin/tenants/mine/config", None).await.0, 200);
    let own = json!({"document": fixture(), "target_tenant_id": "mine", "preserve_ids": false});
    let r = send(&app, "POST", &admin, None, "/admin/import", Some(own)).await;
    assert_eq!((r.0, &r.1["tenant_id"]), (200, &json!("mine")), "{}", r.1);

    // Operator keys, stored or configured, reach every tenant.
    for key in [operator.as_str(), ENV_OPERATOR_KEY] {
        let r = send(&app, "GET", key, Some("victim"), "/v1/subjects", None).await;
        assert_eq!((r.0, &r.1["total"]), (200, &json!(1)), "{}", r.1);
        let r = send(&app, "GET", key, None, "/admin/export/user:v?tenant_id=victim", None).await;
        assert_eq!((r.0, &r.1["counts"]["episodes"]), (200, &json!(1)), "{}", r.1);
        assert_eq!(send(&app, "GET", key, None, "/admin/tenants", None).await.0, 200);
        assert_eq!(send(&app, "GET", key, None, "/admin/webhooks", None).await.0, 200);
    }
}

#[tokio::test]
async fn an_admin_keys_console_session_sees_its_tenant_only_and_says_what_keys_may_do() {
    let app = crate::common::spawn().await;
    let admin = create(&app.pool, "mine", Scope::Admin, None).await.unwrap().secret;
    let operator = create(&app.pool, "ops", Scope::Operator, None).await.unwrap().secret;
    create(&app.pool, "victim", Scope::Tenant, None).await.unwrap();
    let c = client();
    let (cookie, _) = set_cookie(&sign_in(&app, &c, &admin, &[]).await, "mnemo_console").unwrap();
    let cookie = format!("mnemo_console={cookie}");
    let get = |path: &str| c.get(app.url(path)).header("cookie", &cookie).send();

    let r = get("/admin/ui/tenants").await.unwrap();
    assert_eq!(r.status(), 200);
    let page = r.text().await.unwrap();
    assert!(page.contains("/admin/ui/t/mine/") && !page.contains("victim") && !page.contains("/admin/ui/webhooks"));
    for path in ["/admin/ui/t/victim/subjects", "/admin/ui/t/victim/keys", "/admin/ui/webhooks"] {
        let r = get(path).await.unwrap();
        assert_eq!(r.status(), 403, "{path}");
    }
    // The keys page says what each scope may do and offers no operator scope to an admin key.
    let page = get("/admin/ui/t/mine/keys").await.unwrap().text().await.unwrap();
    assert!(page.contains("What each key may do") && page.contains("for this tenant only"), "{page}");
    assert!(!page.contains("value=\"operator\""));
    let token = hidden(&page, "csrf");
    let form = [("csrf", token.as_str()), ("scope", "operator")];
    let r = c.post(app.url("/admin/ui/t/mine/keys")).header("cookie", &cookie).form(&form).send().await.unwrap();
    assert_eq!(r.status(), 403);
    let form = [("csrf", token.as_str()), ("scope", "admin")];
    let r = c.post(app.url("/admin/ui/t/mine/keys")).header("cookie", &cookie).form(&form).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let operators: i64 =
        sqlx::query_scalar("SELECT count(*) FROM api_keys WHERE is_operator").fetch_one(&app.pool).await.unwrap();
    assert_eq!(operators, 1, "only the operator key made by the test");
    assert_eq!(app.count("api_keys").await, 4);

    // An operator key's session opens every tenant and may mint operator keys.
    let (cookie, _) = set_cookie(&sign_in(&app, &c, &operator, &[]).await, "mnemo_console").unwrap();
    let cookie = format!("mnemo_console={cookie}");
    for path in ["/admin/ui/t/victim/subjects", "/admin/ui/webhooks"] {
        let r = c.get(app.url(path)).header("cookie", &cookie).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
    }
    let page = c.get(app.url("/admin/ui/t/victim/keys")).header("cookie", &cookie).send().await.unwrap();
    let page = page.text().await.unwrap();
    assert!(page.contains("value=\"operator\""));
    let form = [("csrf", hidden(&page, "csrf")), ("scope", "operator".to_string())];
    let r = c.post(app.url("/admin/ui/t/victim/keys")).header("cookie", &cookie).form(&form).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let page = r.text().await.unwrap();
    assert!(page.contains(">operator<"), "the list names the scope");
}

#[tokio::test]
async fn the_cli_creates_operator_keys() {
    let app = crate::common::spawn().await;
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(["keys", "create", "--tenant", "ops", "--operator"])
        .env("MNEMO_DATABASE_URL", app.database_url())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let created: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((&created["admin"], &created["operator"]), (&json!(true), &json!(true)));
    let key = created["key"].as_str().unwrap();
    assert_eq!(send(&app, "GET", key, Some("elsewhere"), "/admin/tenants", None).await.0, 200);
}
