//! The label review queue: suggested sensitivity labels, promoted one memory at a time.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Form};
use maud::html;

use crate::console::{html, layout, see_other, seg, Ctx, PageError, PageResult};
use crate::services::labels::{self, PromoteFailure};
use crate::state::AppState;

/// The tenant's memories with suggestions, newest first.
pub async fn list(
    State(st): State<AppState>,
    Extension(ctx): Extension<Ctx>,
    Path(tenant): Path<String>,
) -> PageResult {
    let tenant = super::tenant(&tenant)?;
    let page = labels::list(&st.pool, tenant, &Default::default(), 100, 0).await?;
    let base = format!("/admin/ui/t/{}/labels", seg(tenant));
    let body = html! {
        h1 { "Label review" }
        p { (page.total) " memory(ies) carry suggested labels." }
        @if !page.rows.is_empty() { table {
            thead { tr { th scope="col" { "Memory" } th scope="col" { "Subject" } th scope="col" { "Labels" } th scope="col" { "Promote" } } }
            tbody { @for r in &page.rows { tr {
                td { (r.content) br; span.meta { (r.kind) " · " (layout::when(&r.created_at)) } }
                td { a href={ "/admin/ui/t/" (seg(tenant)) "/subjects/" (seg(&r.subject_id)) } { (r.subject_id) } }
                td { "suggested: " (r.suggested_labels.join(", ")) br; "applied: " (r.sensitivity_labels.join(", ")) }
                td { form.inline method="post" action={ (base) "/" (r.id) "/promote" } {
                    (layout::csrf(&ctx))
                    fieldset { legend { "Labels to promote" }
                        @for l in &r.suggested_labels { label.check { input type="checkbox" name="label" value=(l) checked; " " (l) } }
                    }
                    button type="submit" { "Promote" }
                } }
            } } }
        } }
    };
    Ok(html(StatusCode::OK, layout::page(&ctx, Some(tenant), "Label review", body)))
}

/// Promotes the checked suggestions of one memory.
pub async fn promote(
    State(st): State<AppState>,
    Extension(_ctx): Extension<Ctx>,
    Path((tenant, memory_id)): Path<(String, String)>,
    Form(form): Form<Vec<(String, String)>>,
) -> PageResult {
    let tenant = super::tenant(&tenant)?;
    let id = uuid::Uuid::parse_str(&memory_id).map_err(|_| PageError::not_found("Memory"))?;
    let requested: Vec<String> = form.into_iter().filter(|(k, _)| k == "label").map(|(_, v)| v).collect();
    match labels::promote(&st.pool, tenant, id, &requested).await {
        Ok(_) => Ok(see_other(&format!("/admin/ui/t/{}/labels", seg(tenant)))),
        Err(PromoteFailure::NotFound) => Err(PageError::not_found("Memory")),
        Err(PromoteFailure::Refused(e)) => Err(PageError::Client(StatusCode::UNPROCESSABLE_ENTITY, e.to_string())),
        Err(PromoteFailure::Db(e)) => Err(e.into()),
    }
}
