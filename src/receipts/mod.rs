//! Receipts and erasure certificates: canonical JSON and signing.

pub mod canonical;
pub mod certificate;
pub mod signing;
