//! Open mode (no key configured) and how it ends: a database that has ever held a key never
//! reopens, whatever happens to its keys (issue 49).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use crate::common::{spawn, spawn_bound, spawn_replica, TestApp};
use crate::console_http::{client, login_form, non_loopback_ip, set_cookie};

/// Longer than the server's memory of "no key was ever stored" (2 s).
const PAST_KEYS_TTL: Duration = Duration::from_millis(2100);

async fn status(app: &TestApp, base: &str, path: &str) -> u16 {
    app.client.get(format!("{base}{path}")).send().await.unwrap().status().as_u16()
}

/// An open-mode console session, entered from loopback through the sign-in form.
async fn open_console_cookie(app: &TestApp) -> String {
    let c = client();
    let (nonce, token) = login_form(app, &c).await;
    let r = c
        .post(app.url("/admin/ui/login"))
        .header("cookie", format!("mnemo_console_login={nonce}"))
        .form(&[("csrf", token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    format!("mnemo_console={}", set_cookie(&r, "mnemo_console").unwrap().0)
}

async fn console_status(app: &TestApp, cookie: &str) -> u16 {
    let r = client().get(app.url("/admin/ui/tenants")).header("cookie", cookie).send().await.unwrap();
    r.status().as_u16()
}

#[tokio::test]
async fn revoking_the_last_key_never_reopens_the_server() {
    let app = spawn().await;
    let base = app.base.clone();
    // Open: no key configured or stored, every request is an admin (local development).
    assert_eq!(status(&app, &base, "/admin/tenants").await, 200);
    let open_cookie = open_console_cookie(&app).await;
    assert_eq!(console_status(&app, &open_cookie).await, 200);

    let key =
        mnemo::services::keys::create(&app.pool, "acme", mnemo::services::keys::Scope::Admin, None).await.unwrap();
    tokio::time::sleep(PAST_KEYS_TTL).await;
    assert_eq!(status(&app, &base, "/admin/tenants").await, 401);
    assert_eq!(console_status(&app, &open_cookie).await, 303, "the open session ended with the first key");

    // The finding: revoking the only stored key reopened everything within ~2 s.
    assert!(mnemo::services::keys::revoke(&app.pool, "acme", &key.row.key_id).await.unwrap());
    tokio::time::sleep(PAST_KEYS_TTL).await;
    for path in ["/admin/tenants", "/v1/subjects", "/admin/export/user:1"] {
        assert_eq!(status(&app, &base, path).await, 401, "{path}");
    }
    assert_eq!(console_status(&app, &open_cookie).await, 303, "the open-mode cookie stays void");
    let r = app.client.post(app.url("/mcp")).json(&serde_json::json!({})).send().await.unwrap();
    assert_eq!(r.status(), 401, "MCP too");
    // A server started afterwards on the same database reads the same rule from it.
    let later = spawn_replica(&app, Default::default()).await;
    assert_eq!(status(&later, &later.base, "/admin/tenants").await, 401);
    assert_eq!(console_status(&later, &open_cookie).await, 303);
    // The revoked key itself stays refused, and the table kept its row.
    let r = app.client.get(app.url("/v1/subjects")).header("X-API-Key", &key.secret).send().await.unwrap();
    assert_eq!(r.status(), 403);
    assert_eq!(app.count("api_keys").await, 1);
}

#[tokio::test]
async fn a_server_on_every_address_stays_closed_when_its_keys_are_revoked() {
    // Started on 0.0.0.0 with a stored key (so `mnemo serve` allowed it without MNEMO_ALLOW_OPEN).
    let db = Arc::new(crate::common::fresh_database().await);
    let embedder = mnemo::embed::build(&mnemo::embed::EmbedderConfig::Hash { dims: 384 }).unwrap();
    let signing = mnemo::receipts::signing::SigningKeys::empty();
    let app = spawn_bound(db, Default::default(), embedder, signing, "0.0.0.0:0").await;
    let key =
        mnemo::services::keys::create(&app.pool, "default", mnemo::services::keys::Scope::Tenant, None).await.unwrap();
    // The startup rule reads the same question: a database that held a key passes it.
    let mut conn = app.app_pool.acquire().await.unwrap();
    assert!(mnemo::db::keys::ever_stored(&mut conn).await.unwrap());
    assert!(mnemo::services::keys::revoke(&app.pool, "default", &key.row.key_id).await.unwrap());
    assert!(mnemo::db::keys::ever_stored(&mut conn).await.unwrap(), "revocation does not reopen");
    drop(conn);
    tokio::time::sleep(PAST_KEYS_TTL).await;
    let Some(ip) = non_loopback_ip() else {
        eprintln!("SKIP (part): this machine has no non-loopback address to test from");
        assert_eq!(status(&app, &app.base, "/v1/subjects").await, 401);
        return;
    };
    let port = app.base.rsplit(':').next().unwrap();
    let remote = format!("http://{ip}:{port}");
    for path in ["/v1/subjects", "/admin/tenants"] {
        assert_eq!(status(&app, &remote, path).await, 401, "{path} from the network");
    }
    assert_eq!(status(&app, &remote, "/healthz").await, 200);
}

async fn send(req: reqwest::RequestBuilder) -> (u16, serde_json::Value) {
    crate::common::split(req.send().await.unwrap()).await
}

fn episode_json(text: &str) -> String {
    crate::common::episode("user:1", text).to_string()
}

#[tokio::test]
async fn a_cross_site_text_plain_post_is_refused_and_writes_nothing() {
    let app = spawn().await;
    // What a web page's `fetch(url, {method: "POST", mode: "no-cors", body})` or a form with
    // enctype=text/plain sends: no preflight, the JSON text as the body.
    for ct in
        [Some("text/plain"), Some("application/x-www-form-urlencoded"), Some("multipart/form-data; boundary=x"), None]
    {
        let mut req = app.client.post(app.url("/v1/episodes")).body(episode_json("My name is Eve Attacker."));
        if let Some(ct) = ct {
            req = req.header("Content-Type", ct);
        }
        let (s, b) = send(req).await;
        assert_eq!((s, b["error"]["code"].clone()), (415, serde_json::json!("unsupported_media_type")), "{ct:?}: {b}");
        assert!(b["error"]["request_id"].is_string());
    }
    // The same on the admin routes and /mcp.
    let req = app.client.post(app.url("/admin/policy/bundles")).header("Content-Type", "text/plain").body("{}");
    assert_eq!(send(req).await.0, 415);
    let req = app.client.post(app.url("/mcp")).header("Content-Type", "text/plain").body("{}");
    assert_eq!(send(req).await.0, 415);
    assert_eq!(app.count("episodes").await, 0);
    // JSON passes (with parameters too), and a POST without a body needs no Content-Type.
    let req = app
        .client
        .post(app.url("/v1/episodes"))
        .header("Content-Type", "application/json; charset=utf-8")
        .body(episode_json("I live in Bergen."));
    assert_eq!(send(req).await.0, 201);
    assert_eq!(send(app.client.post(app.url("/admin/policy/reload"))).await.0, 200);
    assert_eq!(app.count("episodes").await, 1);
}

#[tokio::test]
async fn a_foreign_host_is_refused_in_open_mode_on_api_admin_and_console() {
    let app = spawn().await;
    app.post("/v1/episodes", &crate::common::episode("user:1", "I live in Bergen.")).await;
    // DNS rebinding: evil.example now resolves to 127.0.0.1, and the page reads what it wants.
    for path in ["/v1/subjects", "/v1/timeline?subject_id=user:1", "/admin/tenants", "/admin/ui/login", "/mcp"] {
        let (s, b) = send(app.client.get(app.url(path)).header("Host", "evil.example:8100")).await;
        assert_eq!((s, b["error"]["code"].clone()), (403, serde_json::json!("host_not_allowed")), "{path}: {b}");
    }
    let req = app
        .client
        .post(app.url("/v1/episodes"))
        .header("Host", "evil.example")
        .json(&crate::common::episode("user:1", "x"));
    assert_eq!(send(req).await.0, 403);
    assert_eq!(app.count("episodes").await, 1);
    // Loopback names pass on any port; probes answer whatever the name.
    for host in ["localhost:8100", "127.0.0.1", "[::1]:9", "mnemo.localhost"] {
        assert_eq!(send(app.client.get(app.url("/v1/subjects")).header("Host", host)).await.0, 200, "{host}");
    }
    assert_eq!(send(app.client.get(app.url("/healthz")).header("Host", "evil.example")).await.0, 200);
}

#[tokio::test]
async fn listed_hosts_are_served_and_keyed_servers_check_hosts_only_when_listed() {
    let listed = mnemo::RuntimeConfig { allowed_hosts: vec!["mnemo.internal".into()], ..Default::default() };
    let app = crate::common::spawn_with(listed).await;
    let get = |host: &'static str| app.client.get(app.url("/v1/subjects")).header("Host", host);
    assert_eq!(send(get("mnemo.internal:8100")).await.0, 200);
    assert_eq!(send(get("evil.example")).await.0, 403);
    // With a key and the list set, the list still holds.
    let key = mnemo::services::keys::create(&app.pool, "default", mnemo::services::keys::Scope::Tenant, None)
        .await
        .unwrap()
        .secret;
    assert_eq!(send(get("evil.example").header("X-API-Key", &key)).await.0, 403);
    assert_eq!(send(get("mnemo.internal").header("X-API-Key", &key)).await.0, 200);

    // With a key and no list (a deployment behind a proxy that passes its public name), any
    // name is served: a rebound page has no key to send.
    let keyed = spawn().await;
    let key = mnemo::services::keys::create(&keyed.pool, "default", mnemo::services::keys::Scope::Tenant, None)
        .await
        .unwrap()
        .secret;
    let req = keyed.client.get(keyed.url("/v1/subjects")).header("Host", "mnemo.example.com");
    assert_eq!(send(req.try_clone().unwrap()).await.0, 401);
    assert_eq!(send(req.header("X-API-Key", &key)).await.0, 200);
}

#[tokio::test]
async fn a_foreign_origin_is_refused_everywhere_and_writes_nothing() {
    let cors = mnemo::RuntimeConfig { cors_origins: vec!["https://app.example.com".into()], ..Default::default() };
    let app = crate::common::spawn_with(cors).await;
    let post = |origin: &str| {
        app.client
            .post(app.url("/v1/episodes"))
            .header("Origin", origin)
            .json(&crate::common::episode("user:1", "I use Rust."))
    };
    for origin in ["http://evil.example", "null", "http://127.0.0.1.evil.example"] {
        let (s, b) = send(post(origin)).await;
        assert_eq!((s, b["error"]["code"].clone()), (403, serde_json::json!("origin_not_allowed")), "{origin}: {b}");
    }
    let (s, _) = send(app.client.delete(app.url("/v1/subjects/user:1")).header("Origin", "http://evil.example")).await;
    assert_eq!(s, 403);
    let console = app.client.get(app.url("/admin/ui/login")).header("Origin", "http://evil.example");
    assert_eq!(send(console).await.0, 403);
    assert_eq!(app.count("episodes").await, 0);
    // Same origin (the console's own forms), loopback origins and the CORS list pass.
    let own = app.base.clone();
    for origin in [own.as_str(), "http://localhost:3000", "https://app.example.com"] {
        assert_eq!(send(post(origin)).await.0, 201, "{origin}");
    }
}
