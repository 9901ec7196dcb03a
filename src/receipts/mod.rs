//! Receipts and erasure certificates: canonical JSON and signing.

pub mod canonical;
pub mod certificate;
pub mod exact_json;
pub mod signing;
