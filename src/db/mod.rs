//! Every SQL query of mnemo. Each function takes an executor and the tenant first.

pub mod episodes;
pub mod memories;
pub mod pool;
pub mod subjects;
pub mod tenants;
