//! The OpenAPI 3.0 document, built in code beside the route table.
//!
//! `tests/openapi.rs` fails when a route exists without an operation here (or the reverse), and
//! when the committed `openapi.json` differs from `document()`; regenerate it with
//! `mnemo openapi > openapi.json`.

use serde_json::{json, Map, Value};

fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn json_body(schema: Value) -> Value {
    json!({ "content": { "application/json": { "schema": schema } } })
}

fn ok(description: &str, schema: Value) -> Value {
    json!({ "description": description, "content": { "application/json": { "schema": schema } } })
}

fn error(description: &str) -> Value {
    ok(description, schema_ref("Error"))
}

fn param(name: &str, location: &str, required: bool, schema: Value, description: &str) -> Value {
    json!({ "name": name, "in": location, "required": required, "schema": schema, "description": description })
}

fn string() -> Value {
    json!({ "type": "string" })
}

fn int(min: i64, max: i64, default: i64) -> Value {
    json!({ "type": "integer", "minimum": min, "maximum": max, "default": default })
}

fn obj_schema() -> Value {
    json!({ "type": "object", "additionalProperties": true })
}

fn boolean(default: bool) -> Value {
    json!({ "type": "boolean", "default": default })
}

struct Op {
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    params: Vec<Value>,
    body: Option<Value>,
    responses: Vec<(&'static str, Value)>,
}

fn tenant_header() -> Value {
    param("X-Tenant-ID", "header", false, string(), "Tenant; absent means the tenant `default`.")
}

fn operations() -> Vec<Op> {
    let subject_q = || param("subject_id", "query", true, string(), "Subject id (1-256 chars).");
    let id_path = |name: &str| param(name, "path", true, string(), "Identifier.");
    let common_errors =
        || vec![("401", error("Missing API key")), ("403", error("Invalid API key")), ("422", error("Invalid input"))];
    let with = |mut base: Vec<(&'static str, Value)>, extra: Vec<(&'static str, Value)>| {
        base.extend(extra);
        base
    };
    vec![
        Op {
            method: "GET",
            path: "/healthz",
            summary: "Liveness",
            params: vec![],
            body: None,
            responses: vec![("200", ok("Alive", json!({"type": "object"})))],
        },
        Op {
            method: "GET",
            path: "/health",
            summary: "Liveness (alias)",
            params: vec![],
            body: None,
            responses: vec![("200", ok("Alive", json!({"type": "object"})))],
        },
        Op {
            method: "GET",
            path: "/readyz",
            summary: "Readiness (database)",
            params: vec![],
            body: None,
            responses: vec![
                ("200", ok("Ready", schema_ref("Readiness"))),
                ("503", ok("Not ready", schema_ref("Readiness"))),
            ],
        },
        Op {
            method: "GET",
            path: "/ready",
            summary: "Readiness (alias)",
            params: vec![],
            body: None,
            responses: vec![
                ("200", ok("Ready", schema_ref("Readiness"))),
                ("503", ok("Not ready", schema_ref("Readiness"))),
            ],
        },
        Op {
            method: "GET",
            path: "/v1/version",
            summary: "Server version and API contract",
            params: vec![],
            body: None,
            responses: vec![(
                "200",
                ok("Version", json!({"type": "object", "properties": {"version": string(), "api_contract": string()}})),
            )],
        },
        Op {
            method: "GET",
            path: "/openapi.json",
            summary: "This document",
            params: vec![],
            body: None,
            responses: vec![("200", ok("OpenAPI document", json!({"type": "object"})))],
        },
        Op {
            method: "POST",
            path: "/v1/episodes",
            summary: "Record one episode (idempotent with a key)",
            params: vec![tenant_header()],
            body: Some(schema_ref("CreateEpisode")),
            responses: with(
                vec![
                    ("201", ok("Created", schema_ref("Episode"))),
                    ("200", ok("Existing episode for the idempotency key", schema_ref("Episode"))),
                    ("413", error("Body too large")),
                ],
                common_errors(),
            ),
        },
        Op {
            method: "POST",
            path: "/v1/episodes/batch",
            summary: "Record 1-100 episodes atomically",
            params: vec![tenant_header()],
            body: Some(
                json!({"type": "object", "required": ["episodes"], "properties": {"episodes": {"type": "array", "minItems": 1, "maxItems": 100, "items": schema_ref("CreateEpisode")}}}),
            ),
            responses: with(
                vec![(
                    "201",
                    ok(
                        "Created",
                        json!({"type": "object", "properties": {"episodes_created": {"type": "integer"}, "episodes": {"type": "array", "items": schema_ref("Episode")}}}),
                    ),
                )],
                common_errors(),
            ),
        },
        Op {
            method: "POST",
            path: "/v1/context",
            summary: "Ranked, token-bounded context bundle",
            params: vec![tenant_header()],
            body: Some(schema_ref("ContextRequest")),
            responses: with(vec![("200", ok("Bundle", schema_ref("ContextBundle")))], common_errors()),
        },
        Op {
            method: "POST",
            path: "/v1/memories/compile",
            summary: "Compile pending episodes (sync batch or async job)",
            params: vec![tenant_header()],
            body: Some(
                json!({"type": "object", "required": ["subject_id"], "properties": {"subject_id": string(), "async": boolean(false)}}),
            ),
            responses: with(
                vec![
                    ("200", ok("One batch compiled", schema_ref("CompileResult"))),
                    ("202", ok("Job queued or attached", schema_ref("CompileJob"))),
                    ("502", error("Compiler or embedder unavailable; nothing consumed")),
                ],
                common_errors(),
            ),
        },
        Op {
            method: "GET",
            path: "/v1/memories/compile/{job_id}",
            summary: "Poll a compile job",
            params: vec![tenant_header(), id_path("job_id")],
            body: None,
            responses: vec![("200", ok("Job", schema_ref("CompileJob"))), ("404", error("Job not found or expired"))],
        },
        Op {
            method: "GET",
            path: "/v1/memories/search",
            summary: "Search active memories (text, semantic, hybrid)",
            params: vec![
                tenant_header(),
                subject_q(),
                param("q", "query", false, string(), "Query text."),
                param("kind", "query", false, string(), "Memory kind."),
                param("semantic", "query", false, boolean(false), "Semantic search."),
                param("hybrid", "query", false, boolean(true), "Blend semantic and full-text."),
                param("limit", "query", false, int(1, 500, 20), "Page size."),
            ],
            body: None,
            responses: with(
                vec![(
                    "200",
                    ok(
                        "Results",
                        json!({"type": "object", "properties": {"memories": {"type": "array", "items": schema_ref("Memory")}, "search_mode": {"type": "string", "enum": ["text", "semantic", "text_fallback"]}}}),
                    ),
                )],
                common_errors(),
            ),
        },
        Op {
            method: "PATCH",
            path: "/v1/memories/{id}/labels",
            summary: "Replace a memory's sensitivity labels",
            params: vec![tenant_header(), id_path("id")],
            body: Some(
                json!({"type": "object", "required": ["sensitivity_labels"], "properties": {"sensitivity_labels": {"type": "array", "items": string()}}}),
            ),
            responses: with(
                vec![
                    ("200", ok("Memory", schema_ref("Memory"))),
                    ("400", error("More than 32 labels")),
                    ("404", error("memory not found")),
                ],
                common_errors(),
            ),
        },
        Op {
            method: "GET",
            path: "/v1/receipts",
            summary: "A subject's receipts, newest first",
            params: vec![
                tenant_header(),
                subject_q(),
                param("since", "query", false, string(), "ISO datetime."),
                param("until", "query", false, string(), "ISO datetime."),
                param("cursor", "query", false, string(), "Receipt id to continue after."),
                param("limit", "query", false, int(1, 200, 50), "Page size."),
                param("include_tombstoned", "query", false, boolean(false), "Include tombstones."),
            ],
            body: None,
            responses: with(
                vec![(
                    "200",
                    ok(
                        "Page",
                        json!({"type": "object", "properties": {"receipts": {"type": "array", "items": schema_ref("Receipt")}, "next_cursor": {"type": "string", "nullable": true}}}),
                    ),
                )],
                common_errors(),
            ),
        },
        Op {
            method: "GET",
            path: "/v1/receipts/chain/verify",
            summary: "Verify the tenant's receipt hash chain",
            params: vec![tenant_header()],
            body: None,
            responses: vec![(
                "200",
                ok(
                    "Report",
                    json!({"type": "object", "properties": {"ok": {"type": "boolean"}, "checked": {"type": "integer"}, "first_break": {"type": "object", "nullable": true}}}),
                ),
            )],
        },
        Op {
            method: "GET",
            path: "/v1/receipts/{id}",
            summary: "One receipt",
            params: vec![tenant_header(), id_path("id")],
            body: None,
            responses: vec![("200", ok("Receipt", schema_ref("Receipt"))), ("404", error("receipt not found"))],
        },
        Op {
            method: "GET",
            path: "/v1/receipts/{id}/verify",
            summary: "Verify a receipt's signature",
            params: vec![tenant_header(), id_path("id")],
            body: None,
            responses: vec![
                (
                    "200",
                    ok(
                        "Verdict",
                        json!({"type": "object", "properties": {"valid": {"type": "boolean", "nullable": true}, "key_id": {"type": "string", "nullable": true}, "algorithm": {"type": "string", "nullable": true}, "reason": string()}}),
                    ),
                ),
                ("404", error("receipt not found")),
            ],
        },
        Op {
            method: "POST",
            path: "/v1/receipts/{id}/replay",
            summary: "Rebuild the bundle as of the receipt (or against current memories)",
            params: vec![
                tenant_header(),
                id_path("id"),
                param(
                    "mode",
                    "query",
                    false,
                    json!({"type": "string", "enum": ["as_of", "current"], "default": "as_of"}),
                    "Replay mode.",
                ),
            ],
            body: None,
            responses: vec![
                ("200", ok("Replay result", json!({"type": "object"}))),
                ("404", error("receipt not found")),
                ("422", error("unreplayable.<reason>")),
            ],
        },
        Op {
            method: "GET",
            path: "/v1/timeline",
            summary: "A subject's episodes and memories, paged",
            params: vec![
                tenant_header(),
                subject_q(),
                param("limit", "query", false, int(1, 200, 100), "Page size."),
                param("offset", "query", false, int(0, i64::from(i32::MAX), 0), "Offset."),
                param("newest_first", "query", false, boolean(false), "Newest page first."),
                param("status", "query", false, json!({"type": "string", "enum": ["all", "active"]}), "Memory filter."),
            ],
            body: None,
            responses: with(
                vec![(
                    "200",
                    ok(
                        "Timeline",
                        json!({"type": "object", "properties": {"subject_id": string(), "episodes": {"type": "array", "items": schema_ref("Episode")}, "memories": {"type": "array", "items": schema_ref("Memory")}, "episodes_has_more": {"type": "boolean"}, "memories_has_more": {"type": "boolean"}}}),
                    ),
                )],
                common_errors(),
            ),
        },
        Op {
            method: "GET",
            path: "/v1/subjects",
            summary: "Subjects with counts",
            params: vec![
                tenant_header(),
                param("limit", "query", false, int(1, 200, 50), "Page size."),
                param("offset", "query", false, int(0, i64::from(i32::MAX), 0), "Offset."),
            ],
            body: None,
            responses: with(
                vec![(
                    "200",
                    ok(
                        "Subjects",
                        json!({"type": "object", "properties": {"subjects": {"type": "array", "items": {"type": "object"}}, "total": {"type": "integer"}}}),
                    ),
                )],
                common_errors(),
            ),
        },
        Op {
            method: "DELETE",
            path: "/v1/subjects/{subject_id}",
            summary: "Erase every row of a subject",
            params: vec![tenant_header(), id_path("subject_id")],
            body: None,
            responses: with(
                vec![(
                    "200",
                    ok(
                        "Counts",
                        json!({"type": "object", "properties": {"subject_id": string(), "episodes_deleted": {"type": "integer"}, "memories_deleted": {"type": "integer"},
                            "erasure_id": string(), "certificate": schema_ref("ErasureCertificate")}}),
                    ),
                )],
                common_errors(),
            ),
        },
        Op {
            method: "GET",
            path: "/admin/tenants",
            summary: "Every tenant mnemo has seen (admin key)",
            params: vec![],
            body: None,
            responses: with(
                vec![(
                    "200",
                    ok("Tenants", json!({"type": "object", "properties": {"tenants": {"type": "array", "items": {"type": "object"}}, "total": {"type": "integer"}}})),
                )],
                common_errors(),
            ),
        },
        Op {
            method: "GET",
            path: "/admin/tenants/{tenant_id}/config",
            summary: "A tenant's configuration document (admin key)",
            params: vec![id_path("tenant_id")],
            body: None,
            responses: with(vec![("200", ok("Config", schema_ref("TenantConfig")))], common_errors()),
        },
        Op {
            method: "PATCH",
            path: "/admin/tenants/{tenant_id}/config",
            summary: "Partially update a tenant's configuration (version+1; 409 on a stale expected_version)",
            params: vec![id_path("tenant_id")],
            body: Some(schema_ref("TenantConfigPatch")),
            responses: with(
                vec![("200", ok("Config", schema_ref("TenantConfig"))), ("409", error("version conflict"))],
                common_errors(),
            ),
        },
        Op {
            method: "POST",
            path: "/admin/policy/bundles",
            summary: "Upload a policy bundle (YAML or JSON text in `bundle`); 400 policy.invalid_bundle when it does not load",
            params: vec![],
            body: Some(json!({"type": "object", "required": ["bundle"], "properties": {"tenant_id": string(), "bundle": {}}})),
            responses: with(vec![("201", ok("Stored", obj_schema())), ("400", error("invalid bundle"))], common_errors()),
        },
        Op {
            method: "GET",
            path: "/admin/policy/bundles",
            summary: "A tenant's policy bundles",
            params: vec![param("tenant_id", "query", false, string(), "Tenant; absent means the caller's tenant.")],
            body: None,
            responses: with(vec![("200", ok("Bundles", obj_schema()))], common_errors()),
        },
        Op {
            method: "GET",
            path: "/admin/policy/bundles/{bundle_hash}",
            summary: "One policy bundle with its uploaded text",
            params: vec![id_path("bundle_hash"), param("tenant_id", "query", false, string(), "Tenant; absent means the caller's tenant.")],
            body: None,
            responses: with(vec![("200", ok("Bundle", obj_schema())), ("404", error("not found"))], common_errors()),
        },
        Op {
            method: "POST",
            path: "/admin/policy/activate",
            summary: "Make a stored bundle the tenant's active one",
            params: vec![],
            body: Some(json!({"type": "object", "required": ["bundle_hash"], "properties": {"tenant_id": string(), "bundle_hash": string()}})),
            responses: with(vec![("200", ok("Activated", obj_schema())), ("404", error("not found"))], common_errors()),
        },
        Op {
            method: "POST",
            path: "/admin/policy/reload",
            summary: "No-op: bundles are resolved on every request",
            params: vec![],
            body: None,
            responses: with(vec![("200", ok("Reloaded", obj_schema()))], common_errors()),
        },
        Op {
            method: "GET",
            path: "/admin/policy/active",
            summary: "The tenant's active bundle, or null",
            params: vec![param("tenant_id", "query", false, string(), "Tenant; absent means the caller's tenant.")],
            body: None,
            responses: with(vec![("200", ok("Active bundle or null", json!({"type": "object", "nullable": true})))], common_errors()),
        },
        Op {
            method: "GET",
            path: "/v1/memory-templates",
            summary: "The built-in memory templates",
            params: vec![tenant_header()],
            body: None,
            responses: with(
                vec![(
                    "200",
                    ok("Templates", json!({"type": "object", "properties": {"templates": {"type": "array", "items": schema_ref("MemoryTemplate")}}})),
                )],
                common_errors(),
            ),
        },
        Op {
            method: "GET",
            path: "/v1/memory-templates/{template_id}",
            summary: "One memory template",
            params: vec![tenant_header(), id_path("template_id")],
            body: None,
            responses: with(
                vec![("200", ok("Template", schema_ref("MemoryTemplate"))), ("404", error("memory template not found"))],
                common_errors(),
            ),
        },
        Op {
            method: "POST",
            path: "/v1/memory-templates/{template_id}/apply",
            summary: "Record an episode from a template (values checked strictly; 422 writes nothing)",
            params: vec![tenant_header(), id_path("template_id")],
            body: Some(schema_ref("ApplyTemplate")),
            responses: with(
                vec![
                    ("201", ok("Created", schema_ref("Episode"))),
                    ("200", ok("Existing episode for the idempotency key", schema_ref("Episode"))),
                    ("404", error("memory template not found")),
                ],
                common_errors(),
            ),
        },
        Op {
            method: "GET",
            path: "/admin/webhooks",
            summary: "Webhook events of every tenant (or one), newest first, without their data (admin key)",
            params: vec![
                param("status", "query", false, json!({"type": "string", "enum": ["all", "pending", "delivered", "dead_letter"], "default": "all"}), "Status filter."),
                param("tenant_id", "query", false, string(), "Only this tenant's events."),
                param("limit", "query", false, int(1, 200, 50), "Page size."),
                param("offset", "query", false, int(0, i64::from(i32::MAX), 0), "Offset."),
            ],
            body: None,
            responses: with(
                vec![(
                    "200",
                    ok(
                        "Page",
                        json!({"type": "object", "properties": {"events": {"type": "array", "items": schema_ref("WebhookEvent")},
                            "has_more": {"type": "boolean"}, "limit": {"type": "integer"}, "offset": {"type": "integer"}}}),
                    ),
                )],
                common_errors(),
            ),
        },
        Op {
            method: "GET",
            path: "/admin/webhooks/stats",
            summary: "Webhook event counts by status and whether webhooks are on (admin key)",
            params: vec![param("tenant_id", "query", false, string(), "Only this tenant's events.")],
            body: None,
            responses: with(vec![("200", ok("Counts", schema_ref("WebhookStats")))], common_errors()),
        },
        Op {
            method: "GET",
            path: "/admin/webhooks/{event_id}",
            summary: "One webhook event with its data (null once removed) (admin key)",
            params: vec![id_path("event_id")],
            body: None,
            responses: with(
                vec![("200", ok("Event", schema_ref("WebhookEvent"))), ("404", error("webhook event not found"))],
                common_errors(),
            ),
        },
        Op {
            method: "POST",
            path: "/admin/webhooks/{event_id}/retry",
            summary: "Queue a dead-lettered webhook event again with fresh attempts (admin key)",
            params: vec![id_path("event_id")],
            body: None,
            responses: with(
                vec![
                    ("200", ok("Queued", schema_ref("WebhookEvent"))),
                    ("404", error("webhook event not found")),
                    ("409", error("not dead-lettered, or its data was removed")),
                ],
                common_errors(),
            ),
        },
        Op {
            method: "GET",
            path: "/v1/subjects/{subject_id}/health",
            summary: "The subject's health score, state and factors",
            params: vec![tenant_header(), id_path("subject_id")],
            body: None,
            responses: with(vec![("200", ok("Health", schema_ref("Health")))], common_errors()),
        },
        Op {
            method: "GET",
            path: "/v1/subjects/{subject_id}/sla",
            summary: "First-response and resolution times per session",
            params: vec![
                tenant_header(),
                id_path("subject_id"),
                param("first_response_threshold_minutes", "query", false, json!({"type": "number", "default": 5}), "First-response target."),
                param("resolution_threshold_hours", "query", false, json!({"type": "number", "default": 24}), "Resolution target."),
            ],
            body: None,
            responses: with(vec![("200", ok("SLA summary", schema_ref("SLASummary")))], common_errors()),
        },
        Op {
            method: "POST",
            path: "/v1/resolutions",
            summary: "Create or update a session's resolution",
            params: vec![tenant_header()],
            body: Some(json!({"type": "object", "required": ["subject_id", "session_id"], "properties": {
                "subject_id": {"type": "string", "minLength": 1, "maxLength": 256}, "session_id": {"type": "string", "minLength": 1, "maxLength": 256},
                "status": {"type": "string", "enum": ["open", "resolved", "unresolved"], "default": "open"},
                "resolution_summary": {"type": "string", "maxLength": 2000}, "metadata": {"type": "object"}}})),
            responses: with(vec![("200", ok("Resolution", schema_ref("Resolution")))], common_errors()),
        },
        Op {
            method: "GET",
            path: "/v1/resolutions",
            summary: "A subject's resolutions (a bare array, most recently updated first)",
            params: vec![
                tenant_header(),
                param("subject_id", "query", true, string(), "Subject."),
                param("status", "query", false, json!({"type": "string", "enum": ["open", "resolved", "unresolved"]}), "Only this status."),
                param("limit", "query", false, int(1, 200, 50), "Page size."),
                param("offset", "query", false, int(0, i64::from(i32::MAX), 0), "Rows to skip."),
            ],
            body: None,
            responses: with(vec![("200", ok("Resolutions", json!({"type": "array", "items": schema_ref("Resolution")})))], common_errors()),
        },
        Op {
            method: "POST",
            path: "/v1/handoff",
            summary: "A handoff brief for whoever takes over a session",
            params: vec![tenant_header()],
            body: Some(schema_ref("HandoffRequest")),
            responses: with(vec![("200", ok("Handoff", schema_ref("Handoff")))], common_errors()),
        },
        Op {
            method: "GET",
            path: "/admin/memories/with-suggested-labels",
            summary: "Memories with label suggestions awaiting review, and the label catalogue",
            params: vec![
                tenant_header(),
                param("tenant_id", "query", false, string(), "Tenant; absent means the caller's tenant."),
                param("subject_id", "query", false, string(), "Only this subject."),
                param("label", "query", false, string(), "Only memories with this suggested label."),
                param("limit", "query", false, int(1, 500, 50), "Page size."),
                param("offset", "query", false, int(0, i64::from(i32::MAX), 0), "Rows to skip."),
            ],
            body: None,
            responses: with(
                vec![(
                    "200",
                    ok(
                        "Review queue",
                        json!({"type": "object", "required": ["memories", "total", "limit", "offset", "catalogue"], "properties": {
                            "memories": {"type": "array", "items": {"type": "object", "properties": {
                                "id": string(), "subject_id": string(), "tenant_id": string(), "kind": string(), "content": string(),
                                "summary": string(), "suggested_labels": {"type": "array", "items": string()},
                                "sensitivity_labels": {"type": "array", "items": string()}, "created_at": string()}}},
                            "total": {"type": "integer"}, "limit": {"type": "integer"}, "offset": {"type": "integer"},
                            "catalogue": {"type": "array", "items": {"type": "object", "additionalProperties": string()}}}}),
                    ),
                )],
                common_errors(),
            ),
        },
        Op {
            method: "POST",
            path: "/admin/memories/{memory_id}/promote-labels",
            summary: "Promote suggested labels to sensitivity labels",
            params: vec![
                tenant_header(),
                id_path("memory_id"),
                param("tenant_id", "query", false, string(), "Tenant; absent means the caller's tenant."),
            ],
            body: Some(json!({"type": "object", "required": ["labels"], "properties": {"labels": {"type": "array", "items": string()}}})),
            responses: with(
                vec![
                    (
                        "200",
                        ok(
                            "Promoted",
                            json!({"type": "object", "properties": {"memory_id": string(), "promoted": {"type": "array", "items": string()},
                                "sensitivity_labels": {"type": "array", "items": string()}, "suggested_labels": {"type": "array", "items": string()}}}),
                        ),
                    ),
                    ("404", error("memory not found")),
                ],
                common_errors(),
            ),
        },
        Op {
            method: "GET",
            path: "/v1/erasures/{erasure_id}",
            summary: "An erasure certificate and its signature check",
            params: vec![tenant_header(), id_path("erasure_id")],
            body: None,
            responses: with(
                vec![
                    (
                        "200",
                        ok(
                            "Certificate",
                            json!({"type": "object", "properties": {"erasure_id": string(), "certificate": schema_ref("ErasureCertificate"),
                                "signature_check": {"type": "object", "properties": {"valid": {"type": "boolean", "nullable": true}, "reason": string()}}}}),
                        ),
                    ),
                    ("404", error("erasure not found")),
                ],
                common_errors(),
            ),
        },
    ]
}

fn schemas() -> Value {
    let ts = || json!({"type": "string", "format": "date-time"});
    let nullable_ts = || json!({"type": "string", "format": "date-time", "nullable": true});
    let obj = || json!({"type": "object", "additionalProperties": true});
    json!({
        "Error": {"type": "object", "properties": {"error": {"type": "object", "required": ["code", "message"], "properties": {
            "code": string(), "message": string(), "details": {}, "request_id": string()}}}},
        "Readiness": {"type": "object", "properties": {"status": {"type": "string", "enum": ["ready", "degraded", "not_ready"]}, "checks": {"type": "array", "items": obj()}}},
        "CreateEpisode": {"type": "object", "required": ["subject_id", "source", "type", "payload"], "properties": {
            "subject_id": {"type": "string", "minLength": 1, "maxLength": 256}, "source": {"type": "string", "minLength": 1, "maxLength": 256},
            "type": {"type": "string", "minLength": 1, "maxLength": 128}, "payload": obj(), "metadata": obj(), "provenance": obj(),
            "session_id": {"type": "string", "maxLength": 256, "nullable": true}, "occurred_at": nullable_ts(),
            "idempotency_key": {"type": "string", "maxLength": 512, "nullable": true}}},
        "Episode": {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}, "subject_id": string(), "source": string(), "type": string(),
            "payload": obj(), "metadata": obj(), "provenance": obj(), "session_id": {"type": "string", "nullable": true}, "occurred_at": ts(), "created_at": ts()}},
        "Memory": {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}, "subject_id": string(),
            "kind": {"type": "string", "enum": ["profile_fact", "episode_summary", "procedure", "artifact_ref"]}, "content": string(), "summary": string(),
            "confidence": {"type": "number"}, "valid_from": ts(), "valid_to": nullable_ts(), "source_episode_ids": {"type": "array", "items": {"type": "string", "format": "uuid"}},
            "metadata": obj(), "status": {"type": "string", "enum": ["active", "superseded", "tombstoned"]}, "sensitivity_labels": {"type": "array", "items": string()},
            "suggested_labels": {"type": "array", "items": string()}, "created_at": ts(), "updated_at": ts()}},
        "CompileResult": {"type": "object", "properties": {"subject_id": string(), "memories_created": {"type": "integer"},
            "memories": {"type": "array", "items": schema_ref("Memory")}, "has_more": {"type": "boolean"}, "remaining_episodes": {"type": "integer"}}},
        "CompileJob": {"type": "object", "properties": {"job_id": string(), "status": {"type": "string", "enum": ["pending", "running", "completed", "failed"]},
            "subject_id": string(), "attached": {"type": "boolean"}, "memories_created": {"type": "integer"}, "memories": {"type": "array", "items": schema_ref("Memory")}, "error": string()}},
        "ContextRequest": {"type": "object", "required": ["subject_id", "task"], "properties": {
            "subject_id": {"type": "string", "minLength": 1, "maxLength": 256}, "task": {"type": "string", "minLength": 1, "maxLength": 4000},
            "max_tokens": {"type": "integer", "minimum": 1, "maximum": 128000, "default": 4000}, "session_id": {"type": "string", "maxLength": 256},
            "as_of": {"type": "string", "format": "date-time", "description": "mnemo extension: assemble from what was believed at this instant"},
            "emit_receipt": {"type": "boolean"}, "query_id": {"type": "string", "maxLength": 64}, "task_id": {"type": "string", "maxLength": 64},
            "parent_receipt_id": {"type": "string", "maxLength": 26}, "caller_id": {"type": "string", "maxLength": 256}, "caller_type": {"type": "string", "maxLength": 64}}},
        "ContextBundle": {"type": "object", "properties": {"subject_id": string(), "task": string(),
            "facts": {"type": "array", "items": schema_ref("Memory")}, "episodes": {"type": "array", "items": schema_ref("Episode")},
            "procedures": {"type": "array", "items": schema_ref("Memory")}, "provenance": obj(), "assembled_context": string(),
            "token_estimate": {"type": "integer"}, "sessions": {"type": "array", "items": obj()}, "as_of": ts(),
            "receipt_id": {"type": "string", "nullable": true}, "receipt_emitted": {"type": "boolean"}}},
        "TenantConfig": {"type": "object", "properties": {"tenant_id": string(), "config": obj(), "version": {"type": "integer"},
            "created_at": nullable_ts(), "updated_at": nullable_ts()}},
        "TenantConfigPatch": {"type": "object", "additionalProperties": false, "properties": {
            "receipts": {"type": "string", "enum": ["always", "on_request", "never"], "nullable": true},
            "receipt_retention_days": {"type": "integer", "minimum": 0, "maximum": 36500, "nullable": true},
            "policy_mode": {"type": "string", "enum": ["log_only", "enforce"], "nullable": true},
            "require_caller_identity": {"type": "boolean", "nullable": true},
            "region": {"type": "string", "minLength": 1, "maxLength": 64, "nullable": true},
            "receipt_signing_key_id": {"type": "string", "minLength": 1, "maxLength": 64, "nullable": true},
            "claim_keys": {"type": "object", "additionalProperties": {"type": "string", "enum": ["single", "multi"]}, "nullable": true},
            "rate_limit_rpm": {"type": "integer", "minimum": 0, "nullable": true},
            "auto_labeling": {"type": "boolean", "nullable": true},
            "expected_version": {"type": "integer", "minimum": 0}, "force_region_pin": {"type": "boolean"}}},
        "ErasureCertificate": {"type": "object", "properties": {"certificate_version": string(), "erasure_id": string(), "tenant_id": string(),
            "subject_sha256": string(), "erased_at": ts(), "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
            "total_rows": {"type": "integer"}, "verified_tables": {"type": "array", "items": string()}, "rows_remaining": {"type": "integer"},
            "signature_key_id": {"type": "string", "nullable": true}, "signature_algorithm": {"type": "string", "nullable": true},
            "signature": {"type": "string", "nullable": true}}},
        "MemoryTemplate": {"type": "object", "properties": {"id": string(), "version": {"type": "integer"}, "title": string(),
            "description": string(), "episode_type": string(), "content_template": string(), "min_values": {"type": "integer"},
            "fields": {"type": "array", "items": {"type": "object", "properties": {"name": string(),
                "type": {"type": "string", "enum": ["text", "number", "integer", "date", "email", "phone", "url", "boolean", "enum"]},
                "required": {"type": "boolean"}, "description": string(), "options": {"type": "array", "items": string()}}}}}},
        "ApplyTemplate": {"type": "object", "required": ["subject_id", "values"], "additionalProperties": false, "properties": {
            "subject_id": {"type": "string", "minLength": 1, "maxLength": 256}, "session_id": {"type": "string", "maxLength": 256, "nullable": true},
            "values": {"type": "object", "additionalProperties": {"type": "string"}},
            "idempotency_key": {"type": "string", "maxLength": 512, "nullable": true}}},
        "WebhookEvent": {"type": "object", "properties": {"id": string(), "tenant_id": string(), "subject_id": {"type": "string", "nullable": true},
            "event": string(), "status": {"type": "string", "enum": ["pending", "delivered", "dead_letter"]}, "attempts": {"type": "integer"},
            "max_attempts": {"type": "integer"}, "next_attempt_at": nullable_ts(), "last_attempt_at": nullable_ts(),
            "last_error": {"type": "string", "nullable": true}, "http_status": {"type": "integer", "nullable": true}, "created_at": ts(),
            "delivered_at": nullable_ts(), "data": {"type": "object", "nullable": true}}},
        "WebhookStats": {"type": "object", "properties": {"enabled": {"type": "boolean"}, "events": {"type": "array", "items": string()},
            "signed": {"type": "boolean"}, "counts": {"type": "object", "additionalProperties": {"type": "integer"}}, "total": {"type": "integer"},
            "oldest_pending_at": nullable_ts()}},
        "Resolution": {"type": "object", "required": ["id", "subject_id", "session_id", "status", "created_at", "updated_at"], "properties": {
            "id": {"type": "string", "format": "uuid"}, "subject_id": string(), "session_id": string(),
            "status": {"type": "string", "enum": ["open", "resolved", "unresolved"]}, "resolution_summary": {"type": "string", "nullable": true},
            "resolved_at": nullable_ts(), "metadata": obj(), "created_at": ts(), "updated_at": ts()}},
        "HealthFactor": {"type": "object", "required": ["signal", "impact", "detail"], "properties": {"signal": string(), "impact": {"type": "integer"}, "detail": string()}},
        "Health": {"type": "object", "required": ["subject_id", "score", "state", "factors"], "properties": {"subject_id": string(),
            "score": {"type": "integer", "minimum": 0, "maximum": 100}, "state": {"type": "string", "enum": ["healthy", "watch", "at_risk"]},
            "factors": {"type": "array", "items": schema_ref("HealthFactor")}}},
        "SessionSLA": {"type": "object", "properties": {"session_id": string(), "status": {"type": "string", "enum": ["resolved", "open"]},
            "first_message_at": {"type": "string", "nullable": true}, "first_response_at": {"type": "string", "nullable": true},
            "resolved_at": {"type": "string", "nullable": true}, "first_response_seconds": {"type": "number", "nullable": true},
            "resolution_seconds": {"type": "number", "nullable": true}, "open_duration_seconds": {"type": "number", "nullable": true},
            "first_response_breached": {"type": "boolean"}, "resolution_breached": {"type": "boolean"}}},
        "SLASummary": {"type": "object", "properties": {"subject_id": string(), "total_sessions": {"type": "integer"}, "resolved_sessions": {"type": "integer"},
            "open_sessions": {"type": "integer"}, "avg_first_response_seconds": {"type": "number", "nullable": true},
            "avg_resolution_seconds": {"type": "number", "nullable": true}, "first_response_breach_count": {"type": "integer"},
            "resolution_breach_count": {"type": "integer"}, "sessions": {"type": "array", "items": schema_ref("SessionSLA")}}},
        "HandoffRequest": {"type": "object", "required": ["subject_id", "session_id"], "properties": {
            "subject_id": {"type": "string", "minLength": 1, "maxLength": 256}, "session_id": {"type": "string", "minLength": 1, "maxLength": 256},
            "reason": {"type": "string", "maxLength": 256, "default": "escalation"}, "max_tokens": {"type": "integer", "minimum": 1, "maximum": 16000, "default": 4000},
            "emit_receipt": {"type": "boolean"}, "query_id": {"type": "string", "maxLength": 64}, "task_id": {"type": "string", "maxLength": 64},
            "parent_receipt_id": {"type": "string", "maxLength": 26}, "caller_id": {"type": "string", "maxLength": 256}, "caller_type": {"type": "string", "maxLength": 64}}},
        "Handoff": {"type": "object", "required": ["subject_id", "session_id", "reason", "generated_at"], "properties": {
            "subject_id": string(), "session_id": string(), "reason": string(), "generated_at": ts(), "customer_summary": string(),
            "active_issue": string(), "attempted_steps": {"type": "array", "items": string()}, "key_facts": {"type": "array", "items": string()},
            "resolution_history": {"type": "array", "items": {"type": "object", "properties": {"session_id": string(), "status": string(),
                "summary": {"type": "string", "nullable": true}, "resolved_at": nullable_ts()}}},
            "recent_context": {"type": "array", "items": string()}, "health_score": {"type": "integer"},
            "health_state": {"type": "string", "enum": ["healthy", "watch", "at_risk"]}, "health_factors": {"type": "array", "items": schema_ref("HealthFactor")},
            "handoff_notes": string(), "token_estimate": {"type": "integer"}, "provenance": obj(),
            "receipt_id": {"type": "string", "nullable": true}, "receipt_emitted": {"type": "boolean"}}},
        "Receipt": {"type": "object", "additionalProperties": true, "properties": {"receipt_id": string(), "mode": string(), "subject_id": string(),
            "task": string(), "as_of": string(), "created_at": string(), "selected_entries": {"type": "array", "items": obj()}, "policy": obj(),
            "output": obj(), "chain": obj(), "status": string(), "receipt_signature": {"type": "string", "nullable": true}}},
    })
}

/// The whole document.
pub fn document() -> Value {
    let mut paths: Map<String, Value> = Map::new();
    for op in operations() {
        let mut o = json!({ "summary": op.summary, "operationId": format!("{} {}", op.method, op.path), "parameters": op.params });
        if let Some(b) = op.body {
            o["requestBody"] = json_body(b);
            o["requestBody"]["required"] = json!(true);
        }
        let responses: Map<String, Value> = op.responses.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        o["responses"] = Value::Object(responses);
        let entry = paths.entry(op.path.to_string()).or_insert_with(|| json!({}));
        entry[op.method.to_lowercase()] = o;
    }
    json!({
        "openapi": "3.0.3",
        "info": {"title": "mnemo", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Memory service for AI agents; Statewave v1 compatible."},
        "components": {
            "schemas": schemas(),
            "securitySchemes": {"apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"}},
        },
        "security": [{"apiKey": []}],
        "paths": paths,
    })
}

/// (method, path) of every documented operation.
pub fn documented() -> Vec<(String, String)> {
    operations().into_iter().map(|o| (o.method.to_string(), o.path.to_string())).collect()
}
