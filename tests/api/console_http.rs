//! The admin console over plain HTTP (no browser): sign-in rules, cookie flags, CSRF refusal,
//! the loopback-only rule without keys, and sessions ending with their key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::TestApp;
use reqwest::redirect::Policy;

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().redirect(Policy::none()).build().unwrap()
}

/// The value of `name` in the response's Set-Cookie headers, and the whole header line.
pub fn set_cookie(r: &reqwest::Response, name: &str) -> Option<(String, String)> {
    r.headers().get_all("set-cookie").iter().filter_map(|v| v.to_str().ok()).find_map(|h| {
        let v = h.strip_prefix(name)?.strip_prefix('=')?;
        Some((v.split(';').next().unwrap_or("").to_string(), h.to_string()))
    })
}

/// The sign-in form's login cookie and CSRF token.
pub async fn login_form(app: &TestApp, c: &reqwest::Client) -> (String, String) {
    let r = c.get(app.url("/admin/ui/login")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let (nonce, _) = set_cookie(&r, "mnemo_console_login").expect("login cookie");
    let html = r.text().await.unwrap();
    (nonce, hidden(&html, "csrf"))
}

/// The value of the first hidden input `name` of a page.
pub fn hidden(html: &str, name: &str) -> String {
    let at = html.find(&format!("name=\"{name}\" value=\"")).expect("hidden field") + name.len() + 15;
    html[at..].split('"').next().unwrap().to_string()
}

/// Signs in with `key`; returns the response.
pub async fn sign_in(app: &TestApp, c: &reqwest::Client, key: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let (nonce, token) = login_form(app, c).await;
    let mut req = c
        .post(app.url("/admin/ui/login"))
        .header("cookie", format!("mnemo_console_login={nonce}"))
        .form(&[("csrf", token.as_str()), ("api_key", key)]);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.unwrap()
}

async fn keyed_app() -> (TestApp, String, String) {
    let app = crate::common::spawn().await;
    let admin = mnemo::services::keys::create(&app.pool, "acme", mnemo::services::keys::Scope::Admin, Some("ops"))
        .await
        .unwrap()
        .secret;
    let tenant = mnemo::services::keys::create(&app.pool, "acme", mnemo::services::keys::Scope::Tenant, None)
        .await
        .unwrap()
        .secret;
    (app, admin, tenant)
}

#[tokio::test]
async fn an_admin_key_signs_in_with_a_strict_cookie_and_a_tenant_key_cannot() {
    let (app, admin, tenant_key) = keyed_app().await;
    let c = client();
    // No session: every page sends the visitor to the sign-in form.
    let r = c.get(app.url("/admin/ui/tenants")).send().await.unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/admin/ui/login");

    let r = sign_in(&app, &c, &tenant_key, &[]).await;
    assert_eq!(r.status(), 403);
    assert!(set_cookie(&r, "mnemo_console").is_none());
    let t = r.text().await.unwrap();
    assert!(t.contains("not an admin key"), "{t}");
    let r = sign_in(&app, &c, "mnemo_nope_nope", &[]).await;
    assert_eq!(r.status(), 403);

    let r = sign_in(&app, &c, &admin, &[]).await;
    assert_eq!(r.status(), 303);
    let (cookie, line) = set_cookie(&r, "mnemo_console").expect("session cookie");
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/admin/ui", "Max-Age=28800"] {
        assert!(line.contains(flag), "{line}");
    }
    assert!(!line.contains("Secure"), "plain http: {line}");
    assert!(!cookie.contains(&admin), "the cookie never holds the key");
    let page =
        c.get(app.url("/admin/ui/tenants")).header("cookie", format!("mnemo_console={cookie}")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(page.text().await.unwrap().contains("acme"));

    // Behind an https proxy the cookie is Secure.
    let r = sign_in(&app, &c, &admin, &[("x-forwarded-proto", "https")]).await;
    assert!(set_cookie(&r, "mnemo_console").unwrap().1.contains("; Secure"));
}

#[tokio::test]
async fn forms_without_their_csrf_token_are_refused_and_write_nothing() {
    let (app, admin, _) = keyed_app().await;
    let c = client();
    let r = sign_in(&app, &c, &admin, &[]).await;
    let (cookie, _) = set_cookie(&r, "mnemo_console").unwrap();
    let cookie = format!("mnemo_console={cookie}");
    let keys_before = app.count("api_keys").await;
    let page =
        c.get(app.url("/admin/ui/t/acme/keys")).header("cookie", &cookie).send().await.unwrap().text().await.unwrap();
    let token = hidden(&page, "csrf");

    for form in [vec![("label", "x")], vec![("label", "x"), ("csrf", "0000")]] {
        let r = c.post(app.url("/admin/ui/t/acme/keys")).header("cookie", &cookie).form(&form).send().await.unwrap();
        assert_eq!(r.status(), 403);
        assert!(r.text().await.unwrap().contains("CSRF token"));
    }
    assert_eq!(app.count("api_keys").await, keys_before);
    // The sign-in form needs its token too.
    let r = c.post(app.url("/admin/ui/login")).form(&[("api_key", admin.as_str())]).send().await.unwrap();
    assert_eq!(r.status(), 403);
    assert!(set_cookie(&r, "mnemo_console").is_none());

    // With the token the same form works, and the secret is shown once.
    let r = c
        .post(app.url("/admin/ui/t/acme/keys"))
        .header("cookie", &cookie)
        .form(&[("label", "x"), ("csrf", token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains("mnemo_"));
    assert_eq!(app.count("api_keys").await, keys_before + 1);
}

#[tokio::test]
async fn a_session_ends_when_its_key_is_revoked_or_it_signs_out() {
    let (app, admin, _) = keyed_app().await;
    let c = client();
    let (cookie, _) = set_cookie(&sign_in(&app, &c, &admin, &[]).await, "mnemo_console").unwrap();
    let cookie = format!("mnemo_console={cookie}");
    let ok = c.get(app.url("/admin/ui/tenants")).header("cookie", &cookie).send().await.unwrap();
    assert_eq!(ok.status(), 200);
    let token = hidden(&ok.text().await.unwrap(), "csrf");
    // Sign-out clears the cookie.
    let r = c
        .post(app.url("/admin/ui/logout"))
        .header("cookie", &cookie)
        .form(&[("csrf", token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    assert!(set_cookie(&r, "mnemo_console").unwrap().1.contains("Max-Age=0"));
    // A tampered cookie is no session.
    let r = c.get(app.url("/admin/ui/tenants")).header("cookie", format!("{cookie}x")).send().await.unwrap();
    assert_eq!(r.status(), 303);
    // Revoking the key ends its sessions.
    let key_id = admin.split('_').nth(1).unwrap();
    assert!(mnemo::services::keys::revoke(&app.pool, "acme", key_id).await.unwrap());
    let r = c.get(app.url("/admin/ui/tenants")).header("cookie", &cookie).send().await.unwrap();
    assert_eq!(r.status(), 303);
}

/// The finding: sign-out only cleared the browser's cookie, and a copy kept working for 8 h.
#[tokio::test]
async fn a_copied_cookie_is_void_after_sign_out() {
    let (app, admin, _) = keyed_app().await;
    let c = client();
    let (first, _) = set_cookie(&sign_in(&app, &c, &admin, &[]).await, "mnemo_console").unwrap();
    let (second, _) = set_cookie(&sign_in(&app, &c, &admin, &[]).await, "mnemo_console").unwrap();
    let (first, second) = (format!("mnemo_console={first}"), format!("mnemo_console={second}"));
    let ok = c.get(app.url("/admin/ui/tenants")).header("cookie", &first).send().await.unwrap();
    assert_eq!(ok.status(), 200);
    let token = hidden(&ok.text().await.unwrap(), "csrf");
    assert_eq!(app.count("console_sessions").await, 2);
    let r = c.post(app.url("/admin/ui/logout")).header("cookie", &first).form(&[("csrf", token.as_str())]);
    assert_eq!(r.send().await.unwrap().status(), 303);
    // The copy is refused everywhere: pages send it to the sign-in form, forms are not accepted.
    for path in ["/admin/ui/tenants", "/admin/ui/t/acme/keys", "/admin/ui/t/acme/subjects"] {
        let r = c.get(app.url(path)).header("cookie", &first).send().await.unwrap();
        assert_eq!(r.status(), 303, "{path}");
        assert_eq!(r.headers()["location"], "/admin/ui/login");
    }
    let r = c.post(app.url("/admin/ui/t/acme/keys")).header("cookie", &first).form(&[("csrf", token.as_str())]);
    assert_eq!(r.send().await.unwrap().status(), 303);
    let keys: i64 = app.count("api_keys").await;
    assert_eq!(keys, 2, "the refused form created no key");
    // Another session of the same key is not affected; the row of the ended one is gone.
    let r = c.get(app.url("/admin/ui/tenants")).header("cookie", &second).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(app.count("console_sessions").await, 1);
    let stored: Vec<Vec<u8>> =
        sqlx::query_scalar("SELECT session_id FROM console_sessions").fetch_all(&app.pool).await.unwrap();
    assert!(stored.iter().all(|id| id.len() == 32), "a digest, not the cookie");
}

/// The finding: the console refused subject ids the API accepts (over 256 bytes but not 256
/// characters, or with a control character), so they could be neither viewed nor erased there.
#[tokio::test]
async fn every_subject_id_the_api_accepts_can_be_viewed_and_erased() {
    let (app, admin, _) = keyed_app().await;
    let subject = format!("{}\tend", "ü".repeat(200));
    let ep = crate::common::episode(&subject, "I live in Bergen.");
    let r = app.client.post(app.url("/v1/episodes")).header("X-API-Key", &admin).json(&ep).send().await.unwrap();
    assert_eq!(r.status(), 201, "the API accepts it");
    let c = client();
    let (cookie, _) = set_cookie(&sign_in(&app, &c, &admin, &[]).await, "mnemo_console").unwrap();
    let cookie = format!("mnemo_console={cookie}");
    let base = format!("/admin/ui/t/acme/subjects/{}", mnemo::console::seg(&subject));
    for page in ["", "/receipts", "/erase"] {
        let r = c.get(app.url(&format!("{base}{page}"))).header("cookie", &cookie).send().await.unwrap();
        assert_eq!(r.status(), 200, "{page}");
        assert!(r.text().await.unwrap().contains(&subject), "{page}");
    }
    let page = c.get(app.url(&format!("{base}/erase"))).header("cookie", &cookie).send().await.unwrap();
    let token = hidden(&page.text().await.unwrap(), "csrf");
    let form = [("csrf", token.as_str()), ("confirm", subject.as_str())];
    let r = c.post(app.url(&format!("{base}/erase"))).header("cookie", &cookie).form(&form).send().await.unwrap();
    assert_eq!(r.status(), 303);
    assert!(r.headers()["location"].to_str().unwrap().contains("/erasures/"));
    assert!(app.subject_rows("acme", &subject).await.iter().all(|(_, n)| *n == 0));
    // The rule is the API's: a NUL is refused by both, and so are 257 characters.
    for bad in ["a%00b".to_string(), mnemo::console::seg(&"ü".repeat(257))] {
        let r = c.get(app.url(&format!("/admin/ui/t/acme/subjects/{bad}"))).header("cookie", &cookie).send().await;
        assert_eq!(r.unwrap().status(), 400, "{bad}");
    }
}

/// This machine's first non-loopback IPv4 address (no packet is sent), if it has one.
pub fn non_loopback_ip() -> Option<std::net::IpAddr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("192.0.2.1:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[tokio::test]
async fn without_any_key_the_console_is_served_on_loopback_only() {
    let embedder = mnemo::embed::build(&mnemo::embed::EmbedderConfig::Hash { dims: 384 }).unwrap();
    let db = std::sync::Arc::new(crate::common::fresh_database().await);
    // The address is an allowed Host, so the console's own peer rule is what refuses it.
    let hosts = non_loopback_ip().map(|ip| vec![ip.to_string()]).unwrap_or_default();
    let app = crate::common::spawn_bound(
        db,
        mnemo::RuntimeConfig { allowed_hosts: hosts, ..Default::default() },
        embedder,
        mnemo::receipts::signing::SigningKeys::empty(),
        "0.0.0.0:0",
    )
    .await;
    let c = client();
    // Loopback: an open session, entered through the form (with its token), no key.
    let (nonce, token) = login_form(&app, &c).await;
    let r = c
        .post(app.url("/admin/ui/login"))
        .header("cookie", format!("mnemo_console_login={nonce}"))
        .form(&[("csrf", token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let (cookie, _) = set_cookie(&r, "mnemo_console").unwrap();
    let r =
        c.get(app.url("/admin/ui/tenants")).header("cookie", format!("mnemo_console={cookie}")).send().await.unwrap();
    assert_eq!(r.status(), 200);

    let Some(ip) = non_loopback_ip() else {
        eprintln!("SKIP (part): this machine has no non-loopback address to test the refusal from");
        return;
    };
    let port = app.base.rsplit(':').next().unwrap();
    let remote = format!("http://{ip}:{port}");
    for path in ["/admin/ui/login", "/admin/ui/tenants", "/admin/ui/assets/console.css"] {
        let r =
            c.get(format!("{remote}{path}")).header("cookie", format!("mnemo_console={cookie}")).send().await.unwrap();
        assert_eq!(r.status(), 403, "{path}");
        assert!(r.text().await.unwrap().contains("loopback only"));
    }
    // Once a key exists the console needs a sign-in from anywhere, and the open session is void.
    mnemo::services::keys::create(&app.pool, "default", mnemo::services::keys::Scope::Admin, None).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let r = c.get(format!("{remote}/admin/ui/login")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let r =
        c.get(app.url("/admin/ui/tenants")).header("cookie", format!("mnemo_console={cookie}")).send().await.unwrap();
    assert_eq!(r.status(), 303);
}

#[tokio::test]
async fn console_routes_stay_out_of_the_api_document() {
    let app = crate::common::spawn().await;
    let (s, doc) = app.get("/openapi.json").await;
    assert_eq!(s, 200);
    assert!(doc["paths"].as_object().unwrap().keys().all(|p| !p.starts_with("/admin/ui")));
}

#[tokio::test]
async fn tenant_pages_keep_the_apis_residency_rule() {
    let config = mnemo::RuntimeConfig {
        access: mnemo::services::access::AccessPolicy { region: Some("eu".into()), rate_limit_rpm: 0 },
        ..Default::default()
    };
    let app = crate::common::spawn_with(config).await;
    let admin = mnemo::services::keys::create(&app.pool, "acme", mnemo::services::keys::Scope::Operator, None)
        .await
        .unwrap()
        .secret;
    crate::common::set_config(&app, "pinned", serde_json::json!({"region": "us"})).await;
    let c = client();
    let (cookie, _) = set_cookie(&sign_in(&app, &c, &admin, &[]).await, "mnemo_console").unwrap();
    let cookie = format!("mnemo_console={cookie}");
    let r = c.get(app.url("/admin/ui/t/pinned/subjects")).header("cookie", &cookie).send().await.unwrap();
    assert_eq!(r.status(), 403);
    assert!(r.text().await.unwrap().contains("pinned to region"));
    let r = c.get(app.url("/admin/ui/t/acme/subjects")).header("cookie", &cookie).send().await.unwrap();
    assert_eq!(r.status(), 200);
}
