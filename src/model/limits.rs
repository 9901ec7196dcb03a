//! The limits of inputs, defined once: every door (REST, MCP, console) validates with them,
//! MCP's tool schemas and argument checks read them, the console's forms and the OpenAPI
//! document states them (tests/api/openapi.rs holds its figures to these: utoipa takes only literals).

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
