//! `GET /v1/memory-templates[/{id}]` and `POST /v1/memory-templates/{id}/apply`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult, Envelope, FieldError};
use crate::http::extract::{JsonBody, Tenant};
use crate::http::input::object_at;
use crate::http::schema::requests::ApplyTemplate;
use crate::http::schema::{CommonErrors, TenantHeader};
use crate::model::episode::Episode;
use crate::model::episode::{Inserted, NewEpisode, MAX_IDEMPOTENCY_KEY};
use crate::services::templates::{self as svc, Application};
use crate::state::AppState;
use crate::templates::{catalog, Template, TemplateView};

/// Keys an apply body may have.
const BODY_KEYS: [&str; 4] = ["subject_id", "session_id", "values", "idempotency_key"];

fn template(id: &str) -> ApiResult<&'static Template> {
    catalog::find(id).ok_or_else(|| ApiError::not_found("memory template not found"))
}

/// The built-in templates.
#[derive(Debug, Serialize, ToSchema)]
pub struct TemplateList {
    pub templates: Vec<TemplateView>,
}

/// Every built-in template.
#[utoipa::path(get, path = "/v1/memory-templates", tag = "templates", summary = "The built-in memory templates",
    params(TenantHeader),
    responses((status = 200, description = "Templates", body = TemplateList), CommonErrors))]
pub async fn list() -> Json<TemplateList> {
    Json(TemplateList { templates: catalog::all().iter().map(Template::view).collect() })
}

/// One template; 404 for unknown ids.
#[utoipa::path(get, path = "/v1/memory-templates/{template_id}", tag = "templates", summary = "One memory template",
    params(TenantHeader, ("template_id" = String, Path, description = "Identifier.")),
    responses((status = 200, description = "Template", body = TemplateView),
              (status = 404, description = "memory template not found", body = Envelope), CommonErrors))]
pub async fn get(Path(id): Path<String>) -> ApiResult<Json<TemplateView>> {
    Ok(Json(template(&id)?.view()))
}

/// Reads the body and checks the values; every problem (body keys and values alike) is
/// reported in one 422.
fn parse(body: &Value, t: &Template) -> ApiResult<NewEpisode> {
    let mut errors = Vec::new();
    let app = object_at(body, vec!["body".into()], &mut errors).map(|mut r| {
        let app = Application {
            subject_id: r.req_str("subject_id", 1, 256),
            session_id: r.opt_str("session_id", 256),
            values: r.req_object("values"),
            idempotency_key: r.opt_str("idempotency_key", MAX_IDEMPOTENCY_KEY).filter(|k| !k.is_empty()),
        };
        for key in body.as_object().into_iter().flat_map(|o| o.keys()) {
            if !BODY_KEYS.contains(&key.as_str()) {
                let (loc, msg) = (r.child_loc(key), "extra inputs are not permitted".to_string());
                r.errors().push(FieldError { loc, msg, kind: "extra_forbidden" });
            }
        }
        app
    });
    // Values are checked against the template only when they are an object at all.
    let values_readable = !errors.iter().any(|e| e.loc.get(1).is_some_and(|l| l == "values"));
    let episode = app.filter(|_| values_readable).and_then(|a| match svc::episode_for(t, &a) {
        Ok(e) => Some(e),
        Err(mut invalid) => {
            errors.append(&mut invalid);
            None
        }
    });
    match episode {
        Some(e) if errors.is_empty() => Ok(e),
        _ => Err(ApiError::validation(errors)),
    }
}

/// Creates an episode from the template: 201 (200 when `idempotency_key` already named one),
/// the episode as `POST /v1/episodes` returns it; 422 for any invalid value, nothing written.
#[utoipa::path(post, path = "/v1/memory-templates/{template_id}/apply", tag = "templates",
    summary = "Record an episode from a template (values checked strictly; 422 writes nothing)",
    params(TenantHeader, ("template_id" = String, Path, description = "Identifier.")), request_body = ApplyTemplate,
    responses((status = 201, description = "Created", body = Episode),
              (status = 200, description = "Existing episode for the idempotency key", body = Episode),
              (status = 404, description = "memory template not found", body = Envelope), CommonErrors))]
pub async fn apply(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    let episode = parse(&body, template(&id)?)?;
    let (row, inserted) = svc::apply(&st.pool, &st.tenants, &st.webhooks, &tenant, &episode).await?;
    let status = match inserted {
        Inserted::New => StatusCode::CREATED,
        Inserted::Existing => StatusCode::OK,
    };
    Ok((status, Json(row)).into_response())
}
