//! Statewave's subject backup (`GET /admin/export/{subject_id}`, `POST /admin/import`, and
//! `mnemo export|import --format statewave`): one subject, one document, one transaction.
//!
//! Import keeps ids, kinds, validity and status; it re-derives claims through the tenant's
//! registry, embeds with mnemo's own embedder (Statewave's vectors come from another model),
//! gives episodes the subject's next seqs in document order and moves the compile cursor past
//! the ones Statewave had compiled, so their memories are not made a second time.

pub mod document;
mod import;
pub mod records;
pub mod stream;

pub use document::DocError;
pub use import::{import, ImportError, ImportRequest, Imported};
pub use records::ExportDocument;
