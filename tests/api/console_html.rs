//! Every console page a signed-in operator can reach is valid HTML, checked by the Nu HTML
//! Checker (`vnu.jar`, the npm package `vnu-jar` that `scripts/test` installs under
//! `target/vnu`, run with `java`), and an address the console does not serve is its own 404 page.
//!
//! Without the checker (or java) the validation is skipped with a message, unless
//! `MNEMO_REQUIRE_VALIDATOR` is set (`scripts/test` sets it); the 404 checks always run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeSet, VecDeque};
use std::path::PathBuf;

use crate::common::TestApp;
use crate::console_http::{client, set_cookie, sign_in};

/// The checker's jar, or None with a SKIP line (a failure under `MNEMO_REQUIRE_VALIDATOR`).
fn validator() -> Option<PathBuf> {
    let jar = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/vnu/node_modules/vnu-jar/build/dist/vnu.jar");
    let java = std::process::Command::new("java").arg("-version").output().is_ok_and(|o| o.status.success());
    if jar.is_file() && java {
        return Some(jar);
    }
    assert!(
        std::env::var("MNEMO_REQUIRE_VALIDATOR").is_err(),
        "the Nu HTML Checker (target/vnu, java) is missing but MNEMO_REQUIRE_VALIDATOR is set (run scripts/test)"
    );
    eprintln!("SKIP: HTML validation: target/vnu/…/vnu.jar or java not found; scripts/test installs them");
    None
}

/// An operator-signed-in console over seeded data; returns the app and the session cookie header.
async fn signed_in() -> (TestApp, String) {
    let keys =
        mnemo::receipts::signing::SigningKeys::parse(r#"{"k1": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}"#)
            .unwrap();
    let embedder = mnemo::embed::build(&mnemo::embed::EmbedderConfig::Hash { dims: 384 }).unwrap();
    let mut app = crate::common::spawn_state(Default::default(), embedder, keys).await;
    let operator =
        mnemo::services::keys::create(&app.pool, "default", mnemo::services::keys::Scope::Operator, Some("ops"))
            .await
            .unwrap()
            .secret;
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("x-api-key", operator.parse().unwrap());
    app.client = reqwest::Client::builder().default_headers(headers).build().unwrap();
    crate::console::seed(&app).await;
    let r = sign_in(&app, &client(), &operator, &[]).await;
    assert_eq!(r.status(), 303);
    let (cookie, _) = set_cookie(&r, "mnemo_console").expect("session cookie");
    (app, format!("mnemo_console={cookie}"))
}

/// The console links of a page (`href="/admin/ui…"`, entities decoded), assets left out.
fn links(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(|h| h.replace("&amp;", "&"))
        .filter(|h| h.starts_with("/admin/ui") && !h.starts_with("/admin/ui/assets/"))
        .map(|h| h.split('#').next().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn unknown_console_addresses_get_the_consoles_own_404_page() {
    let (app, cookie) = signed_in().await;
    let c = client();
    for path in ["/admin/ui/nope", "/admin/ui/t/default/nope", "/admin/ui/t/default/subjects/user:ada/nope/deeper"] {
        let r = c.get(app.url(path)).header("cookie", &cookie).send().await.unwrap();
        assert_eq!(r.status(), 404, "{path}");
        assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/html"), "{path}");
        let page = r.text().await.unwrap();
        assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
        assert!(page.contains("There is no console page at this address."), "{page}");
        assert!(page.contains("Back to the console"), "{page}");
    }
    // The console's root, with or without its slash, opens the tenant list.
    for path in ["/admin/ui", "/admin/ui/"] {
        let r = c.get(app.url(path)).header("cookie", &cookie).send().await.unwrap();
        assert_eq!(r.status(), 303, "{path}");
        assert_eq!(r.headers()["location"], "/admin/ui/tenants", "{path}");
    }
    // Without a session an unknown address leads to the sign-in form, like every console page.
    let r = c.get(app.url("/admin/ui/nope")).send().await.unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/admin/ui/login");
}

#[tokio::test]
async fn every_console_page_is_valid_html() {
    let (app, cookie) = signed_in().await;
    let c = client();
    // Pages reached by following links from the tenant list, plus pages only a form or a mistake opens.
    let task = "/admin/ui/t/default/subjects/user%3Aada/context?task=Where+does+the+user+work%3F&max_tokens=300";
    let mut queue: VecDeque<String> =
        ["/admin/ui/tenants", task, "/admin/ui/t/default/subjects/nobody:here/context?as_of=yesterday"]
            .into_iter()
            .map(String::from)
            .collect();
    let mut seen: BTreeSet<String> = queue.iter().cloned().collect();
    let mut pages: Vec<(String, String)> = Vec::new();
    while let Some(path) = queue.pop_front() {
        let r = c.get(app.url(&path)).header("cookie", &cookie).send().await.unwrap();
        let status = r.status().as_u16();
        let html_page = r.headers().get("content-type").is_some_and(|v| v.to_str().unwrap().starts_with("text/html"));
        let body = r.text().await.unwrap();
        if !html_page {
            continue; // a certificate's JSON download
        }
        assert!(status == 200 || path.contains("nobody:here"), "{path}: {status}\n{body}");
        assert!(body.starts_with("<!DOCTYPE html>"), "{path} does not start with its doctype");
        for l in links(&body) {
            if pages.len() + queue.len() < 80 && seen.insert(l.clone()) {
                queue.push_back(l);
            }
        }
        pages.push((path, body));
    }
    // The sign-in form, the 404 page and an error page.
    let login = client().get(app.url("/admin/ui/login")).send().await.unwrap().text().await.unwrap();
    pages.push(("/admin/ui/login".into(), login));
    let missing = c.get(app.url("/admin/ui/nope")).header("cookie", &cookie).send().await.unwrap();
    pages.push(("/admin/ui/nope".into(), missing.text().await.unwrap()));
    let paths: Vec<&str> = pages.iter().map(|(p, _)| p.as_str()).collect();
    for want in ["/subjects/user%3Aada", "/receipts/", "/keys", "/config", "/labels", "/jobs", "/webhooks", "/erase"] {
        assert!(paths.iter().any(|p| p.contains(want)), "no page under {want} was reached: {paths:?}");
    }

    let Some(jar) = validator() else { return };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("console-html-{}", ulid::Ulid::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    for (i, (_, body)) in pages.iter().enumerate() {
        let f = dir.join(format!("page-{i:03}.html"));
        std::fs::write(&f, body).unwrap();
        files.push(f);
    }
    let out = tokio::process::Command::new("java")
        .arg("-jar")
        .arg(&jar)
        .args(["--format", "gnu", "--also-check-css", "--stdout"])
        .args(&files)
        .output()
        .await
        .expect("running the Nu HTML Checker");
    let report = String::from_utf8_lossy(&out.stdout).to_string();
    // Name each page by its console address rather than its temporary file.
    let mut named = report.clone();
    for (i, (path, _)) in pages.iter().enumerate().rev() {
        named = named.replace(&format!("{}", files[i].display()), path);
    }
    std::fs::remove_dir_all(&dir).ok();
    assert!(out.status.success() && report.trim().is_empty(), "{} console pages checked:\n{named}", pages.len());
    println!("{} console pages are valid HTML", pages.len());
}
