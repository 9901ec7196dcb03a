//! mnemo's integration suite, one test binary: a real server (in process, or the `mnemo` binary)
//! on port 0 against real Postgres with pgvector, through HTTP, the Statewave SDK, the MCP client
//! and a browser. Each module is one area; `common` is the shared harness (every test gets its
//! own database, dropped when the test's server handle is dropped).
//!
//! Run one area with a filter: `cargo test --test api -- episodes::`.

mod common;

mod auth;
mod basics;
mod compat_sdk;
mod compile;
mod connections;
mod console;
mod console_erase;
mod console_html;
mod console_http;
mod context;
mod context_index;
mod context_kept;
mod context_lanes;
mod context_sql;
mod definer;
mod digests;
mod docs;
mod doubts;
mod episodes;
mod erase;
mod erase_items;
mod eval;
mod eval_command;
mod eval_updates;
mod examples;
mod fuzz_bodies;
mod import_checks;
mod instructions;
mod key_scopes;
mod labels;
mod lexemes;
mod llm_compiler;
mod mcp;
mod open_mode;
mod openapi;
mod passages;
mod policy;
mod portability;
mod procedures;
mod receipts;
mod scale_out;
mod sessions;
mod sharding;
mod sql_functions;
mod telemetry;
mod templates;
mod tenancy;
mod trust;
mod updates;
mod webhooks;
