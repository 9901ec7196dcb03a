//! Applying a memory template: checked values in, an episode recorded through the normal
//! ingest path (same idempotency, counters and `episode.created` webhook as `POST /v1/episodes`).

use serde_json::{json, Map, Value};
use std::sync::Arc;

use crate::error::FieldError;
use crate::model::episode::{Episode, Inserted, NewEpisode};
use crate::services::episodes;
use crate::services::episodes::KnownTenants;
use crate::services::group_commit::GroupCommit;
use crate::templates::Template;

/// The `source` of episodes created from templates.
pub const SOURCE: &str = "memory-template";

/// What the caller sends besides the template id.
#[derive(Debug, Clone)]
pub struct Application {
    pub subject_id: String,
    pub session_id: Option<String>,
    pub values: Map<String, Value>,
    pub idempotency_key: Option<String>,
}

/// Builds the episode for checked values; Err lists every invalid value (nothing is written).
pub fn episode_for(template: &Template, app: &Application) -> Result<NewEpisode, Vec<FieldError>> {
    let values = template.validate(&app.values)?;
    let mut metadata = Map::new();
    metadata.insert("template".into(), json!({"id": template.id, "version": template.version}));
    Ok(NewEpisode {
        subject_id: app.subject_id.clone(),
        source: SOURCE.to_string(),
        kind: template.episode_type.to_string(),
        payload: template.payload(&values),
        metadata,
        provenance: Map::new(),
        session_id: app.session_id.clone(),
        occurred_at: None,
        idempotency_key: app.idempotency_key.clone(),
    })
}

/// Records the episode built from a template.
pub async fn apply(
    group: &Arc<GroupCommit>,
    known: &KnownTenants,
    tenant: &str,
    episode: NewEpisode,
) -> sqlx::Result<(Episode, Inserted)> {
    episodes::ingest_one(group, known, tenant, episode).await
}
