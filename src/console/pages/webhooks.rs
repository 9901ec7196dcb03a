//! The webhook outbox (every tenant, as `/admin/webhooks`): deliveries, dead letters, retry.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Extension;
use maud::html;

use crate::console::{html, layout, see_other, seg, Ctx, PageError, PageResult};
use crate::services::webhooks::admin::{self, RetryRefused, STATUSES};
use crate::state::AppState;

/// Counts and one page of events, filtered by status and tenant.
pub async fn list(
    State(st): State<AppState>,
    Extension(ctx): Extension<Ctx>,
    Query(q): Query<HashMap<String, String>>,
) -> PageResult {
    let status = q.get("status").map(String::as_str).filter(|s| STATUSES.contains(s));
    let tenant = q.get("tenant_id").map(|s| s.trim()).filter(|s| !s.is_empty());
    let stats = admin::stats(&st.pool, &st.webhooks, tenant).await?;
    let (events, more) = admin::list(&st.pool, status, tenant, 100, 0).await?;
    let body = html! {
        h1 { "Webhooks" }
        p { @if stats.enabled { "Deliveries are on" @if stats.signed { " and signed" } "." } @else { "Webhooks are off (MNEMO_WEBHOOK_URL unset)." } }
        ul.counts { @for (s, n) in &stats.counts { li { a href={ "?status=" (s) } { (s) ": " (n) } } } }
        form.inline method="get" action="/admin/ui/webhooks" {
            label for="status" { "Status" }
            select id="status" name="status" {
                option value="" { "any" }
                @for s in STATUSES { option value=(s) selected[status == Some(s)] { (s) } }
            }
            label for="tenant_id" { "Tenant" }
            input id="tenant_id" name="tenant_id" type="text" value=(tenant.unwrap_or(""));
            button type="submit" { "Filter" }
        }
        table {
            thead { tr { th scope="col" { "Event" } th scope="col" { "Tenant" } th scope="col" { "Status" } th scope="col" { "Attempts" } th scope="col" { "Last error" } th scope="col" { "Created" } th scope="col" { "" } } }
            tbody { @for e in &events { tr {
                td { (e.event) br; code { (e.id) } }
                td { (e.tenant_id) }
                td { (e.status) }
                td.num { (e.attempts) "/" (e.max_attempts) }
                td { (e.last_error.as_deref().unwrap_or("")) @if let Some(h) = e.http_status { " (HTTP " (h) ")" } }
                td { (e.created_at) }
                td { @if e.status == "dead_letter" {
                    form.inline method="post" action={ "/admin/ui/webhooks/" (seg(&e.id)) "/retry" } {
                        (layout::csrf(&ctx))
                        button type="submit" { "Retry" }
                    }
                } }
            } } }
        }
        @if more { p.note { "Showing the newest 100." } }
    };
    Ok(html(StatusCode::OK, layout::page(&ctx, None, "Webhooks", body)))
}

/// Queues a dead-lettered event again.
pub async fn retry(State(st): State<AppState>, Extension(_ctx): Extension<Ctx>, Path(id): Path<String>) -> PageResult {
    match admin::retry(&st.pool, &st.webhooks, &id).await? {
        Ok(_) => Ok(see_other("/admin/ui/webhooks?status=pending")),
        Err(RetryRefused::NotFound) => Err(PageError::not_found("Webhook event")),
        Err(RetryRefused::NotRetryable(m)) => Err(PageError::Client(StatusCode::CONFLICT, m)),
    }
}
