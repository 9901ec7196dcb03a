//! Every tenant mnemo has seen (an admin key's session: its own tenant).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Extension;
use maud::html;

use crate::console::{html, layout, seg, Ctx, PageResult};
use crate::services::tenant_config;
use crate::state::AppState;

/// The tenant list (the default tenant always, even before it wrote anything).
pub async fn list(State(st): State<AppState>, Extension(ctx): Extension<Ctx>) -> PageResult {
    let mut tenants = tenant_config::list_tenants(&st.pool).await?;
    if !tenants.iter().any(|(t, _)| t == crate::model::text::DEFAULT_TENANT) {
        tenants.insert(0, (crate::model::text::DEFAULT_TENANT.to_string(), chrono::Utc::now()));
    }
    // An admin key's session sees its own tenant only.
    if let Some(own) = ctx.session.bound_tenant() {
        tenants.retain(|(t, _)| t == own);
        if tenants.is_empty() {
            tenants.push((own.to_string(), chrono::Utc::now()));
        }
    }
    let body = html! {
        h1 { "Tenants" }
        table {
            thead { tr { th scope="col" { "Tenant" } th scope="col" { "First seen" } th scope="col" { "Pages" } } }
            tbody {
                @for (t, at) in &tenants {
                    @let base = format!("/admin/ui/t/{}", seg(t));
                    tr {
                        td { a href={ (base) "/subjects" } { (t) } }
                        td { (layout::when(at)) }
                        td.links {
                            a href={ (base) "/keys" } { "keys" } " · "
                            a href={ (base) "/config" } { "config" } " · "
                            a href={ (base) "/labels" } { "labels" } " · "
                            a href={ (base) "/jobs" } { "jobs" }
                        }
                    }
                }
            }
        }
    };
    Ok(html(StatusCode::OK, layout::page(&ctx, None, "Tenants", body)))
}
