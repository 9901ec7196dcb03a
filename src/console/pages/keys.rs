//! API keys of a tenant: create (the secret shown once), list, revoke.

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Form};
use maud::{html, Markup};

use crate::console::{html, layout, see_other, seg, Ctx, PageError, PageResult};
use crate::services::keys;
use crate::state::AppState;

/// What each scope may do, as the page says it.
fn scopes_note() -> Markup {
    html! {
        details.note id="key-scopes" open {
            summary { "What each key may do" }
            ul {
                li { strong { "Tenant key" } ": reads and writes this tenant's data through /v1 and MCP. \
                    A tenant header naming another tenant is refused (403 tenant_mismatch)." }
                li { strong { "Admin key" } ": also this tenant's /admin endpoints (config, policy, labels, \
                    export and import of its own subjects) and this console, for this tenant only. It cannot \
                    list tenants, see the webhook outbox, or read, import into or export another tenant." }
                li { strong { "Operator key" } ": an admin of every tenant, as MNEMO_API_KEY is: the tenant \
                    header may name any tenant, and it reaches the tenant list, the webhook outbox and \
                    import/export across tenants. Only an operator can create one." }
            }
        }
    }
}

async fn keys_page(st: &AppState, ctx: &Ctx, tenant: &str, minted: Option<Markup>) -> PageResult {
    let rows = keys::list(&st.pool, tenant).await?;
    let operator = ctx.session.bound_tenant().is_none();
    let base = format!("/admin/ui/t/{}/keys", seg(tenant));
    let body = html! {
        h1 { "API keys" }
        @if let Some(m) = minted { (m) }
        form.stack method="post" action=(base) {
            (layout::csrf(ctx))
            h2 { "Create a key" }
            label for="label" { "Label (optional)" }
            input id="label" name="label" type="text" maxlength="200";
            fieldset {
                legend { "Scope" }
                label.check { input type="radio" name="scope" value="tenant" checked; " Tenant key: the /v1 API and MCP, for " (tenant) " only" }
                label.check { input type="radio" name="scope" value="admin"; " Admin key: also /admin and this console, for " (tenant) " only" }
                @if operator {
                    label.check { input type="radio" name="scope" value="operator"; " Operator key: an admin of every tenant" }
                }
            }
            (scopes_note())
            button type="submit" { "Create key" }
        }
        h2 { "Keys of " (tenant) }
        table id="keys" {
            thead { tr { th scope="col" { "Key id" } th scope="col" { "Label" } th scope="col" { "Scope" } th scope="col" { "Created" } th scope="col" { "Status" } } }
            tbody { @for k in &rows { tr {
                td { code { (k.key_id) } }
                td { (k.label.as_deref().unwrap_or("")) }
                td { @if k.is_operator { "operator" } @else if k.is_admin { "admin" } @else { "tenant" } }
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
    let scope = match form.get("scope").map(String::as_str) {
        None | Some("tenant") => keys::Scope::Tenant,
        Some("admin") => keys::Scope::Admin,
        // An admin key bound to its tenant must not mint a key that reaches every tenant.
        Some("operator") if ctx.session.bound_tenant().is_none() => keys::Scope::Operator,
        Some("operator") => {
            return Err(PageError::Client(StatusCode::FORBIDDEN, "Only an operator can create an operator key.".into()))
        }
        Some(_) => return Err(PageError::bad("The scope is tenant, admin or operator.")),
    };
    let minted = keys::create(&st.pool, tenant, scope, label).await?;
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
