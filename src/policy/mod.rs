//! Sensitivity-label policy: bundle parsing and hashing, per-memory evaluation, and label normalisation (pure, no I/O).

pub mod bundle;
mod document;
pub mod eval;
pub mod labels;
pub mod suggest;
