//! Wire and row types shared by services, the store and the HTTP layer.

pub mod episode;
pub mod id;
pub mod limits;
pub mod memory;
pub mod tenant_config;
pub mod text;
pub mod time;
pub mod voice;
