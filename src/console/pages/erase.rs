//! Erasing a subject: a typed confirmation, then the signed certificate, to download.

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::{Extension, Form};
use maud::html;

use crate::console::{html, layout, see_other, seg, Ctx, PageError, PageResult};
use crate::services::erase;
use crate::state::AppState;

fn confirm_page(ctx: &Ctx, tenant: &str, subject: &str, error: Option<&str>) -> maud::Markup {
    let action = format!("/admin/ui/t/{}/subjects/{}/erase", seg(tenant), seg(subject));
    layout::page(
        ctx,
        Some(tenant),
        "Erase subject",
        html! {
            h1 { "Erase " code { (subject) } }
            p { "This deletes every row of the subject in tenant " strong { (tenant) } " — episodes, memories, vectors, \
                 sessions, jobs — and turns its receipts into tombstones. It cannot be undone. \
                 You get a signed erasure certificate." }
            @if let Some(e) = error { p.error role="alert" { (e) } }
            form.stack method="post" action=(action) data-confirm="Erase this subject for good?" {
                (layout::csrf(ctx))
                label for="confirm" { "Type the subject id to confirm" }
                input id="confirm" name="confirm" type="text" autocomplete="off" required;
                button.danger type="submit" { "Erase subject" }
            }
        },
    )
}

/// The confirmation form.
pub async fn confirm(Extension(ctx): Extension<Ctx>, Path((tenant, subject)): Path<(String, String)>) -> PageResult {
    let tenant = super::tenant(&tenant)?;
    let subject = super::subject(&subject)?;
    Ok(html(StatusCode::OK, confirm_page(&ctx, tenant, subject, None)))
}

/// Erases when the typed id matches, then shows the certificate.
pub async fn erase(
    State(st): State<AppState>,
    Extension(ctx): Extension<Ctx>,
    Path((tenant, subject)): Path<(String, String)>,
    Form(form): Form<HashMap<String, String>>,
) -> PageResult {
    let tenant = super::tenant(&tenant)?;
    let subject = super::subject(&subject)?;
    if form.get("confirm").map(String::as_str) != Some(subject) {
        let msg = "The typed id does not match the subject; nothing was erased.";
        return Ok(html(StatusCode::UNPROCESSABLE_ENTITY, confirm_page(&ctx, tenant, subject, Some(msg))));
    }
    let erased = erase::erase_subject(&st.pool, &st.signing_keys, &st.webhooks, tenant, subject).await?;
    st.subjects.forget(tenant, subject);
    Ok(see_other(&format!("/admin/ui/t/{}/erasures/{}", seg(tenant), seg(&erased.erasure_id))))
}

/// A certificate of the tenant with its signature check.
pub async fn certificate(
    State(st): State<AppState>,
    Extension(ctx): Extension<Ctx>,
    Path((tenant, id)): Path<(String, String)>,
) -> PageResult {
    let tenant = super::tenant(&tenant)?;
    let (cert, check) = erase::certificate(&st.pool, &st.signing_keys, tenant, &id)
        .await?
        .ok_or_else(|| PageError::not_found("Erasure certificate"))?;
    let body = html! {
        h1 { "Erasure certificate" }
        p id="certificate-status" { "Erasure " code { (id) } " · signature check: "
            strong { (check.reason) } }
        p { a.button href={ "/admin/ui/t/" (seg(tenant)) "/erasures/" (seg(&id)) "/certificate.json" } download { "Download certificate (JSON)" } }
        pre id="certificate" { (layout::pretty(&cert)) }
    };
    Ok(html(StatusCode::OK, layout::page(&ctx, Some(tenant), "Erasure certificate", body)))
}

/// The certificate as a JSON file.
pub async fn download(State(st): State<AppState>, Path((tenant, id)): Path<(String, String)>) -> PageResult {
    let tenant = super::tenant(&tenant)?;
    let (cert, _) = erase::certificate(&st.pool, &st.signing_keys, tenant, &id)
        .await?
        .ok_or_else(|| PageError::not_found("Erasure certificate"))?;
    let name: String = id.chars().filter(char::is_ascii_alphanumeric).collect();
    let disposition = format!("attachment; filename=\"erasure-{name}.json\"");
    Ok((
        [(header::CONTENT_TYPE, "application/json".to_string()), (header::CONTENT_DISPOSITION, disposition)],
        layout::pretty(&cert),
    )
        .into_response())
}
