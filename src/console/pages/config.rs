//! A tenant's config (view and patch) and its policy bundles (upload, activate).

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Form};
use maud::{html, Markup};

use crate::console::{html, layout, see_other, seg, Ctx, PageError, PageResult};
use crate::services::policy;
use crate::services::tenant_config::{self, PatchError};
use crate::state::AppState;

async fn config_page(st: &AppState, ctx: &Ctx, tenant: &str, status: StatusCode, note: Option<Markup>) -> PageResult {
    let doc = tenant_config::get(&st.pool, tenant).await?;
    let bundles = policy::list(&st.pool, tenant).await?;
    let active = policy::active_doc(&st.pool, tenant).await?;
    let base = format!("/admin/ui/t/{}", seg(tenant));
    let body = html! {
        h1 { "Config & policy" }
        @if let Some(n) = note { (n) }
        section aria-labelledby="config" {
            h2 id="config" { "Tenant config (version " (doc.version) ")" }
            pre id="config-doc" { (layout::pretty(&doc.config)) }
            form.stack method="post" action={ (base) "/config" } {
                (layout::csrf(ctx))
                label for="patch" { "Patch (a JSON object; null removes a key)" }
                textarea id="patch" name="patch" rows="4" required placeholder=r#"{"receipts": "always"}"# {}
                input type="hidden" name="expected_version" value=(doc.version);
                button type="submit" { "Apply patch" }
            }
        }
        section aria-labelledby="policy" {
            h2 id="policy" { "Policy bundles" }
            @if let Some(a) = &active {
                p { "Active: " code { (a["bundle_hash"].as_str().unwrap_or("")) } " since " (a["activated_at"].as_str().unwrap_or("")) }
                details { summary { "Active bundle text" } pre { (a["content"].as_str().unwrap_or("")) } }
            } @else { p { "No active bundle: no policy filters apply." } }
            @if !bundles.is_empty() { table {
                thead { tr { th scope="col" { "Bundle hash" } th scope="col" { "Uploaded" } th scope="col" { "" } } }
                tbody { @for b in &bundles { tr {
                    td { code { (b["bundle_hash"].as_str().unwrap_or("")) } }
                    td { (b["created_at"].as_str().unwrap_or("")) }
                    td { @if b["active"] == true { "active" } @else {
                        form.inline method="post" action={ (base) "/policy/activate" } {
                            (layout::csrf(ctx))
                            input type="hidden" name="bundle_hash" value=(b["bundle_hash"].as_str().unwrap_or(""));
                            button type="submit" { "Activate" }
                        }
                    } }
                } } }
            } }
            form.stack method="post" action={ (base) "/policy/upload" } {
                (layout::csrf(ctx))
                label for="bundle" { "Upload a bundle (YAML or JSON)" }
                textarea id="bundle" name="bundle" rows="6" required {}
                button type="submit" { "Upload" }
            }
        }
    };
    Ok(html(status, layout::page(ctx, Some(tenant), "Config & policy", body)))
}

fn problem(msg: &str) -> Markup {
    html! { p.error role="alert" { (msg) } }
}

/// The config and bundles.
pub async fn show(
    State(st): State<AppState>,
    Extension(ctx): Extension<Ctx>,
    Path(tenant): Path<String>,
) -> PageResult {
    config_page(&st, &ctx, super::tenant(&tenant)?, StatusCode::OK, None).await
}

/// Applies a JSON patch through the same checks as `PATCH /admin/tenants/{id}/config`.
pub async fn patch(
    State(st): State<AppState>,
    Extension(ctx): Extension<Ctx>,
    Path(tenant): Path<String>,
    Form(form): Form<HashMap<String, String>>,
) -> PageResult {
    let tenant = super::tenant(&tenant)?;
    let problem_msg = match patch_error(&st, tenant, &form).await? {
        None => return Ok(see_other(&format!("/admin/ui/t/{}/config", seg(tenant)))),
        Some(m) => m,
    };
    config_page(&st, &ctx, tenant, StatusCode::UNPROCESSABLE_ENTITY, Some(problem(&problem_msg))).await
}

/// Applies the form's patch; the message of why it was refused, or None when applied.
async fn patch_error(st: &AppState, tenant: &str, form: &HashMap<String, String>) -> Result<Option<String>, PageError> {
    let mut body: serde_json::Value = match serde_json::from_str(form.get("patch").map_or("", String::as_str)) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        _ => return Ok(Some("The patch must be a JSON object.".into())),
    };
    if let Some(v) = form.get("expected_version").and_then(|v| v.parse::<i64>().ok()) {
        body["expected_version"] = v.into();
    }
    let outcome = match tenant_config::parse_patch(&body, st.config.access.region.as_deref()) {
        Ok(p) => tenant_config::update(&st.pool, tenant, &p).await?,
        Err(e) => Err(e),
    };
    Ok(match outcome {
        Ok(_) => None,
        Err(PatchError::Invalid(errors)) => {
            Some(errors.iter().map(|e| format!("{}: {}", e.loc.join("."), e.msg)).collect::<Vec<_>>().join("; "))
        }
        Err(PatchError::InvalidPin(m)) => Some(m),
        Err(PatchError::VersionConflict { expected, actual }) => {
            Some(format!("The config changed meanwhile (version {actual}, the form had {expected}); reload and retry."))
        }
    })
}

/// Stores a policy bundle (it is not active until activated).
pub async fn upload(
    State(st): State<AppState>,
    Extension(ctx): Extension<Ctx>,
    Path(tenant): Path<String>,
    Form(form): Form<HashMap<String, String>>,
) -> PageResult {
    let tenant = super::tenant(&tenant)?;
    match policy::store(&st.pool, tenant, form.get("bundle").map_or("", String::as_str)).await? {
        Ok((hash, _)) => {
            let note = html! { p.ok role="status" { "Stored bundle " code { (hash) } "." } };
            config_page(&st, &ctx, tenant, StatusCode::OK, Some(note)).await
        }
        Err(e) => config_page(&st, &ctx, tenant, StatusCode::BAD_REQUEST, Some(problem(&e.to_string()))).await,
    }
}

/// Makes a stored bundle the active one.
pub async fn activate(
    State(st): State<AppState>,
    Extension(_ctx): Extension<Ctx>,
    Path(tenant): Path<String>,
    Form(form): Form<HashMap<String, String>>,
) -> PageResult {
    let tenant = super::tenant(&tenant)?;
    let hash = form.get("bundle_hash").map_or("", String::as_str);
    policy::activate(&st.pool, tenant, hash).await?.ok_or_else(|| PageError::not_found("Policy bundle"))?;
    Ok(see_other(&format!("/admin/ui/t/{}/config", seg(tenant))))
}
