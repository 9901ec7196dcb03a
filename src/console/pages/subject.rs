//! One subject: sessions, episodes, memories by kind and status, and each claim's history on a
//! time axis (which value held when, what superseded it, from which episode).

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Extension;
use chrono::{DateTime, Utc};
use maud::{html, Markup};

use crate::compile::text::episode_text;
use crate::console::{html, layout, seg, Ctx, PageResult};
use crate::db;
use crate::db::console::ClaimVersion;
use crate::model::memory::Memory;
use crate::services::{timeline, working_memory};
use crate::state::AppState;

const LIMIT: i64 = 200;

/// The subject page.
pub async fn show(
    State(st): State<AppState>,
    Extension(ctx): Extension<Ctx>,
    Path((tenant, subject)): Path<(String, String)>,
) -> PageResult {
    let tenant = super::tenant(&tenant)?;
    let subject = super::subject(&subject)?;
    let (sessions, _) = working_memory::list(&st.pool, tenant, subject, 50, 0).await?;
    let q = timeline::PageQuery {
        subject_id: subject.to_string(),
        limit: LIMIT,
        offset: 0,
        newest_first: true,
        active_only: false,
        filter: Default::default(),
    };
    let page = timeline::page(&st.pool, tenant, &q).await?;
    let mut tx = db::scope::begin(&st.pool, tenant).await?;
    let claims = db::console::claim_history(&mut tx, tenant, subject).await?;
    drop(tx);
    let base = format!("/admin/ui/t/{}/subjects/{}", seg(tenant), seg(subject));
    let mut by_kind: BTreeMap<(&str, &str), Vec<&Memory>> = BTreeMap::new();
    for m in &page.memories {
        by_kind.entry((m.kind.as_str(), m.status.as_str())).or_default().push(m);
    }
    let mut by_claim: BTreeMap<&str, Vec<&ClaimVersion>> = BTreeMap::new();
    for c in &claims {
        by_claim.entry(c.claim_key.as_str()).or_default().push(c);
    }
    let body = html! {
        h1 { "Subject " code { (subject) } }
        nav.actions aria-label="Subject" {
            a.button href={ (base) "/context" } { "What the agent sees" }
            a.button href={ (base) "/receipts" } { "Receipts" }
            a.button.danger href={ (base) "/erase" } { "Erase subject…" }
        }
        section aria-labelledby="claims" {
            h2 id="claims" { "Claim history" }
            @if by_claim.is_empty() { p { "No memory of this subject carries a claim." } }
            @for (key, versions) in &by_claim { (claim_block(key, versions)) }
        }
        section aria-labelledby="memories" {
            h2 id="memories" { "Memories by kind and status" }
            @if page.memories_has_more { p.note { "Showing the newest " (LIMIT) "." } }
            @for ((kind, status), ms) in &by_kind {
                details open[*status == "active"] {
                    summary { (kind) " · " (status) " (" (ms.len()) ")" }
                    ul.memories { @for m in ms { li.{ "status-" (m.status) } {
                        (m.content) " "
                        span.meta { "valid " (layout::when(&m.valid_from)) " → " (layout::when_opt(&m.valid_to)) }
                        " " a.erase href={ (base) "/erase-item?memory=" (m.id) } { "Erase…" }
                    } } }
                }
            }
        }
        section aria-labelledby="sessions" {
            h2 id="sessions" { "Sessions" }
            @if sessions.is_empty() { p { "No sessions." } }
            @else { table {
                thead { tr { th scope="col" { "Session" } th scope="col" { "Episodes" } th scope="col" { "First" } th scope="col" { "Last" } th scope="col" { "Snapshot" } } }
                tbody { @for s in &sessions { tr {
                    td { code { (s.session_id) } } td.num { (s.episode_count) }
                    td { (layout::when(&s.first_at)) } td { (layout::when(&s.last_at)) }
                    td { @if let Some(id) = s.snapshot_id { code { (id) } } @else { "—" } }
                } } }
            } }
        }
        section aria-labelledby="episodes" {
            h2 id="episodes" { "Episodes" }
            @if page.episodes_has_more { p.note { "Showing the newest " (LIMIT) "." } }
            ol.episodes { @for e in page.episodes.iter().rev() {
                li id={ "ep-" (e.id) } {
                    span.meta { (layout::when(&e.occurred_at)) " · " (e.source) "/" (e.kind)
                        @if let Some(s) = &e.session_id { " · session " (s) } }
                    " " a.erase href={ (base) "/erase-item?episode=" (e.id) } { "Erase…" }
                    p { (episode_text(&e.payload)) }
                }
            } }
        }
    };
    Ok(html(StatusCode::OK, layout::page(&ctx, Some(tenant), subject, body)))
}

/// Width of the time axis drawing, in SVG units.
const W: f64 = 1000.0;
const ROW: f64 = 28.0;

/// The last 8 hex digits of an id (the first ones are a ULID's time and repeat).
fn short(id: &uuid::Uuid) -> String {
    let s = id.simple().to_string();
    s[s.len() - 8..].to_string()
}

fn claim_block(key: &str, versions: &[&ClaimVersion]) -> Markup {
    let now = Utc::now();
    let start = versions.iter().map(|v| v.recorded_at).min().unwrap_or(now);
    let end = versions.iter().map(|v| v.superseded_at.unwrap_or(now)).max().unwrap_or(now).max(start);
    let span = (end - start).num_milliseconds().max(1) as f64;
    let x = |t: DateTime<Utc>| ((t - start).num_milliseconds() as f64 / span * (W - 200.0)).clamp(0.0, W - 200.0);
    let height = ROW * versions.len() as f64 + 24.0;
    let value_of = |v: &ClaimVersion| v.value.clone().unwrap_or_else(|| v.content.clone());
    let find =
        |id: Option<uuid::Uuid>| id.and_then(|id| versions.iter().find(|v| v.id == id)).map(|v| v.content.clone());
    html! {
        article.claim data-claim=(key) {
            h3 { code { (key) } }
            div.scroll { svg.timeline viewBox={ "0 0 " (W) " " (height) } role="img"
                aria-label={ "Values of " (key) " over transaction time" } {
                @for (i, v) in versions.iter().enumerate() {
                    @let x0 = x(v.recorded_at);
                    @let x1 = x(v.superseded_at.unwrap_or(now)).max(x0 + 4.0);
                    @let y = ROW * i as f64 + 4.0;
                    rect class={ "bar status-" (v.status) } x=(x0) y=(y) width=(x1 - x0) height=(ROW - 8.0) rx="3" {
                        title { (value_of(v)) ": " (layout::when(&v.recorded_at)) " → " (layout::when_opt(&v.superseded_at)) }
                    }
                    text x=(x1 + 6.0) y=(y + ROW / 2.0 + 1.0) { (value_of(v)) }
                }
                text.axis x="0" y=(height - 4.0) { (layout::when(&start)) }
                text.axis x=(W - 200.0) y=(height - 4.0) text-anchor="end" { (layout::when(&end)) }
            } }
            table.history {
                thead { tr {
                    th scope="col" { "Value" } th scope="col" { "Status" } th scope="col" { "Believed (recorded → superseded)" }
                    th scope="col" { "Valid (from → to)" } th scope="col" { "Superseded by" } th scope="col" { "From episode" }
                } }
                tbody { @for v in versions { tr.{ "status-" (v.status) } {
                    td { strong { (value_of(v)) } br; span.meta { (v.content) } }
                    td { (v.status) }
                    td { (layout::when(&v.recorded_at)) " → " (layout::when_opt(&v.superseded_at)) }
                    td { (layout::when(&v.valid_from)) " → " (layout::when_opt(&v.valid_to)) }
                    td { @if let Some(by) = find(v.superseded_by) { (by) @if let Some(r) = &v.rule { " (" (r) ")" } } @else { "—" } }
                    td { @for e in &v.source_episode_ids { a href={ "#ep-" (e) } { code { (short(e)) } } " " } }
                } } }
            }
        }
    }
}
