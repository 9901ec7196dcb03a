//! Context bundles, the pure parts: the task's terms and dates, token counts, line formats and
//! assembly, packing under the budget, the score. Retrieval lives in `services::context` and `db::context`.

pub mod excerpt;
pub mod pack;
pub mod render;
pub mod score;
pub mod terms;
pub mod tokens;
