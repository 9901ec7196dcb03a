//! Erasing one episode or memory of a subject: a confirmation page, then the signed
//! certificate (the service `POST /v1/subjects/{id}/erase` uses).

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::{Extension, Form};
use maud::html;
use uuid::Uuid;

use crate::console::{html, layout, see_other, seg, Ctx, PageError, PageResult};
use crate::services::erase_items::{self, Items};
use crate::state::AppState;

/// Which item: an episode or a memory, by id.
#[derive(Debug, Clone, Copy)]
enum Item {
    Episode(Uuid),
    Memory(Uuid),
}

impl Item {
    /// Reads `episode` or `memory` (exactly one) from a query string or form.
    fn from(fields: &HashMap<String, String>) -> Result<Item, PageError> {
        let id = |raw: &String| Uuid::parse_str(raw).map_err(|_| PageError::bad("The item id is not a UUID."));
        match (fields.get("episode"), fields.get("memory")) {
            (Some(e), None) => Ok(Item::Episode(id(e)?)),
            (None, Some(m)) => Ok(Item::Memory(id(m)?)),
            _ => Err(PageError::bad("Name one episode or one memory to erase.")),
        }
    }

    fn parts(self) -> (&'static str, Uuid) {
        match self {
            Item::Episode(id) => ("episode", id),
            Item::Memory(id) => ("memory", id),
        }
    }
}

fn confirm_page(ctx: &Ctx, tenant: &str, subject: &str, item: Item) -> maud::Markup {
    let (kind, id) = item.parts();
    let action = format!("/admin/ui/t/{}/subjects/{}/erase-item", seg(tenant), seg(subject));
    let what_goes = match item {
        Item::Episode(_) => "It deletes the episode, its vectors and every memory derived from it",
        Item::Memory(_) => "It deletes the memory and the supersession records naming it",
    };
    layout::page(
        ctx,
        Some(tenant),
        "Erase item",
        html! {
            h1 { "Erase " (kind) " " code { (id) } }
            p { (what_goes) " in subject " code { (subject) } " of tenant " strong { (tenant) } ", and turns the \
                 receipts that showed them into tombstones. The subject's other rows stay. It cannot be undone. \
                 You get a signed erasure certificate." }
            p.note { "To stop using a value but keep the record, the user can ask to forget it instead." }
            form.stack method="post" action=(action) data-confirm={ "Erase this " (kind) " for good?" } {
                (layout::csrf(ctx))
                input type="hidden" name=(kind) value=(id);
                button.danger type="submit" { "Erase " (kind) }
            }
            p { a href={ "/admin/ui/t/" (seg(tenant)) "/subjects/" (seg(subject)) } { "Back to the subject" } }
        },
    )
}

/// The confirmation page (`?episode=<id>` or `?memory=<id>`).
pub async fn confirm(
    Extension(ctx): Extension<Ctx>,
    Path((tenant, subject)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> PageResult {
    let tenant = super::tenant(&tenant)?;
    let subject = super::subject(&subject)?;
    let item = Item::from(&query)?;
    Ok(html(StatusCode::OK, confirm_page(&ctx, tenant, subject, item)))
}

/// Erases the item, then shows the certificate; 404 when the subject has no such item.
pub async fn erase(
    State(st): State<AppState>,
    Path((tenant, subject)): Path<(String, String)>,
    Form(form): Form<HashMap<String, String>>,
) -> PageResult {
    let tenant = super::tenant(&tenant)?;
    let subject = super::subject(&subject)?;
    let items = match Item::from(&form)? {
        Item::Episode(id) => Items { episode_ids: vec![id], memory_ids: vec![] },
        Item::Memory(id) => Items { episode_ids: vec![], memory_ids: vec![id] },
    };
    let erased = erase_items::erase_items(&st.pool, &st.signing_keys, &st.webhooks, tenant, subject, &items)
        .await?
        .map_err(|missing| PageError::Client(StatusCode::NOT_FOUND, missing.message()))?;
    st.subjects.forget(tenant, subject);
    Ok(see_other(&format!("/admin/ui/t/{}/erasures/{}", seg(tenant), seg(&erased.erasure_id))))
}
