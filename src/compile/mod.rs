//! Compiling episodes into memories: pure extraction, claims and supersession rules.
//! The database side lives in `services::compile`.

pub mod attributes;
pub mod candidates;
pub mod claims;
pub mod digest;
pub mod fact;
pub mod forget;
pub mod frames;
pub mod heuristic;
pub mod instruction;
pub mod link;
pub mod llm;
pub mod pipeline;
pub mod procedures;
pub mod registry;
pub mod scope;
pub mod stop_words;
pub mod supersede;
pub mod text;
pub mod topic;
pub mod updates;
pub mod values;
