//! A tenant's subjects: search by id, counts, last activity.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Extension;
use maud::html;

use crate::console::{html, layout, seg, Ctx, PageResult};
use crate::db;
use crate::state::AppState;

const PAGE: i64 = 50;

/// The subject list, most recently active first.
pub async fn list(
    State(st): State<AppState>,
    Extension(ctx): Extension<Ctx>,
    Path(tenant): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> PageResult {
    let tenant = super::tenant(&tenant)?;
    let search = q.get("q").map(|s| s.trim()).unwrap_or_default();
    let page: i64 = q.get("page").and_then(|p| p.parse().ok()).unwrap_or(0).clamp(0, 100_000);
    let mut tx = db::scope::begin(&st.pool, tenant).await?;
    let (rows, total) = db::console::subjects(&mut tx, tenant, search, PAGE, page * PAGE).await?;
    drop(tx);
    let base = format!("/admin/ui/t/{}/subjects", seg(tenant));
    let body = html! {
        h1 { "Subjects" }
        form.inline method="get" action=(base) role="search" {
            label for="q" { "Search subject ids" }
            input id="q" name="q" type="search" value=(search);
            button type="submit" { "Search" }
        }
        p { (total) " subject(s)" @if !search.is_empty() { " matching “" (search) "”" } }
        table {
            thead { tr {
                th scope="col" { "Subject" } th scope="col" { "Episodes" } th scope="col" { "Memories" }
                th scope="col" { "Last activity" }
            } }
            tbody {
                @for r in &rows {
                    tr {
                        td { a href={ (base) "/" (seg(&r.subject_id)) } { (r.subject_id) } }
                        td.num { (r.episode_count) }
                        td.num { (r.memory_count) }
                        td { (layout::when_opt(&r.last_activity)) }
                    }
                }
            }
        }
        nav.pager aria-label="Pages" {
            @if page > 0 { a href={ (base) "?q=" (seg(search)) "&page=" (page - 1) } { "← Previous" } }
            @if (page + 1) * PAGE < total { a href={ (base) "?q=" (seg(search)) "&page=" (page + 1) } { "Next →" } }
        }
    };
    Ok(html(StatusCode::OK, layout::page(&ctx, Some(tenant), "Subjects", body)))
}
