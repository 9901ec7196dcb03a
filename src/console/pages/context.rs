//! "What the agent sees": a task, a budget and an `as_of` instant render the bundle, with each
//! included item's score and the items that just missed the budget. Read-only: no receipt.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Extension;
use maud::html;

use crate::console::{html, layout, seg, Ctx, PageError, PageResult};
use crate::db;
use crate::model::limits::{MAX_BUDGET_TOKENS, MAX_TASK_CHARS};
use crate::model::time::parse_datetime;
use crate::policy::eval::PolicyMode;
use crate::services::context::{assemble, ContextRequest, PolicyContext};
use crate::state::AppState;

/// The largest budget the form takes (the API's).
const MAX_BUDGET: usize = MAX_BUDGET_TOKENS as usize;

/// How many of the items that did not fit are shown.
const MISSED_SHOWN: usize = 10;

/// The form and, when a task is given, the bundle.
pub async fn show(
    State(st): State<AppState>,
    Extension(ctx): Extension<Ctx>,
    Path((tenant, subject)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> PageResult {
    let tenant = super::tenant(&tenant)?;
    let subject = super::subject(&subject)?;
    let task = q.get("task").map(|s| s.trim()).unwrap_or_default();
    if task.chars().count() > MAX_TASK_CHARS {
        return Err(PageError::bad(format!("The task is at most {MAX_TASK_CHARS} characters.")));
    }
    let max_tokens: usize = match q.get("max_tokens").map(|s| s.trim()).filter(|s| !s.is_empty()) {
        None => 1000,
        Some(s) => s
            .parse()
            .ok()
            .filter(|n| (1..=MAX_BUDGET).contains(n))
            .ok_or_else(|| PageError::bad(format!("The budget is 1-{MAX_BUDGET} tokens.")))?,
    };
    let as_of_text = q.get("as_of").map(|s| s.trim()).unwrap_or_default();
    let as_of = match as_of_text {
        "" => None,
        s => Some(
            parse_datetime(s)
                .ok_or_else(|| PageError::bad("as_of must be an ISO-8601 instant, e.g. 2026-03-02T10:00:00Z."))?,
        ),
    }
    .map(crate::model::time::truncate_micros);
    let mut tx = db::scope::begin(&st.pool, tenant).await?;
    let (first, last) = db::console::activity_span(&mut tx, tenant, subject).await?;
    let config = db::tenants::config(&mut tx, tenant).await?;
    let active = crate::services::policy::active(&mut tx, tenant).await?;
    drop(tx);
    let bundle = if task.is_empty() {
        None
    } else {
        let req = ContextRequest {
            subject_id: subject.to_string(),
            task: task.to_string(),
            max_tokens,
            session_id: q.get("session_id").map(|s| s.trim().to_string()).filter(|s| !s.is_empty()),
            as_of,
            options: Default::default(),
            policy: PolicyContext {
                active: active.map(Arc::new),
                mode: PolicyMode::from_config(&config),
                caller_type: None,
                caller_id: None,
                trust: crate::model::voice::Trust::from_config(&config),
            },
        };
        Some(assemble(&st.pool, &st.embedder, &st.task_vectors, &st.subjects, tenant, &req).await?)
    };
    let now = chrono::Utc::now();
    let lo = first.unwrap_or(now).timestamp() - 1;
    let hi = last.unwrap_or(now).max(now).timestamp();
    let at = as_of.map_or(hi, |t| t.timestamp()).clamp(lo, hi);
    let action = format!("/admin/ui/t/{}/subjects/{}/context", seg(tenant), seg(subject));
    let body = html! {
        h1 { "What the agent sees: " code { (subject) } }
        form.stack method="get" action=(action) id="context-form" {
            label for="task" { "Task" }
            textarea id="task" name="task" rows="2" required { (task) }
            div.row {
                div { label for="max_tokens" { "Budget (tokens)" }
                      input id="max_tokens" name="max_tokens" type="number" min="1" max=(MAX_BUDGET) value=(max_tokens); }
                div { label for="as_of" { "As of (ISO-8601, empty = now)" }
                      input id="as_of" name="as_of" type="text" value=(as_of_text) placeholder="2026-03-02T10:00:00Z"; }
            }
            label for="as_of_slider" { "As of (slider over the subject's history)" }
            input id="as_of_slider" type="range" min=(lo) max=(hi) step="1" value=(at) data-target="as_of" aria-describedby="slider-help";
            p.note id="slider-help" { "Moving the slider sets “As of” and re-renders (needs JavaScript); the text field works without it." }
            button type="submit" { "Render bundle" }
        }
        @if let Some(b) = &bundle {
            @let included: Vec<_> = b.considered.iter().enumerate().filter(|(_, c)| c.included).collect();
            @let missed: Vec<_> = b.considered.iter().enumerate().filter(|(_, c)| !c.included).take(MISSED_SHOWN).collect();
            section aria-labelledby="bundle" {
                h2 id="bundle" { "Bundle as of " (layout::when(&b.as_of)) }
                p { (b.token_estimate) " of " (max_tokens) " tokens · " (included.len()) " item(s) included of " (b.considered.len()) " ranked" }
                pre.bundle id="assembled" { (b.assembled_context) }
            }
            section aria-labelledby="included" {
                h2 id="included" { "Included, in rank order" }
                (items_table(&included))
            }
            section aria-labelledby="missed" {
                h2 id="missed" { "Just missed the budget" }
                @if missed.is_empty() { p { "Nothing was left out." } } @else { (items_table(&missed)) }
            }
        }
    };
    Ok(html(StatusCode::OK, layout::page(&ctx, Some(tenant), "What the agent sees", body)))
}

fn items_table(items: &[(usize, &crate::services::context::Considered)]) -> maud::Markup {
    html! {
        table.items {
            thead { tr { th scope="col" { "Rank" } th scope="col" { "Score" } th scope="col" { "Type" } th scope="col" { "Line" } } }
            tbody { @for (rank, c) in items { tr.{ @if c.included { "included" } @else { "missed" } } {
                td.num { (rank + 1) }
                td.num { (format!("{:.6}", c.score)) }
                td { @if c.is_memory { "memory" } @else { "episode" } }
                td { (c.line) }
            } } }
        }
    }
}
