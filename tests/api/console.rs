//! The admin console in a real browser: headless Chromium driven over WebDriver (fantoccini).
//!
//! Needs `chromium` and `chromedriver` (scripts/bootstrap-test installs them). Without chromedriver
//! the test is skipped with a message, unless `MNEMO_REQUIRE_BROWSER` is set (scripts/test sets
//! it), so CI really runs it. Screenshots of every page go to `target/console-screenshots/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::TestApp;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

/// chromedriver on a free port, stopped on drop.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| PathBuf::from(d).join(name)).find(|p| p.is_file())
}

async fn start_driver() -> Option<Driver> {
    let Some(bin) = find_on_path("chromedriver") else {
        assert!(
            std::env::var("MNEMO_REQUIRE_BROWSER").is_err(),
            "chromedriver is missing but MNEMO_REQUIRE_BROWSER is set (run scripts/bootstrap-test)"
        );
        eprintln!("SKIP: chromedriver not found; run scripts/bootstrap-test to install chromium and chromium-driver");
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(bin)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting chromedriver");
    let url = format!("http://127.0.0.1:{port}");
    let driver = Driver { child, url };
    for _ in 0..100 {
        if reqwest::get(format!("{}/status", driver.url)).await.is_ok_and(|r| r.status().is_success()) {
            return Some(driver);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("chromedriver did not answer on port {port}");
}

async fn browser(driver: &Driver, profile: &std::path::Path) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({"args": [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", "--window-size=1280,1400",
            format!("--user-data-dir={}", profile.display()),
        ]}),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    ClientBuilder::new(connector).capabilities(caps).connect(&driver.url).await.expect("webdriver session")
}

struct Shots(PathBuf);

impl Shots {
    async fn take(&self, c: &Client, name: &str) {
        let png = c.screenshot().await.unwrap();
        std::fs::write(self.0.join(format!("{name}.png")), png).unwrap();
    }
}

async fn text(c: &Client, css: &str) -> String {
    c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Css(css)).await.unwrap().text().await.unwrap()
}

/// Clicks what `loc` finds and waits until the page it leads to has replaced the current one
/// (`confirm`: accept the confirmation dialog the click opens first).
async fn click(c: &Client, loc: Locator<'_>, confirm: bool) {
    let old = c.find(Locator::Css("html")).await.unwrap();
    c.wait().at_most(Duration::from_secs(10)).for_element(loc).await.unwrap().click().await.unwrap();
    if confirm {
        c.accept_alert().await.unwrap();
    }
    for _ in 0..200 {
        if old.tag_name().await.is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the click did not load a new page");
}

async fn body(c: &Client) -> String {
    text(c, "body").await
}

/// Two subjects with a claim that changed, and a receipt; returns the receipt id and an instant before the change.
pub async fn seed(app: &TestApp) -> (String, String) {
    crate::common::set_config(app, "default", json!({"receipt_signing_key_id": "k1"})).await;
    app.ingest_and_compile(
        "user:ada",
        &[
            "I work at Initech.",
            "I prefer tea over coffee.",
            "My favourite editor is Helix.",
            "We use Postgres for the billing service.",
            "I live in Lisbon.",
        ],
    )
    .await;
    let (s, b) = app
        .post(
            "/v1/context",
            &json!({"subject_id": "user:ada", "task": "Where does the user work?", "emit_receipt": true}),
        )
        .await;
    assert_eq!(s, 200, "{b}");
    assert!(b["assembled_context"].as_str().unwrap().contains("Initech"));
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let before = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    app.ingest_and_compile("user:ada", &["I work at Globex."]).await;
    app.ingest_and_compile("user:bob", &["My favourite editor is Helix."]).await;
    (b["receipt_id"].as_str().unwrap().to_string(), before)
}

#[tokio::test]
async fn the_console_in_a_browser() {
    let Some(driver) = start_driver().await else { return };
    let keys =
        mnemo::receipts::signing::SigningKeys::parse(r#"{"k1": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}"#)
            .unwrap();
    let embedder = mnemo::embed::build(&mnemo::embed::EmbedderConfig::Hash { dims: 384 }).unwrap();
    let mut app = crate::common::spawn_state(Default::default(), embedder, keys).await;
    let admin =
        mnemo::services::keys::create(&app.pool, "default", mnemo::services::keys::Scope::Operator, Some("ops"))
            .await
            .unwrap()
            .secret;
    let tenant_key = mnemo::services::keys::create(&app.pool, "default", mnemo::services::keys::Scope::Tenant, None)
        .await
        .unwrap()
        .secret;
    // The seed goes through the API with the admin key.
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("x-api-key", admin.parse().unwrap());
    app.client = reqwest::Client::builder().default_headers(headers).build().unwrap();
    let (receipt_id, before) = seed(&app).await;

    let shots = Shots(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/console-screenshots"));
    std::fs::create_dir_all(&shots.0).unwrap();
    let profile = tempdir();
    let c = browser(&driver, &profile).await;
    let ui = |p: &str| app.url(&format!("/admin/ui{p}"));

    // A tenant key cannot sign in; an admin key can.
    c.goto(&ui("/login")).await.unwrap();
    shots.take(&c, "login").await;
    c.find(Locator::Id("api_key")).await.unwrap().send_keys(&tenant_key).await.unwrap();
    click(&c, Locator::Css("form button[type=submit]"), false).await;
    assert!(text(&c, "p.error").await.contains("not an admin key"));
    c.find(Locator::Id("api_key")).await.unwrap().send_keys(&admin).await.unwrap();
    click(&c, Locator::Css("form button[type=submit]"), false).await;
    c.wait().for_element(Locator::XPath("//h1[text()='Tenants']")).await.unwrap();
    shots.take(&c, "tenants").await;

    // Subjects, then the seeded subject and its superseded claim's history.
    click(&c, Locator::LinkText("default"), false).await;
    click(&c, Locator::LinkText("user:ada"), false).await;
    let employer = "article[data-claim='employment.current_employer']";
    let history = text(&c, &format!("{employer} table.history")).await;
    assert!(history.contains("Initech") && history.contains("Globex"), "{history}");
    let old_row = text(&c, &format!("{employer} tr.status-superseded")).await;
    assert!(old_row.contains("Initech") && old_row.contains("Globex"), "superseded by Globex: {old_row}");
    c.find(Locator::Css(&format!("{employer} svg.timeline rect.status-superseded"))).await.unwrap();
    shots.take(&c, "subject").await;

    // What the agent sees, as of before and after the change.
    click(&c, Locator::LinkText("What the agent sees"), false).await;
    c.wait().for_element(Locator::Id("task")).await.unwrap().send_keys("Where does the user work?").await.unwrap();
    c.find(Locator::Id("as_of")).await.unwrap().send_keys(&before).await.unwrap();
    click(&c, Locator::Css("#context-form button[type=submit]"), false).await;
    let then = text(&c, "#assembled").await;
    assert!(then.contains("Initech") && !then.contains("Globex"), "{then}");
    assert!(text(&c, "table.items").await.contains("memory"));
    c.find(Locator::Id("as_of")).await.unwrap().clear().await.unwrap();
    click(&c, Locator::Css("#context-form button[type=submit]"), false).await;
    let now = text(&c, "#assembled").await;
    assert!(now.contains("Globex") && !now.contains("Initech"), "{now}");
    shots.take(&c, "context").await;
    // A tight budget: the items that did not fit are listed with their scores.
    c.find(Locator::Id("max_tokens")).await.unwrap().clear().await.unwrap();
    c.find(Locator::Id("max_tokens")).await.unwrap().send_keys("45").await.unwrap();
    click(&c, Locator::Css("#context-form button[type=submit]"), false).await;
    assert!(text(&c, "#assembled").await.contains("Globex"));
    c.find(Locator::Css("tr.missed")).await.unwrap();
    shots.take(&c, "context-budget").await;

    // The receipt: verify, replay as of (reproduced) and against today (differs, with the diff).
    c.goto(&ui("/t/default/subjects/user%3Aada/receipts")).await.unwrap();
    shots.take(&c, "receipts").await;
    click(&c, Locator::LinkText(&receipt_id), false).await;
    assert!(text(&c, "#verdict").await.contains("ok"));
    click(&c, Locator::Css("form.inline button[type=submit]"), false).await;
    assert!(text(&c, "#replay-verdict").await.contains("Reproduced"));
    c.find(Locator::Id("mode")).await.unwrap().select_by_value("current").await.unwrap();
    click(&c, Locator::Css("form.inline button[type=submit]"), false).await;
    assert!(text(&c, "#replay-verdict").await.contains("Differs"));
    let diff = text(&c, "#replay-diff").await;
    assert!(
        diff.contains("- ") && diff.contains("Initech") && diff.contains("+ ") && diff.contains("Globex"),
        "{diff}"
    );
    shots.take(&c, "receipt").await;

    // API keys: a form posted without its CSRF token is refused; create (shown once) and revoke.
    c.goto(&ui("/t/default/keys")).await.unwrap();
    c.execute("document.querySelector('main form input[name=csrf]').remove()", vec![]).await.unwrap();
    c.find(Locator::Id("label")).await.unwrap().send_keys("no token").await.unwrap();
    click(&c, Locator::Css("main form.stack button[type=submit]"), false).await;
    assert!(body(&c).await.contains("CSRF token is missing or wrong"));
    c.goto(&ui("/t/default/keys")).await.unwrap();
    c.find(Locator::Id("label")).await.unwrap().send_keys("browser").await.unwrap();
    click(&c, Locator::Css("main form.stack button[type=submit]"), false).await;
    let secret = text(&c, "#new-key").await;
    assert!(secret.starts_with("mnemo_"), "{secret}");
    shots.take(&c, "keys").await;
    let key_id = secret.split('_').nth(1).unwrap().to_string();
    let revoke = format!("//tr[td/code[text()='{key_id}']]//button");
    click(&c, Locator::XPath(&revoke), true).await;
    let row = format!("//tr[td/code[text()='{key_id}']]");
    c.wait().for_element(Locator::XPath(&format!("{row}/td[contains(., 'revoked')]"))).await.unwrap();
    let r = reqwest::Client::new().get(app.url("/v1/subjects")).header("x-api-key", &secret).send().await.unwrap();
    assert_eq!(r.status(), 403, "a revoked key is refused by the API");

    // The other pages render.
    for (page, heading, shot) in [
        ("/t/default/config", "Config & policy", "config"),
        ("/t/default/labels", "Label review", "labels"),
        ("/t/default/jobs", "Compile jobs", "jobs"),
        ("/webhooks", "Webhooks", "webhooks"),
        ("/t/default/subjects", "Subjects", "subjects"),
    ] {
        c.goto(&ui(page)).await.unwrap();
        assert_eq!(text(&c, "h1").await, heading);
        shots.take(&c, shot).await;
    }

    // Erase a subject: a wrong id erases nothing; the right one, confirmed, gives the certificate.
    c.goto(&ui("/t/default/subjects/user%3Abob/erase")).await.unwrap();
    c.find(Locator::Id("confirm")).await.unwrap().send_keys("user:bo").await.unwrap();
    click(&c, Locator::Css("main form button[type=submit]"), true).await;
    assert!(text(&c, "p.error").await.contains("does not match"));
    assert!(app.count("episodes").await > 1);
    c.find(Locator::Id("confirm")).await.unwrap().send_keys("user:bob").await.unwrap();
    shots.take(&c, "erase").await;
    click(&c, Locator::Css("main form button[type=submit]"), true).await;
    let cert = text(&c, "#certificate").await;
    assert!(cert.contains("subject_sha256") && !cert.contains("user:bob"), "{cert}");
    assert!(text(&c, "#certificate-status").await.contains("ok"));
    shots.take(&c, "certificate").await;
    assert!(app.subject_rows("default", "user:bob").await.iter().all(|(_, n)| *n == 0));

    // At phone width the pages still render (and a screenshot shows it).
    c.set_window_size(390, 844).await.unwrap();
    c.goto(&ui("/t/default/subjects/user%3Aada")).await.unwrap();
    text(&c, "table.history").await;
    shots.take(&c, "subject-phone").await;

    // Sign out: the pages need a sign-in again, and a copy of the cookie taken before signing
    // out is void too (the session ended server-side, not only in this browser).
    let copied = c.get_named_cookie("mnemo_console").await.unwrap().value().to_string();
    let copy = || {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
            .get(ui("/tenants"))
            .header("cookie", format!("mnemo_console={copied}"))
            .send()
    };
    assert_eq!(copy().await.unwrap().status(), 200, "the copy works while the session lasts");
    click(&c, Locator::Css("form.signout button"), false).await;
    c.wait().for_element(Locator::Id("api_key")).await.unwrap();
    c.goto(&ui("/tenants")).await.unwrap();
    c.wait().for_element(Locator::Id("api_key")).await.unwrap();
    let r = copy().await.unwrap();
    assert_eq!((r.status().as_u16(), &r.headers()["location"]), (303, &"/admin/ui/login".parse().unwrap()));
    c.close().await.unwrap();
    let _ = std::fs::remove_dir_all(&profile);
}

fn tempdir() -> PathBuf {
    let p = std::env::temp_dir().join(format!("mnemo-chromium-{}", ulid::Ulid::new()));
    std::fs::create_dir_all(&p).unwrap();
    p
}
