//! A tenant's compile jobs.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Extension;
use maud::html;

use crate::console::{html, layout, seg, Ctx, PageResult};
use crate::db;
use crate::state::AppState;

/// The newest 200 jobs (finished ones are kept for `MNEMO_COMPILE_JOB_RETENTION_HOURS`).
pub async fn list(
    State(st): State<AppState>,
    Extension(ctx): Extension<Ctx>,
    Path(tenant): Path<String>,
) -> PageResult {
    let tenant = super::tenant(&tenant)?;
    let mut tx = db::scope::begin(&st.pool, tenant).await?;
    let jobs = db::console::jobs(&mut tx, tenant, 200).await?;
    drop(tx);
    let body = html! {
        h1 { "Compile jobs" }
        @if jobs.is_empty() { p { "No compile jobs (async compiles create them)." } }
        @else { table {
            thead { tr { th scope="col" { "Job" } th scope="col" { "Subject" } th scope="col" { "Status" } th scope="col" { "Memories" } th scope="col" { "Attempts" } th scope="col" { "Created" } th scope="col" { "Heartbeat" } th scope="col" { "Error" } } }
            tbody { @for j in &jobs { tr {
                td { code { (j.id) } }
                td { a href={ "/admin/ui/t/" (seg(tenant)) "/subjects/" (seg(&j.subject_id)) } { (j.subject_id) } }
                td { (j.status) } td.num { (j.memories_created) } td.num { (j.attempts) }
                td { (layout::when(&j.created_at)) } td { (layout::when_opt(&j.heartbeat_at)) }
                td { (j.error.as_deref().unwrap_or("")) }
            } } }
        } }
    };
    Ok(html(StatusCode::OK, layout::page(&ctx, Some(tenant), "Compile jobs", body)))
}
