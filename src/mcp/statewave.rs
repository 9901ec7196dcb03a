//! `MNEMO_MCP_TOOLSET=statewave`: Statewave's MCP tool names and argument names (those of
//! `@statewavedev/mcp-server`, see [`statewave_schema`]), with the HTTP API's field names still
//! accepted, mapped onto the same service calls as the HTTP routes; results are the HTTP
//! response bodies.

use rmcp::model::Tool;
use serde_json::{Map, Value};

use crate::error::{ApiError, FieldError};
use crate::http::compile::{compile_error, CompileJob, CompileResult};
use crate::http::context::ContextBundle;
use crate::http::extract::Caller;
use crate::http::input::{object_at, Reader};
use crate::http::memories::SearchResults;
use crate::mcp::args::{self, context_args, ok_json, parse, pick, ToolResult, DATA_NOTICE};
use crate::mcp::statewave_schema;
use crate::model::episode::{NewEpisode, MAX_IDEMPOTENCY_KEY};
use crate::services::compile::compile_batch_for;
use crate::services::context_call::context_call;
use crate::services::memories::{self, KindFilter, SearchQuery};
use crate::services::timeline::EpisodeFilter;
use crate::services::{episodes, jobs, timeline};
use crate::state::AppState;

/// Longest `text` of an ingested episode (the `remember` tool's bound).
const MAX_TEXT: usize = 100_000;
/// Most episode kinds a timeline filter names.
const MAX_KINDS: usize = 50;

/// The Statewave tool definitions.
pub fn list() -> Vec<Tool> {
    statewave_schema::list()
}

/// Runs a Statewave tool; None for a name this tool set does not have.
pub async fn call(st: &AppState, caller: &Caller, name: &str, a: &Value) -> Option<ToolResult> {
    let tenant = caller.tenant.as_str();
    Some(match name {
        "statewave_ingest_episode" => ingest(st, tenant, a).await,
        "statewave_search_memories" => search(st, tenant, a).await,
        "statewave_get_context" => context(st, tenant, a).await,
        "statewave_get_timeline" => get_timeline(st, tenant, a).await,
        "statewave_compile_subject" => compile(st, tenant, a).await,
        _ => return None,
    })
}

/// Reads the arguments of `tool` (Statewave's names or their HTTP aliases) with `read`.
fn parse_args<T>(tool: &str, a: &Value, read: impl FnOnce(&mut Reader<'_>) -> T) -> Result<T, ApiError> {
    let known = statewave_schema::accepted(tool);
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    parse(a, &known, read)
}

/// The subject, as `subject` or `subject_id`.
fn subject(r: &mut Reader<'_>) -> String {
    let name = pick(r, &["subject", "subject_id"]);
    r.req_str(name, 1, 256)
}

/// Statewave's episode (`subject, kind, text, source: {type, id, url}, occurred_at,
/// idempotency_key, metadata`) or the HTTP body's fields, as one new episode. `text` becomes
/// `payload.text`; `source.id` and `source.url` go to `metadata.source_id` / `source_url`.
fn read_ingest(r: &mut Reader<'_>) -> NewEpisode {
    let subject_id = subject(r);
    let kind = pick(r, &["kind", "type"]);
    let kind = r.req_str(kind, 1, 128);
    let payload = match pick(r, &["text", "payload"]) {
        "payload" => r.req_object("payload"),
        _ => {
            let text = r.req_str("text", 1, MAX_TEXT);
            let mut p = Map::new();
            p.insert("text".into(), Value::String(text));
            p
        }
    };
    let mut metadata = r.opt_object("metadata");
    let source = read_source(r, &mut metadata);
    NewEpisode {
        subject_id,
        source,
        kind,
        payload,
        metadata,
        provenance: r.opt_object("provenance"),
        session_id: r.opt_str("session_id", 256),
        occurred_at: r.opt_datetime("occurred_at"),
        idempotency_key: r.opt_str("idempotency_key", MAX_IDEMPOTENCY_KEY).filter(|k| !k.is_empty()),
    }
}

/// `source` as Statewave's object (its type is the episode source) or as the HTTP string.
fn read_source(r: &mut Reader<'_>, metadata: &mut Map<String, Value>) -> String {
    let loc = r.child_loc("source");
    match r.raw("source") {
        Some(Value::String(_)) => r.req_str("source", 1, 256),
        Some(v @ Value::Object(obj)) => {
            let known = ["type", "id", "url"];
            let mut unknown: Vec<&String> = obj.keys().filter(|k| !known.contains(&k.as_str())).collect();
            unknown.sort();
            for k in unknown {
                let mut l = loc.clone();
                l.push(k.clone());
                r.errors().push(FieldError {
                    loc: l,
                    msg: "unknown field (expected type, id, url)".into(),
                    kind: "extra_forbidden",
                });
            }
            let Some(mut s) = object_at(v, loc, r.errors()) else { return String::new() };
            let source = s.req_str("type", 1, 256);
            for (field, key, max) in [("id", "source_id", 512), ("url", "source_url", 2048)] {
                if let Some(value) = s.opt_str(field, max) {
                    metadata.insert(key.into(), Value::String(value));
                }
            }
            source
        }
        Some(_) => {
            let msg = "must be an object {type, id, url} or a string".into();
            r.errors().push(FieldError { loc, msg, kind: "type_error" });
            String::new()
        }
        None => r.req_str("source", 1, 256),
    }
}

async fn ingest(st: &AppState, tenant: &str, a: &Value) -> ToolResult {
    let input = parse_args("statewave_ingest_episode", a, read_ingest)?;
    let (row, _) = episodes::ingest_one(&st.pool, &st.tenants, &st.webhooks, tenant, &input).await?;
    Ok(ok_json(&[], serde_json::to_value(row).map_err(anyhow::Error::from)?))
}

async fn search(st: &AppState, tenant: &str, a: &Value) -> ToolResult {
    let query = parse_args("statewave_search_memories", a, |r| {
        // Statewave's schema makes the subject optional, but search is scoped to one subject
        // (as in Statewave's server): say so rather than a bare "field required".
        let subject_id = if r.raw("subject").is_none() && r.raw("subject_id").is_none() {
            let loc = r.child_loc("subject");
            let msg = "field required: memories are searched within one subject; pass its id".into();
            r.errors().push(FieldError { loc, msg, kind: "missing" });
            String::new()
        } else {
            subject(r)
        };
        let q = pick(r, &["query", "q"]);
        SearchQuery {
            subject_id,
            q: r.opt_str(q, 4000).filter(|s| !s.is_empty()),
            kind: KindFilter::from_param(r.opt_str("kind", 64).as_deref()),
            semantic: r.opt_bool("semantic").unwrap_or(false),
            hybrid: r.opt_bool("hybrid").unwrap_or(true),
            limit: r.opt_int("limit", 1, 500).unwrap_or(20),
        }
    })?;
    let (found, mode) = memories::search(&st.pool, &st.embedder, tenant, &query).await?;
    let body = SearchResults { memories: found, search_mode: mode };
    Ok(ok_json(&[DATA_NOTICE], serde_json::to_value(body).map_err(anyhow::Error::from)?))
}

async fn context(st: &AppState, tenant: &str, a: &Value) -> ToolResult {
    let c = parse_args("statewave_get_context", a, |r| {
        let subject = pick(r, &["subject", "subject_id"]);
        let task = pick(r, &["query", "task"]);
        context_args(r, true, subject, task)
    })?;
    let (bundle, receipt_id) =
        context_call(st, tenant, &c.req, c.emit_receipt, &c.meta).await.map_err(args::context_refused)?;
    let body = ContextBundle::new(bundle, c.req.subject_id, c.req.task, receipt_id);
    Ok(ok_json(&[DATA_NOTICE], serde_json::to_value(body).map_err(anyhow::Error::from)?))
}

async fn get_timeline(st: &AppState, tenant: &str, a: &Value) -> ToolResult {
    let query = parse_args("statewave_get_timeline", a, |r| {
        let status = r.opt_str("status", 16).unwrap_or_else(|| "all".into());
        if status != "all" && status != "active" {
            let loc = r.child_loc("status");
            r.errors().push(FieldError { loc, msg: "must be one of: all, active".into(), kind: "enum" });
        }
        let since = r.opt_datetime("since");
        let until = r.opt_datetime("until");
        if let (Some(s), Some(u)) = (since, until) {
            if u < s {
                let loc = r.child_loc("until");
                r.errors().push(FieldError { loc, msg: "must not be before since".into(), kind: "value_error" });
            }
        }
        timeline::PageQuery {
            subject_id: subject(r),
            limit: r.opt_int("limit", 1, 200).unwrap_or(100),
            offset: r.opt_int("offset", 0, i64::from(i32::MAX)).unwrap_or(0),
            newest_first: r.opt_bool("newest_first").unwrap_or(false),
            active_only: status == "active",
            filter: EpisodeFilter { since, until, kinds: read_kinds(r) },
        }
    })?;
    let page = timeline::page(&st.pool, tenant, &query).await?;
    let body = crate::http::timeline::Timeline::new(query.subject_id, page);
    Ok(ok_json(&[DATA_NOTICE], serde_json::to_value(body).map_err(anyhow::Error::from)?))
}

/// `kinds`: a list of episode types (or one comma-separated string); empty means all.
fn read_kinds(r: &mut Reader<'_>) -> Option<Vec<String>> {
    let loc = r.child_loc("kinds");
    let raw = r.raw("kinds")?;
    let items: Vec<&Value> = match raw {
        Value::Array(a) => a.iter().collect(),
        Value::String(_) => vec![raw],
        _ => Vec::new(),
    };
    let mut kinds = Vec::new();
    let mut bad = !(raw.is_array() || raw.is_string());
    for v in items {
        match v.as_str() {
            Some(s) if !s.contains('\0') => kinds.extend(s.split(',').map(str::trim).map(String::from)),
            _ => bad = true,
        }
    }
    kinds.retain(|k| !k.is_empty());
    if bad || kinds.iter().any(|k| k.chars().count() > 128) {
        let msg = "must be a list of episode kinds (strings of at most 128 characters)".into();
        r.errors().push(FieldError { loc, msg, kind: "list_type" });
    } else if kinds.len() > MAX_KINDS {
        r.errors().push(FieldError { loc, msg: format!("must have at most {MAX_KINDS} items"), kind: "too_long" });
    }
    (!kinds.is_empty()).then_some(kinds)
}

async fn compile(st: &AppState, tenant: &str, a: &Value) -> ToolResult {
    let (subject_id, is_async) = parse_args("statewave_compile_subject", a, |r| {
        // `force` is checked and ignored: a compile reads only the pending episodes either way.
        r.opt_bool("force");
        (subject(r), r.opt_bool("async").unwrap_or(false))
    })?;
    if is_async {
        let (job, attached) = jobs::submit(&st.pool, tenant, &subject_id, st.config.job_stale_secs).await?;
        st.job_notify.notify_one();
        let body = CompileJob {
            job_id: job.id,
            status: "pending".into(),
            subject_id,
            attached: attached.then_some(true),
            memories_created: None,
            memories: None,
            error: None,
            llm_tokens: None,
        };
        return Ok(ok_json(&[], serde_json::to_value(body).map_err(anyhow::Error::from)?));
    }
    let batch = compile_batch_for(st, tenant, &subject_id, None).await.map_err(compile_error)?;
    let body = CompileResult {
        subject_id,
        memories_created: batch.memories.len(),
        memories: batch.memories,
        has_more: batch.has_more,
        remaining_episodes: batch.remaining,
        llm_tokens: crate::http::compile::LlmTokens::of(batch.llm),
    };
    Ok(ok_json(&[], serde_json::to_value(body).map_err(anyhow::Error::from)?))
}
