//! Path parameters checked before a handler uses them, with the 422 naming `path.<field>`.

use crate::error::{ApiError, FieldError};

/// A subject id from the path (1-256 characters without NUL), or a 422 naming `path.subject_id`.
pub fn subject_id_path(subject_id: &str) -> Result<(), ApiError> {
    text_id_path("subject_id", subject_id)
}

/// A text id from the path (1-256 characters without NUL), or a 422 naming `path.<field>`.
pub fn text_id_path(field: &str, value: &str) -> Result<(), ApiError> {
    if !crate::model::text::valid_text_id(value) {
        return Err(ApiError::validation(vec![FieldError {
            loc: vec!["path".into(), field.into()],
            msg: "must be 1-256 characters without NUL".into(),
            kind: "string_length",
        }]));
    }
    Ok(())
}

/// A memory id from the path, or a 422 naming `path.memory_id`.
pub fn memory_id_path(id: &str) -> Result<uuid::Uuid, ApiError> {
    uuid::Uuid::parse_str(id).map_err(|_| {
        ApiError::validation(vec![FieldError {
            loc: vec!["path".into(), "memory_id".into()],
            msg: "must be a UUID".into(),
            kind: "uuid_parsing",
        }])
    })
}
