//! One module per console page (or family of pages).

pub mod config;
pub mod context;
pub mod erase;
pub mod erase_item;
pub mod jobs;
pub mod keys;
pub mod labels;
pub mod login;
pub mod receipts;
pub mod subject;
pub mod subjects;
pub mod tenants;
pub mod webhooks;

use crate::console::PageError;
use crate::model::text::{valid_tenant_id, valid_text_id};

/// A tenant id from the path, checked as the API checks the header.
pub fn tenant(raw: &str) -> Result<&str, PageError> {
    if valid_tenant_id(raw) {
        Ok(raw)
    } else {
        Err(PageError::bad("A tenant id is 1-256 printable characters."))
    }
}

/// A subject id from the path, by the API's own rule ([`valid_text_id`]), so every subject the
/// API holds can be viewed and erased here.
pub fn subject(raw: &str) -> Result<&str, PageError> {
    if valid_text_id(raw) {
        Ok(raw)
    } else {
        Err(PageError::bad("A subject id is 1-256 characters without NUL."))
    }
}
