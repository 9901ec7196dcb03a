//! `/admin/export/{subject_id}` and `/admin/import`: Statewave's subject backup document
//! (admin keys only; `?tenant_id=` picks the tenant as on the rest of `/admin`).

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use tracing::Instrument;

use crate::error::{ApiError, ApiResult, Envelope, FieldError};
use crate::http::extract::{valid_tenant_id, JsonBody, Tenant};
use crate::http::input::{object_at, subject_id_path, Query};
use crate::http::schema::params::TargetTenant;
use crate::http::schema::requests::BackupImport;
use crate::http::schema::CommonErrors;
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
    Tenant(caller): Tenant,
    Path(subject_id): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    subject_id_path(&subject_id)?;
    let mut q = Query::parse(raw.as_deref());
    let tenant = q.target_tenant(caller);
    q.finish()?;
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

/// Imports a backup document into one subject, in one transaction; any refusal writes nothing.
#[utoipa::path(post, path = "/admin/import", tag = "admin",
    summary = "Import a Statewave backup document into one subject (admin key); nothing is written on any refusal",
    request_body = BackupImport,
    responses((status = 200, description = "Imported", body = Imported),
              (status = 400, description = "unsupported format_version, checksum mismatch, no subject, ID conflict or a bad record field", body = Envelope),
              (status = 409, description = "the subject has episodes not yet compiled", body = Envelope),
              (status = 502, description = "the embedder failed", body = Envelope), CommonErrors))]
pub async fn import(
    State(st): State<AppState>,
    Tenant(caller): Tenant,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<Imported>> {
    let document = body.get("document").filter(|v| !v.is_null());
    let mut errors = Vec::new();
    let (subject, tenant, preserve) = match object_at(&body, vec!["body".into()], &mut errors) {
        Some(mut r) => {
            if !document.is_some_and(serde_json::Value::is_object) {
                let msg = if document.is_some() { "must be a JSON object" } else { "field required" };
                let loc = r.child_loc("document");
                r.errors().push(FieldError { loc, msg: msg.into(), kind: "dict_type" });
            }
            let subject = r.opt_str("target_subject_id", 256);
            let tenant = r.opt_str("target_tenant_id", 256);
            if tenant.as_deref().is_some_and(|t| !valid_tenant_id(t)) {
                let loc = r.child_loc("target_tenant_id");
                r.errors().push(FieldError {
                    loc,
                    msg: "must be 1-256 printable characters".into(),
                    kind: "string_length",
                });
            }
            (subject, tenant, r.opt_bool("preserve_ids").unwrap_or(true))
        }
        None => (None, None, true),
    };
    let document = match document {
        Some(d) if errors.is_empty() => d,
        _ => return Err(ApiError::validation(errors)),
    };
    let req = ImportRequest {
        document,
        target_subject_id: subject.as_deref(),
        target_tenant_id: tenant.as_deref(),
        preserve_ids: preserve,
        caller_tenant: &caller,
    };
    svc::import(&st.pool, &st.embedder, req, &Silent).await.map(Json).map_err(|e| match e {
        ImportError::Document(_) | ImportError::IdConflict { .. } => ApiError::bad_request("http_error", e.to_string()),
        ImportError::PendingCompile { .. } => {
            ApiError::client(StatusCode::CONFLICT, "subject_not_compiled", e.to_string())
        }
        ImportError::Embed(e) => {
            tracing::error!(error = %e, "import: embedding failed");
            ApiError::client(StatusCode::BAD_GATEWAY, "embedding_failed", "The embedder failed; nothing was imported")
        }
        ImportError::Db(e) => ApiError::from(e),
    })
}
