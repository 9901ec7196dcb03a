//! API keys of a tenant: create (the secret shown once), list, revoke.

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Form};
use maud::{html, Markup};

use crate::console::{html, layout, see_other, seg, Ctx, PageError, PageResult};
use crate::services::keys;
use crate::state::AppState;

async fn keys_page(st: &AppState, ctx: &Ctx, tenant: &str, minted: Option<Markup>) -> PageResult {
    let rows = keys::list(&st.pool, tenant).await?;
    let base = format!("/admin/ui/t/{}/keys", seg(tenant));
    let body = html! {
        h1 { "API keys" }
        @if let Some(m) = minted { (m) }
        form.stack method="post" action=(base) {
            (layout::csrf(ctx))
            h2 { "Create a key" }
            label for="label" { "Label (optional)" }
            input id="label" name="label" type="text" maxlength="200";
            label.check { input type="checkbox" name="admin" value="1"; " Admin key (any tenant, /admin, this console)" }
            button type="submit" { "Create key" }
        }
        h2 { "Keys of " (tenant) }
        table id="keys" {
            thead { tr { th scope="col" { "Key id" } th scope="col" { "Label" } th scope="col" { "Admin" } th scope="col" { "Created" } th scope="col" { "Status" } } }
            tbody { @for k in &rows { tr {
                td { code { (k.key_id) } }
                td { (k.label.as_deref().unwrap_or("")) }
                td { @if k.is_admin { "admin" } @else { "tenant" } }
                td { (layout::when(&k.created_at)) }
                td { @if let Some(r) = &k.revoked_at { "revoked " (layout::when(r)) } @else {
                    form.inline method="post" action={ (base) "/" (seg(&k.key_id)) "/revoke" } data-confirm="Revoke this key?" {
                        (layout::csrf(ctx))
                        button.danger type="submit" aria-label={ "Revoke key " (k.key_id) } { "Revoke" }
                    }
                } }
            } } }
        }
    };
    Ok(html(StatusCode::OK, layout::page(ctx, Some(tenant), "API keys", body)))
}

/// The tenant's keys.
pub async fn list(
    State(st): State<AppState>,
    Extension(ctx): Extension<Ctx>,
    Path(tenant): Path<String>,
) -> PageResult {
    keys_page(&st, &ctx, super::tenant(&tenant)?, None).await
}

/// Mints a key and shows its secret once (never stored, never logged).
pub async fn create(
    State(st): State<AppState>,
    Extension(ctx): Extension<Ctx>,
    Path(tenant): Path<String>,
    Form(form): Form<HashMap<String, String>>,
) -> PageResult {
    let tenant = super::tenant(&tenant)?;
    let label = form.get("label").map(|s| s.trim()).filter(|s| !s.is_empty());
    if label.is_some_and(|l| l.chars().count() > 200) {
        return Err(PageError::bad("A label is at most 200 characters."));
    }
    let admin = form.contains_key("admin");
    let minted = keys::create(&st.pool, tenant, admin, label).await?;
    let shown = html! {
        section.result role="status" {
            h2 { "Key created: copy it now" }
            p { "This is the only time the secret is shown; mnemo keeps its sha256 only." }
            output id="new-key" { code { (minted.secret) } }
        }
    };
    keys_page(&st, &ctx, tenant, Some(shown)).await
}

/// Revokes a key of the tenant.
pub async fn revoke(
    State(st): State<AppState>,
    Extension(_ctx): Extension<Ctx>,
    Path((tenant, key_id)): Path<(String, String)>,
) -> PageResult {
    let tenant = super::tenant(&tenant)?;
    if !keys::revoke(&st.pool, tenant, &key_id).await? {
        return Err(PageError::not_found("Live key"));
    }
    Ok(see_other(&format!("/admin/ui/t/{}/keys", seg(tenant))))
}
