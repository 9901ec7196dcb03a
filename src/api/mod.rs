//! The wire types every door shares: request and response bodies, query parameters, the
//! caller's identity and the error mapping of service results. REST (`http`), MCP (`mcp`) and
//! the console (`console`) import these; none of them imports another door.

pub mod compile;
pub mod context;
pub mod episodes;
pub mod extract;
pub mod memories;
pub mod query;
pub mod schema;
pub mod subjects;
pub mod timeline;

/// Where the MCP endpoint is mounted.
pub const MCP_PATH: &str = "/mcp";
/// Where the console lives.
pub const CONSOLE_BASE: &str = "/admin/ui";
