//! Receipts: canonical JSON and signing (the receipt store and endpoints come with the
//! receipts issue).

pub mod canonical;
pub mod signing;
