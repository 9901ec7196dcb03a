//! The limits every door applies to the same inputs, defined once: REST validates with them,
//! MCP's tool schemas and argument checks read them, the console's forms and the OpenAPI
//! document states them (the test below holds its figures to these: utoipa takes only literals).

/// The largest token budget of a context bundle.
pub const MAX_BUDGET_TOKENS: i64 = 128_000;
/// The budget of a context bundle when the request names none.
pub const DEFAULT_BUDGET_TOKENS: i64 = 4000;
/// The largest handoff budget.
pub const MAX_HANDOFF_TOKENS: i64 = 16_000;
/// The longest task text, in characters.
pub const MAX_TASK_CHARS: usize = 4000;
/// The longest search query, in characters.
pub const MAX_QUERY_CHARS: usize = 4000;
/// The longest subject or session id, in characters.
pub const MAX_ID_CHARS: usize = 256;
/// The largest request body when `MNEMO_MAX_BODY_BYTES` is not set.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_openapi_document_states_these_limits() {
        let doc = crate::http::openapi::document();
        let schemas = &doc["components"]["schemas"];
        let context = &schemas["ContextRequest"]["properties"];
        assert_eq!(context["max_tokens"]["maximum"].as_i64(), Some(MAX_BUDGET_TOKENS));
        assert_eq!(context["max_tokens"]["default"].as_i64(), Some(DEFAULT_BUDGET_TOKENS));
        assert_eq!(context["task"]["maxLength"].as_u64(), Some(MAX_TASK_CHARS as u64));
        assert_eq!(context["subject_id"]["maxLength"].as_u64(), Some(MAX_ID_CHARS as u64));
        let handoff = &schemas["HandoffRequest"]["properties"];
        assert_eq!(handoff["max_tokens"]["maximum"].as_i64(), Some(MAX_HANDOFF_TOKENS));
        assert_eq!(handoff["max_tokens"]["default"].as_i64(), Some(DEFAULT_BUDGET_TOKENS));
    }
}
