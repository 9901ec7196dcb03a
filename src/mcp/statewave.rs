//! `MNEMO_MCP_TOOLSET=statewave`: Statewave's MCP tool names and argument names (those of
//! `@statewavedev/mcp-server`, see [`statewave_schema`]), with the HTTP API's field names still
//! accepted, mapped onto the same service calls as the HTTP routes; results are the HTTP
//! response bodies.

use rmcp::model::Tool;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::api::compile::{compile_error, CompileJob, CompileResult};
use crate::api::context::ContextBundle;
use crate::api::extract::Caller;
use crate::api::memories::SearchResults;
use crate::api::timeline::TimelineStatus;
use crate::error::ApiError;
use crate::mcp::args::{self, ok_json, parse_named, ContextArgs, OneOf, ToolResult, DATA_NOTICE};
use crate::mcp::statewave_args::{Compile, Context, Ingest, Search, Timeline};
use crate::mcp::statewave_schema;
use crate::model::episode::NewEpisode;
use crate::services::compile::compile_call;
use crate::services::context_call::context_call;
use crate::services::memories::{self, KindFilter, SearchQuery};
use crate::services::timeline::EpisodeFilter;
use crate::services::{episodes, jobs, timeline};
use crate::state::AppState;

/// The subject, as `subject` or `subject_id`.
const SUBJECT: OneOf = OneOf::alias(&["subject", "subject_id"]);

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

/// Reads the arguments of `tool` (Statewave's names or their HTTP aliases).
fn parse_args<T>(tool: &str, a: &Value, one_of: &[OneOf]) -> Result<T, ApiError>
where
    T: DeserializeOwned + garde::Validate<Context = ()>,
{
    let known = statewave_schema::accepted(tool);
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    parse_named(a, &known, one_of)
}

async fn ingest(st: &AppState, tenant: &str, a: &Value) -> ToolResult {
    let one_of = [SUBJECT, OneOf::alias(&["kind", "type"]), OneOf::exclusive(&["text", "payload"])];
    let input: Ingest = parse_args("statewave_ingest_episode", a, &one_of)?;
    let input = NewEpisode::from(input);
    let (row, _) = episodes::ingest_one(&st.group_commit, &st.tenants, tenant, input).await?;
    Ok(ok_json(&[], serde_json::to_value(row).map_err(anyhow::Error::from)?))
}

async fn search(st: &AppState, tenant: &str, a: &Value) -> ToolResult {
    let one_of = [SUBJECT, OneOf::alias(&["query", "q"])];
    let s: Search = parse_args("statewave_search_memories", a, &one_of)?;
    let query = SearchQuery {
        subject_id: s.subject.unwrap_or_default(),
        q: s.query.filter(|s| !s.is_empty()),
        kind: KindFilter::from_param(s.kind.as_deref()),
        semantic: s.semantic.unwrap_or(false),
        hybrid: s.hybrid.unwrap_or(true),
        limit: s.limit.unwrap_or(20),
    };
    let (found, mode) = memories::search(&st.pool, &st.embedder, tenant, &query).await?;
    let body = SearchResults { memories: found, search_mode: mode };
    Ok(ok_json(&[DATA_NOTICE], serde_json::to_value(body).map_err(anyhow::Error::from)?))
}

async fn context(st: &AppState, tenant: &str, a: &Value) -> ToolResult {
    let one_of = [SUBJECT.ahead(), OneOf::alias(&["query", "task"]).ahead()];
    let r: Context = parse_args("statewave_get_context", a, &one_of)?;
    let mut c = ContextArgs::new(r.subject, r.query, r.max_tokens, r.session_id, r.as_of);
    (c.emit_receipt, c.meta) = r.receipt.into_meta();
    let (bundle, receipt_id) = context_call(&st.context_deps(), tenant, &c.req, c.emit_receipt, &c.meta)
        .await
        .map_err(args::context_refused)?;
    let body = ContextBundle::new(bundle, c.req.subject_id, c.req.task, receipt_id);
    Ok(ok_json(&[DATA_NOTICE], serde_json::to_value(body).map_err(anyhow::Error::from)?))
}

async fn get_timeline(st: &AppState, tenant: &str, a: &Value) -> ToolResult {
    let t: Timeline = parse_args("statewave_get_timeline", a, &[SUBJECT])?;
    let query = timeline::PageQuery {
        subject_id: t.subject,
        limit: t.limit.unwrap_or(100),
        offset: t.offset.unwrap_or(0),
        newest_first: t.newest_first.unwrap_or(false),
        active_only: t.status == Some(TimelineStatus::Active),
        filter: EpisodeFilter { since: t.since, until: t.until, kinds: t.kinds },
    };
    let page = timeline::page(&st.pool, tenant, &query).await?;
    let body = crate::api::timeline::Timeline::new(query.subject_id, page);
    Ok(ok_json(&[DATA_NOTICE], serde_json::to_value(body).map_err(anyhow::Error::from)?))
}

async fn compile(st: &AppState, tenant: &str, a: &Value) -> ToolResult {
    let c: Compile = parse_args("statewave_compile_subject", a, &[SUBJECT])?;
    let (subject_id, is_async) = (c.subject, c.r#async.unwrap_or(false));
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
            progress: None,
        };
        return Ok(ok_json(&[], serde_json::to_value(body).map_err(anyhow::Error::from)?));
    }
    let batch =
        compile_call(st.compile_deps(), st.compile_limits(), tenant, &subject_id, None).await.map_err(compile_error)?;
    let body = CompileResult {
        subject_id,
        memories_created: batch.memories.len(),
        memories: batch.memories,
        has_more: batch.has_more,
        remaining_episodes: batch.remaining,
        llm_tokens: crate::api::compile::LlmTokens::of(batch.llm),
    };
    Ok(ok_json(&[], serde_json::to_value(body).map_err(anyhow::Error::from)?))
}
