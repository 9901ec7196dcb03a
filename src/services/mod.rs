//! Business logic: plain Rust over the store, no HTTP types.

pub mod episodes;
