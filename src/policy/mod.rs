//! Sensitivity-label policy: bundle parsing and hashing, per-memory evaluation, and label normalisation (pure, no I/O).

pub mod bundle;
pub mod eval;
pub mod labels;
