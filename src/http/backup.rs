//! `/admin/export/{subject_id}` and `/admin/import`: Statewave's subject backup document
//! (admin keys only; `?tenant_id=` picks the tenant as on the rest of `/admin`).

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use tracing::Instrument;

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::api::extract::{Caller, JsonBody};
use crate::api::query::{query, TargetTenant};
use crate::api::schema::CommonErrors;
use crate::error::{ApiError, ApiResult, Envelope};
use crate::http::body::valid;
use crate::http::path::subject_id_path;
use crate::input::rules::{chars, no_nul, tenant_id, NOT_OBJECT, REQUIRED};
use crate::progress::Silent;
use crate::services::statewave_backup::{self as svc, ExportDocument, ImportError, ImportRequest, Imported};
use crate::state::AppState;

/// The subject's backup document in Statewave's format `1.0` (checksum included).
#[utoipa::path(get, path = "/admin/export/{subject_id}", tag = "admin",
    summary = "Export a subject as a Statewave backup document (format_version 1.0, admin key)",
    params(("subject_id" = String, Path, description = "Identifier."), TargetTenant),
    responses((status = 200, description = "Backup document", body = ExportDocument),
              (status = 404, description = "no episodes and no memories", body = Envelope), CommonErrors))]
pub async fn export(
    State(st): State<AppState>,
    caller: Caller,
    Path(subject_id): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    subject_id_path(&subject_id)?;
    let tenant = caller.target(query::<TargetTenant>(raw.as_deref())?.tenant_id)?;
    let now = crate::model::time::now_micros();
    let Some(export) = svc::stream::open(&st.pool, &tenant, &subject_id, &now).await? else {
        return Err(ApiError::not_found(&format!("No data found for subject '{subject_id}'")));
    };
    // The document is written by a task while the client reads it; a few chunks in flight.
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<Vec<u8>>>(4);
    let writer = async move {
        let mut sink = svc::stream::ChannelSink(tx.clone());
        if let Err(e) = export.write(&mut sink, &Silent).await {
            if e.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) {
                tracing::info!("export: the client went away");
            } else {
                tracing::error!(error = %e, "export: stream failed");
                // The body ends in an error, so the client sees a cut document, never a short one.
                let _ = tx.send(Err(std::io::Error::other("export failed"))).await;
            }
        }
    };
    tokio::spawn(writer.instrument(tracing::Span::current()));
    let chunks = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) });
    Ok(([(header::CONTENT_TYPE, "application/json")], Body::from_stream(chunks)).into_response())
}

/// `POST /admin/import`: a Statewave backup document (`format_version` "1.0") and where it goes.
/// Unknown fields are ignored.
#[derive(Debug, Deserialize, ToSchema, garde::Validate)]
pub struct BackupImport {
    /// The export document, as a JSON object.
    #[garde(custom(json_object))]
    #[schema(value_type = Object)]
    pub document: Value,
    /// Replaces the document's `subject_id` when non-empty.
    #[serde(default)]
    #[garde(custom(chars(0, 256)), custom(no_nul))]
    #[schema(max_length = 256)]
    pub target_subject_id: Option<String>,
    /// Replaces the document's `tenant_id` when given (absent in both: the caller's tenant).
    #[serde(default)]
    #[garde(custom(tenant_id))]
    #[schema(max_length = 256)]
    pub target_tenant_id: Option<String>,
    /// Keep the record ids (refused when the tenant already uses one), or give every row a new id.
    #[serde(default)]
    #[garde(skip)]
    #[schema(default = true)]
    pub preserve_ids: Option<bool>,
}

/// garde rule: the document is a JSON object (null is a missing document).
fn json_object(document: &Value, _: &()) -> garde::Result {
    match document {
        Value::Object(_) => Ok(()),
        Value::Null => Err(garde::Error::new(REQUIRED)),
        _ => Err(garde::Error::new(NOT_OBJECT)),
    }
}

/// Imports a backup document into one subject, in one transaction; any refusal writes nothing.
#[utoipa::path(post, path = "/admin/import", tag = "admin",
    summary = "Import a Statewave backup document into one subject (admin key); nothing is written on any refusal",
    request_body = BackupImport,
    responses((status = 200, description = "Imported", body = Imported),
              (status = 400, description = "unsupported format_version, checksum mismatch, no subject, ID conflict or a bad record field", body = Envelope),
              (status = 403, description = "tenant_mismatch: the target tenant is not the key's own (operator keys only)", body = Envelope),
              (status = 409, description = "the subject has episodes not yet compiled", body = Envelope),
              (status = 502, description = "the embedder failed", body = Envelope), CommonErrors))]
pub async fn import(State(st): State<AppState>, caller: Caller, JsonBody(body): JsonBody) -> ApiResult<Json<Imported>> {
    let body: BackupImport = valid(body)?;
    let (subject, tenant) = (body.target_subject_id, body.target_tenant_id);
    let req = ImportRequest {
        document: &body.document,
        target_subject_id: subject.as_deref(),
        target_tenant_id: tenant.as_deref(),
        preserve_ids: body.preserve_ids.unwrap_or(true),
        caller_tenant: &caller.tenant,
        any_tenant: caller.operator,
    };
    svc::import(&st.pool, &st.embedder, req, &Silent).await.map(Json).map_err(|e| match e {
        ImportError::Document(_) | ImportError::IdConflict { .. } => ApiError::bad_request("http_error", e.to_string()),
        ImportError::PendingCompile { .. } => {
            ApiError::client(StatusCode::CONFLICT, "subject_not_compiled", e.to_string())
        }
        ImportError::OtherTenant(_) => ApiError::client(StatusCode::FORBIDDEN, "tenant_mismatch", e.to_string()),
        ImportError::Embed(e) => {
            tracing::error!(error = %e, "import: embedding failed");
            ApiError::client(StatusCode::BAD_GATEWAY, "embedding_failed", "The embedder failed; nothing was imported")
        }
        ImportError::Db(e) => ApiError::from(e),
    })
}
