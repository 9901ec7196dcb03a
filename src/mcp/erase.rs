//! The opt-in `erase` MCP tool: erases chosen episodes and memories of a subject through the
//! service `POST /v1/subjects/{id}/erase` uses, with its certificate. Offered with `forget`,
//! only when the operator allows it (`MNEMO_MCP_ALLOW_FORGET`).

use rmcp::model::{Tool, ToolAnnotations};
use serde::Deserialize;
use serde_json::json;
use serde_json::Value;
use uuid::Uuid;

use crate::api::subjects::{items_not_found, EraseItems, ItemErasure, MAX_ITEMS};
use crate::input::rules::{bounded, list_len};
use crate::mcp::args::{ok, parse, ToolResult};
use crate::services::erase_items;
use crate::state::AppState;

/// The tool's definition.
pub fn tool() -> Tool {
    let ids = |what: &str| {
        json!({"type": "array", "maxItems": MAX_ITEMS, "items": {"type": "string", "format": "uuid"},
               "description": format!("Ids of the subject's {what} to erase (from timeline or search_memories).")})
    };
    Tool::new(
        "erase",
        "Erase chosen episodes and memories of a subject for good: the rows are deleted (an episode with \
         every memory derived from it), receipts that showed them lose their content, and a signed \
         erasure certificate is returned. All or nothing: an id the subject does not have erases nothing. \
         To stop using a value without deleting the record, the user can ask to forget it instead.",
        super::tools::schema(json!({
            "type": "object",
            "properties": {
                "subject_id": super::tools::subject(),
                "episode_ids": ids("episodes"),
                "memory_ids": ids("memories")
            },
            "required": ["subject_id"],
            "additionalProperties": false
        })),
    )
    .annotate(
        ToolAnnotations::with_title("Erase episodes or memories")
            .read_only(false)
            .destructive(true)
            .idempotent(false)
            .open_world(false),
    )
}

/// `erase`'s arguments.
#[derive(Debug, Deserialize, garde::Validate)]
struct Erase {
    #[garde(custom(bounded(1, 256)))]
    subject_id: String,
    #[serde(default)]
    #[garde(custom(list_len(0, MAX_ITEMS)))]
    episode_ids: Vec<Uuid>,
    #[serde(default)]
    #[garde(custom(list_len(0, MAX_ITEMS)))]
    memory_ids: Vec<Uuid>,
}

/// Runs `erase` for the caller's tenant.
pub async fn call(st: &AppState, tenant: &str, a: &Value) -> ToolResult {
    let e: Erase = parse(a)?;
    let items = EraseItems { episode_ids: e.episode_ids, memory_ids: e.memory_ids }.items()?;
    let erased = erase_items::erase_items(&st.pool, &st.signing_keys, &st.webhooks, tenant, &e.subject_id, &items)
        .await?
        .map_err(|missing| items_not_found(&missing))?;
    st.subjects.forget(tenant, &e.subject_id);
    let out = ItemErasure::new(e.subject_id, erased);
    let text = format!(
        "Erased {} episode(s) and {} memor{} of {}; certificate {}.",
        out.episodes_deleted,
        out.memories_deleted,
        if out.memories_deleted == 1 { "y" } else { "ies" },
        out.subject_id,
        out.erasure_id
    );
    Ok(ok(vec![text], serde_json::to_value(out).map_err(anyhow::Error::from)?))
}
