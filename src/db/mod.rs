//! Every SQL query of mnemo. Each function takes an executor and the tenant first.
//!
//! Statements are checked at compile time (`sqlx::query!`, `query_as!`, `query_scalar!`)
//! against the migrated schema: a column renamed or retyped in `migrations/` breaks the build,
//! not a request. Builds read the committed `.sqlx/` data (`SQLX_OFFLINE=true` in
//! `.cargo/config.toml`); `scripts/sqlx-prepare` refreshes it against a throwaway Postgres, and
//! CI runs `scripts/sqlx-prepare --check`. Vectors are bound and read as `pgvector::Vector`.
//!
//! Where a statement differs only in a keyword that cannot be a parameter (an `ORDER BY`
//! direction), there are two static statements. Dynamic SQL remains only where the text itself
//! must be built at run time:
//!
//! | Site | Why |
//! |---|---|
//! | `erase::delete_from`, `erase::remaining` | the table name: every table of [`erase::SUBJECT_TABLES`], and every table the catalogue says has subject rows (so a table added later is checked without a code change) |
//! | `dump::count`, `dump::rows_sql`/`rows`, `dump::insert_rows`, `dump::ids_taken` | generic over the dumped tables ([`dump::TABLES`]) and, for inserts, over the columns the catalogue lists |
//! | `vector_index::ensure` (`CREATE`/`DROP INDEX CONCURRENTLY`) | DDL: index name, table, dimension count and model literal are part of the text (and it cannot run in a transaction or be prepared) |
//! | `pg::cluster::Cluster::ensure_database` (`CREATE DATABASE`) | DDL naming the database; runs against the maintenance database, outside `src/db` |
//! | `http::meta` readiness `SELECT 1` | a liveness probe in `src/http/` (left to the HTTP layer's owner; it reads no table) |

pub mod backup;
pub mod baseline;
pub mod compile;
pub mod console;
pub mod console_sessions;
pub mod context;
mod context_row;
mod context_small;
pub mod digests;
pub mod dump;
pub mod episodes;
pub mod erase;
pub mod erase_items;
pub mod erasures;
pub mod functions;
pub mod health;
pub mod jobs;
pub mod keys;
pub mod labels;
pub mod lexical;
pub mod memories;
pub mod passages;
pub mod policy;
pub mod pool;
pub mod rate_limits;
pub mod receipts;
pub mod reembed;
pub mod replication;
pub mod resolutions;
pub mod scope;
pub mod subjects;
pub mod supersession;
pub mod tenants;
pub mod terms;
pub mod vector_index;
pub mod webhooks;
pub mod working_memory;
