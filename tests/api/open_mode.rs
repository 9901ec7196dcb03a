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

    let key = mnemo::services::keys::create(&app.pool, "acme", true, None).await.unwrap();
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
    let key = mnemo::services::keys::create(&app.pool, "default", false, None).await.unwrap();
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
