//! Business logic: plain Rust over the store, no HTTP types.

pub mod access;
pub mod compile;
pub mod context;
pub mod context_call;
pub mod dump;
pub mod episodes;
pub mod erase;
pub mod handoff;
pub mod jobs;
pub mod keys;
pub mod labels;
pub mod memories;
pub mod policy;
pub mod query_terms;
pub mod receipts;
pub mod reembed;
pub mod replay;
pub mod sessions;
pub mod statewave_backup;
pub mod task_vectors;
pub mod templates;
pub mod tenant_config;
pub mod tenant_settings;
pub mod timeline;
pub mod webhooks;
pub mod working_memory;
