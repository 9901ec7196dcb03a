//! Receipts: a subject's list, one receipt with its signature verdict, and replay (the verdict
//! and, when the bytes differ, a line diff of the two renderings).

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Form};
use maud::{html, Markup};

use crate::console::diff::{self, Line};
use crate::console::{html, layout, seg, Ctx, PageError, PageResult};
use crate::db;
use crate::receipts::canonical::parse_stored;
use crate::receipts::signing::verify;
use crate::services::replay::{rebuild_text, replay as run_replay, ReplayDeps, ReplayError};
use crate::state::AppState;

/// A subject's receipts, newest first (tombstones included).
pub async fn list(
    State(st): State<AppState>,
    Extension(ctx): Extension<Ctx>,
    Path((tenant, subject)): Path<(String, String)>,
) -> PageResult {
    let tenant = super::tenant(&tenant)?;
    let subject = super::subject(&subject)?;
    let mut tx = db::scope::begin(&st.pool, tenant).await?;
    let rows = db::receipts::list(&mut tx, tenant, subject, None, None, None, 200, true).await?;
    drop(tx);
    let base = format!("/admin/ui/t/{}/receipts/", seg(tenant));
    let body = html! {
        h1 { "Receipts of " code { (subject) } }
        @if rows.is_empty() { p { "No receipts. A context call with emit_receipt: true writes one." } }
        @else { table {
            thead { tr { th scope="col" { "Receipt" } th scope="col" { "Mode" } th scope="col" { "Status" } th scope="col" { "Chain seq" } th scope="col" { "Created" } } }
            tbody { @for r in &rows { tr {
                td { a href={ (base) (seg(&r.receipt_id)) } { code { (r.receipt_id) } } }
                td { (r.mode) } td { (r.status) } td.num { (r.seq) } td { (layout::when(&r.created_at)) }
            } } }
        } }
    };
    Ok(html(StatusCode::OK, layout::page(&ctx, Some(tenant), "Receipts", body)))
}

async fn receipt_page(
    st: &AppState,
    ctx: &Ctx,
    tenant: &str,
    id: &str,
    result: Option<Markup>,
    current: bool,
) -> PageResult {
    let mut tx = db::scope::begin(&st.pool, tenant).await?;
    let row = db::receipts::get(&mut tx, tenant, id).await?.ok_or_else(|| PageError::not_found("Receipt"))?;
    drop(tx);
    let body_json = parse_stored(&row.body)?;
    let v = verify(&body_json, &st.signing_keys);
    let action = format!("/admin/ui/t/{}/receipts/{}/replay", seg(tenant), seg(id));
    let body = html! {
        h1 { "Receipt " code { (row.receipt_id) } }
        dl.facts {
            dt { "Subject" } dd { a href={ "/admin/ui/t/" (seg(tenant)) "/subjects/" (seg(&row.subject_id)) } { (row.subject_id) } }
            dt { "Mode" } dd { (row.mode) }
            dt { "Status" } dd { (row.status) }
            dt { "Chain" } dd { "seq " (row.seq) " · hash " code { (row.receipt_hash) } }
            dt { "Created" } dd { (layout::when(&row.created_at)) }
            dt { "Signature" } dd id="verdict" {
                strong { (v.reason) }
                @if let Some(k) = &v.key_id { " (key " (k) ")" }
                @match v.valid { Some(true) => " ✓ valid", Some(false) => " ✗ invalid", None => " (not checked)" }
            }
        }
        form.inline method="post" action=(action) {
            (layout::csrf(ctx))
            label for="mode" { "Replay" }
            select id="mode" name="mode" {
                option value="as_of" selected[!current] { "as of the receipt (byte-exact)" }
                option value="current" selected[current] { "against today's memories" }
            }
            button type="submit" { "Replay" }
        }
        @if let Some(r) = result { (r) }
        details { summary { "Stored body" } pre { (layout::pretty(&body_json)) } }
    };
    Ok(html(StatusCode::OK, layout::page(ctx, Some(tenant), "Receipt", body)))
}

/// One receipt and its signature verdict.
pub async fn show(
    State(st): State<AppState>,
    Extension(ctx): Extension<Ctx>,
    Path((tenant, id)): Path<(String, String)>,
) -> PageResult {
    receipt_page(&st, &ctx, super::tenant(&tenant)?, &id, None, false).await
}

/// Replays the receipt and shows the verdict (and the diff when the bytes differ).
pub async fn replay(
    State(st): State<AppState>,
    Extension(ctx): Extension<Ctx>,
    Path((tenant, id)): Path<(String, String)>,
    Form(form): Form<HashMap<String, String>>,
) -> PageResult {
    let tenant = super::tenant(&tenant)?;
    let current = form.get("mode").is_some_and(|m| m == "current");
    let deps = ReplayDeps {
        pool: &st.pool,
        embedder: &st.embedder,
        cache: &st.task_vectors,
        subjects: &st.subjects,
        keys: &st.signing_keys,
    };
    let result = match run_replay(&deps, tenant, &id, current).await {
        Ok(v) => {
            let reproduced = v["reproduced"] == true;
            let diff_view = if reproduced {
                None
            } else {
                // The receipt keeps only the hash of what was shown; the nearest bytes are the
                // rebuild as of the receipt, compared here with today's.
                let then = rebuild_text(&deps, tenant, &id, false).await;
                let now = rebuild_text(&deps, tenant, &id, true).await;
                match (then, now) {
                    (Ok(a), Ok(b)) => Some(diff_markup(&a, &b)),
                    _ => None,
                }
            };
            html! {
                section.result aria-labelledby="replay" aria-live="polite" {
                    h2 id="replay" { "Replay (" (if current { "current" } else { "as of" }) ")" }
                    p id="replay-verdict" class=(if reproduced { "ok" } else { "error" }) {
                        @if reproduced { "Reproduced: the rebuilt bytes hash to the receipt's context hash." }
                        @else { "Differs: " (v["reason"].as_str().unwrap_or("today's memories render other bytes than the receipt's")) }
                    }
                    dl.facts {
                        dt { "Original hash" } dd { code { (v["diff"]["context_hash"]["original"].as_str().unwrap_or("")) } }
                        dt { "Replay hash" } dd { code { (v["diff"]["context_hash"]["replay"].as_str().unwrap_or("")) } }
                        dt { "Replay receipt" } dd { code { (v["replay_receipt_id"].as_str().unwrap_or("—")) } }
                    }
                    @if let Some(d) = diff_view { (d) }
                }
            }
        }
        Err(ReplayError::NotFound) => return Err(PageError::not_found("Receipt")),
        Err(ReplayError::Unreplayable { reason, message }) => html! {
            p.error role="alert" id="replay-verdict" { "Not replayable (" (reason) "): " (message) }
        },
        Err(ReplayError::Internal(e)) => return Err(PageError::Internal(e)),
    };
    receipt_page(&st, &ctx, tenant, &id, Some(result), current).await
}

fn diff_markup(then: &str, now: &str) -> Markup {
    html! {
        h3 { "Byte diff: as of the receipt → today" }
        pre.diff id="replay-diff" { @for l in diff::lines(then, now) { @match l {
            Line::Same(s) => span.same { "  " (s) "\n" },
            Line::Removed(s) => del { "- " (s) "\n" },
            Line::Added(s) => ins { "+ " (s) "\n" },
        } } }
    }
}
