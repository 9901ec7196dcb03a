//! The console's Erase buttons for one episode or memory: a confirmation page, a CSRF-checked
//! form, then the certificate page.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;

use crate::console_http::{client, hidden, set_cookie, sign_in};

#[tokio::test]
async fn an_episode_is_erased_from_the_console_with_its_certificate() {
    let app = crate::common::spawn().await;
    let admin = mnemo::services::keys::create(&app.pool, "acme", mnemo::services::keys::Scope::Admin, Some("ops"))
        .await
        .unwrap()
        .secret;
    let api = |path: &str| app.client.post(app.url(path)).header("X-API-Key", &admin).header("X-Tenant-ID", "acme");
    for text in ["I live in Bergen.", "I like green tea."] {
        let r = api("/v1/episodes").json(&crate::common::episode("user:1", text)).send().await.unwrap();
        assert_eq!(r.status(), 201);
    }
    api("/v1/memories/compile").json(&json!({"subject_id": "user:1"})).send().await.unwrap();
    let timeline = || async {
        let r = app.client.get(app.url("/v1/timeline?subject_id=user:1")).header("X-API-Key", &admin);
        r.header("X-Tenant-ID", "acme").send().await.unwrap().json::<serde_json::Value>().await.unwrap()
    };
    let t = timeline().await;
    let bergen =
        t["episodes"].as_array().unwrap().iter().find(|e| e["payload"].to_string().contains("Bergen")).unwrap();
    let id = bergen["id"].as_str().unwrap().to_string();

    let c = client();
    let (cookie, _) = set_cookie(&sign_in(&app, &c, &admin, &[]).await, "mnemo_console").unwrap();
    let cookie = format!("mnemo_console={cookie}");
    let get = |path: String| c.get(app.url(&path)).header("cookie", cookie.clone()).send();
    let subject = get("/admin/ui/t/acme/subjects/user%3A1".into()).await.unwrap().text().await.unwrap();
    let link = format!("/admin/ui/t/acme/subjects/user%3A1/erase-item?episode={id}");
    assert!(subject.contains(&link), "the subject page links the episode's Erase");
    let confirm = get(link).await.unwrap();
    assert_eq!(confirm.status(), 200);
    let page = confirm.text().await.unwrap();
    assert!(page.contains("Erase episode"), "{page}");
    let token = hidden(&page, "csrf");
    let action = app.url("/admin/ui/t/acme/subjects/user%3A1/erase-item");

    // Without the token: refused, nothing erased.
    let r = c.post(&action).header("cookie", &cookie).form(&[("episode", id.as_str())]).send().await.unwrap();
    assert_eq!(r.status(), 403);
    assert_eq!(app.count("erasures").await, 0);
    // An id the subject does not have: 404, nothing erased.
    let never = "01890a5d-ac96-774b-bcce-b302099a8057";
    let r = c
        .post(&action)
        .header("cookie", &cookie)
        .form(&[("memory", never), ("csrf", token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(app.count("erasures").await, 0);

    let r = c
        .post(&action)
        .header("cookie", &cookie)
        .form(&[("episode", id.as_str()), ("csrf", token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let to = r.headers()["location"].to_str().unwrap().to_string();
    assert!(to.starts_with("/admin/ui/t/acme/erasures/"), "{to}");
    let erasure_id = to.rsplit('/').next().unwrap().to_string();
    let cert = get(to).await.unwrap().text().await.unwrap();
    assert!(cert.contains(&erasure_id) && cert.contains("mnemo-erasure-items-v1"), "{cert}");
    assert!(!cert.contains("Bergen"), "the certificate holds no content");
    let t = timeline().await;
    assert!(!t.to_string().contains("Bergen") && t.to_string().contains("green tea"), "{t}");
}
