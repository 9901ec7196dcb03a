//! The HTTP surface: routes, extractors and middleware. Handlers are thin.

pub mod admin;
pub mod auth;
pub mod backup;
pub mod body;
pub mod compile;
pub mod conn;
pub mod context;
pub mod episodes;
pub mod labels;
pub mod layers;
pub mod memories;
pub mod meta;
pub mod middleware;
pub mod openapi;
pub mod origin;
pub mod path;
pub mod policy;
pub mod receipts;
pub mod sessions;
pub mod subjects;
pub mod templates;
pub mod timeline;
pub mod webhooks;
pub mod working_memory;

use axum::routing::{delete, get, patch, post, put, MethodRouter};
use axum::Router;

use crate::state::AppState;

/// Every route: (method, path, handler). The OpenAPI document is checked against this table.
fn route_table() -> Vec<(&'static str, &'static str, MethodRouter<AppState>)> {
    vec![
        ("GET", "/healthz", get(meta::healthz)),
        ("GET", "/health", get(meta::health)),
        ("GET", "/readyz", get(meta::readyz)),
        ("GET", "/ready", get(meta::ready)),
        ("GET", "/v1/version", get(meta::version)),
        ("GET", "/openapi.json", get(meta::openapi)),
        ("POST", "/v1/episodes", post(episodes::create)),
        ("POST", "/v1/episodes/batch", post(episodes::create_batch)),
        ("POST", "/v1/context", post(context::context)),
        ("POST", "/v1/memories/compile", post(compile::compile)),
        ("GET", "/v1/memories/compile/{job_id}", get(compile::status)),
        ("GET", "/v1/memories/search", get(memories::search)),
        ("PATCH", "/v1/memories/{id}/labels", patch(memories::set_labels)),
        ("GET", "/v1/receipts", get(receipts::list)),
        ("GET", "/v1/receipts/chain/verify", get(receipts::verify_tenant_chain)),
        ("GET", "/v1/receipts/{id}", get(receipts::get)),
        ("GET", "/v1/receipts/{id}/verify", get(receipts::verify)),
        ("POST", "/v1/receipts/{id}/replay", post(receipts::replay)),
        ("GET", "/v1/timeline", get(timeline::get)),
        ("GET", "/v1/subjects", get(subjects::list)),
        ("DELETE", "/v1/subjects/{subject_id}", delete(subjects::delete)),
        ("POST", "/v1/subjects/{subject_id}/erase", post(subjects::erase_items)),
        ("GET", "/v1/erasures/{erasure_id}", get(subjects::erasure)),
        ("GET", "/v1/subjects/{subject_id}/health", get(sessions::health)),
        ("GET", "/v1/subjects/{subject_id}/sla", get(sessions::sla)),
        ("POST", "/v1/resolutions", post(sessions::upsert_resolution)),
        ("GET", "/v1/resolutions", get(sessions::list_resolutions)),
        ("POST", "/v1/handoff", post(sessions::handoff)),
        ("GET", "/v1/subjects/{subject_id}/sessions", get(working_memory::list)),
        ("GET", "/v1/subjects/{subject_id}/sessions/{session_id}", get(working_memory::get)),
        ("PATCH", "/v1/subjects/{subject_id}/sessions/{session_id}", patch(working_memory::patch)),
        ("PUT", "/v1/subjects/{subject_id}/sessions/{session_id}/snapshot", put(working_memory::put_snapshot)),
        ("GET", "/v1/memory-templates", get(templates::list)),
        ("GET", "/v1/memory-templates/{template_id}", get(templates::get)),
        ("POST", "/v1/memory-templates/{template_id}/apply", post(templates::apply)),
        ("GET", "/admin/tenants", get(admin::list_tenants)),
        ("GET", "/admin/tenants/{tenant_id}/config", get(admin::get_config)),
        ("PATCH", "/admin/tenants/{tenant_id}/config", patch(admin::patch_config)),
        ("GET", "/admin/export/{subject_id}", get(backup::export)),
        ("POST", "/admin/import", post(backup::import)),
        ("POST", "/admin/policy/bundles", post(policy::upload)),
        ("GET", "/admin/policy/bundles", get(policy::list)),
        ("GET", "/admin/policy/bundles/{bundle_hash}", get(policy::get)),
        ("POST", "/admin/policy/activate", post(policy::activate)),
        ("POST", "/admin/policy/reload", post(policy::reload)),
        ("GET", "/admin/policy/active", get(policy::active)),
        ("GET", "/admin/memories/with-suggested-labels", get(labels::list)),
        ("POST", "/admin/memories/{memory_id}/promote-labels", post(labels::promote)),
        ("GET", "/admin/webhooks", get(webhooks::list)),
        ("GET", "/admin/webhooks/stats", get(webhooks::stats)),
        ("GET", "/admin/webhooks/{event_id}", get(webhooks::get)),
        ("POST", "/admin/webhooks/{event_id}/retry", post(webhooks::retry)),
    ]
}

/// (method, path) of every route, for the OpenAPI drift test.
pub fn endpoints() -> Vec<(&'static str, &'static str)> {
    route_table().into_iter().map(|(m, p, _)| (m, p)).collect()
}

/// The REST routes (the table above), without middleware: `crate::app` composes them with the
/// other doors and the layers.
pub fn routes() -> Router<AppState> {
    route_table().into_iter().fold(Router::new(), |r, (_, path, handler)| r.route(path, handler))
}
