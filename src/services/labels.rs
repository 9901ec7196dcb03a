//! The suggested-label review queue: listing suggestions and promoting them to sensitivity labels.

use chrono::Utc;
use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

use crate::db;
use crate::db::labels::{SuggestedFilter, SuggestedRow};
use crate::model::time::isoformat;
use crate::policy::labels::{promote_labels, PromoteError, Promotion};

/// One page of the review queue.
#[derive(Debug, Clone)]
pub struct SuggestedPage {
    pub rows: Vec<SuggestedRow>,
    pub total: i64,
}

/// Lists the tenant's memories that carry suggestions, newest first.
pub async fn list(
    pool: &PgPool,
    tenant: &str,
    filter: &SuggestedFilter<'_>,
    limit: i64,
    offset: i64,
) -> sqlx::Result<SuggestedPage> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    let (rows, total) = db::labels::suggested_page(&mut tx, tenant, filter, limit, offset).await?;
    tx.commit().await?;
    Ok(SuggestedPage { rows, total })
}

/// Why a promotion did not happen.
#[derive(Debug)]
pub enum PromoteFailure {
    /// The tenant has no such memory (404).
    NotFound,
    /// The request was refused by the review rules (422).
    Refused(PromoteError),
    /// The database failed.
    Db(sqlx::Error),
}

impl From<sqlx::Error> for PromoteFailure {
    fn from(e: sqlx::Error) -> Self {
        PromoteFailure::Db(e)
    }
}

/// Moves the requested suggestions to the memory's sensitivity labels and records who/when.
pub async fn promote(pool: &PgPool, tenant: &str, id: Uuid, requested: &[String]) -> Result<Promotion, PromoteFailure> {
    let mut tx = db::scope::begin(pool, tenant).await?;
    let (suggested, sensitivity) =
        db::labels::lock_labels(&mut tx, tenant, id).await?.ok_or(PromoteFailure::NotFound)?;
    let promotion = promote_labels(requested, &suggested, &sensitivity).map_err(PromoteFailure::Refused)?;
    // mnemo keys carry no person, so `promoted_by` stays null as in Statewave.
    let entry = json!({
        "labels": promotion.promoted,
        "promoted_at": isoformat(&Utc::now()),
        "promoted_by": Value::Null,
    });
    db::labels::apply_promotion(
        &mut tx,
        tenant,
        id,
        &promotion.sensitivity_labels,
        &promotion.suggested_labels,
        &entry,
    )
    .await?;
    tx.commit().await?;
    Ok(promotion)
}
