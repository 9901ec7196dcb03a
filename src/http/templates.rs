//! `GET /v1/memory-templates[/{id}]` and `POST /v1/memory-templates/{id}/apply`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::api::extract::{JsonBody, Tenant};
use crate::api::schema::{CommonErrors, TenantHeader};
use crate::error::{ApiError, ApiResult, Envelope};
use crate::input::rules::bounded;
use crate::input::rules::no_nul_in_json;
use crate::input::{self, Leaves, EXTRA};
use crate::model::episode::Episode;
use crate::model::episode::{Inserted, NewEpisode, MAX_IDEMPOTENCY_KEY};
use crate::services::templates::{self as svc, Application};
use crate::state::AppState;
use crate::templates::{catalog, Template, TemplateView};

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

/// `POST /v1/memory-templates/{template_id}/apply`.
#[derive(Debug, Deserialize, ToSchema, garde::Validate)]
#[serde(deny_unknown_fields)]
pub struct ApplyTemplate {
    #[garde(custom(bounded(1, 256)))]
    #[schema(min_length = 1, max_length = 256)]
    pub subject_id: String,
    #[garde(custom(bounded(0, 256)))]
    #[schema(max_length = 256)]
    pub session_id: Option<String>,
    /// Field name to value, checked against the template's fields.
    #[garde(custom(no_nul_in_json))]
    #[schema(value_type = BTreeMap<String, String>)]
    pub values: Map<String, Value>,
    #[garde(custom(bounded(0, MAX_IDEMPOTENCY_KEY)))]
    #[schema(max_length = 512)]
    pub idempotency_key: Option<String>,
}

/// Reads the body and checks the values; every problem (body keys and values alike) is
/// reported in one 422.
fn parse(body: &Value, t: &Template) -> ApiResult<NewEpisode> {
    match input::read::<ApplyTemplate>(body, "body", Leaves::Json) {
        Ok(app) => svc::episode_for(t, &app.into()).map_err(ApiError::validation),
        Err(mut errors) => {
            for e in errors.iter_mut().filter(|e| e.kind == "extra_forbidden") {
                e.msg = EXTRA.to_string();
            }
            // The values are checked against the template too when they are an object at all.
            let values_readable = !errors.iter().any(|e| e.loc.get(1).is_some_and(|l| l == "values"));
            if let Some(values) = body.get("values").and_then(Value::as_object).filter(|_| values_readable) {
                if let Err(mut invalid) = t.validate(values) {
                    errors.append(&mut invalid);
                }
            }
            Err(ApiError::validation(errors))
        }
    }
}

impl From<ApplyTemplate> for Application {
    fn from(a: ApplyTemplate) -> Self {
        Application {
            subject_id: a.subject_id,
            session_id: a.session_id,
            values: a.values,
            idempotency_key: a.idempotency_key.filter(|k| !k.is_empty()),
        }
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
    let (row, inserted) = svc::apply(&st.group_commit, &st.tenants, &tenant, episode).await?;
    let status = match inserted {
        Inserted::New => StatusCode::CREATED,
        Inserted::Existing => StatusCode::OK,
    };
    Ok((status, Json(row)).into_response())
}
