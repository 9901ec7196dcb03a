//! Every SQL query of mnemo. Each function takes an executor and the tenant first.

pub mod backup;
pub mod compile;
pub mod console;
pub mod context;
pub mod dump;
pub mod episodes;
pub mod erase;
pub mod erasures;
pub mod jobs;
pub mod keys;
pub mod labels;
pub mod memories;
pub mod policy;
pub mod pool;
pub mod rate_limits;
pub mod receipts;
pub mod reembed;
pub mod replication;
pub mod resolutions;
pub mod scope;
pub mod subjects;
pub mod tenants;
pub mod terms;
pub mod vector_index;
pub mod webhooks;
pub mod working_memory;
