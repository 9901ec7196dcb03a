//! Postgres: the embedded, private cluster that `mnemo serve` runs when no URL is given.

pub mod cluster;
pub mod locate;

pub use cluster::{Cluster, StartOutcome};
