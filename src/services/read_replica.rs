//! Optional streaming replica for reads (`MNEMO_READ_DATABASE_URL`): timeline, search and
//! context calls without a receipt read there when it has caught up, else on the primary.
//!
//! Read-your-writes holds across any number of mnemo processes: before a read, the primary's
//! current WAL position is taken (one trivial query, no table touched), and the replica serves
//! the read only once it has replayed up to it, so every write acknowledged before the read
//! began (by any process) is visible. A replica that does not catch up within the lag bound,
//! or cannot be reached, is skipped: the read goes to the primary. Receipts are emitted against
//! the primary, and a call that may emit one reads there too (its replay must see exactly
//! the rows the primary had).

use std::time::{Duration, Instant};

use sqlx::PgPool;

use crate::db;

/// Pause between two checks of the replica's replay position.
const POLL: Duration = Duration::from_millis(2);

/// The replica's pool and how long a read may wait for it to catch up.
pub struct ReadReplica {
    pool: PgPool,
    max_lag: Duration,
}

impl ReadReplica {
    /// A replica reached through `pool`; reads wait at most `max_lag` for it.
    pub fn new(pool: PgPool, max_lag: Duration) -> Self {
        ReadReplica { pool, max_lag }
    }

    /// The pool a read should use: the replica once it has replayed everything the primary had
    /// written when the read began, else (lagging past the bound, or down) the primary.
    pub async fn choose<'a>(&'a self, primary: &'a PgPool) -> sqlx::Result<&'a PgPool> {
        let target = db::replication::current_lsn(primary).await?;
        let deadline = Instant::now() + self.max_lag;
        loop {
            match db::replication::replayed(&self.pool, &target).await {
                Ok(true) => {
                    crate::metrics::record_read_route("replica");
                    return Ok(&self.pool);
                }
                Ok(false) if Instant::now() + POLL < deadline => tokio::time::sleep(POLL).await,
                Ok(false) => {
                    crate::metrics::record_read_route("primary_lagging");
                    return Ok(primary);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "read replica unavailable; reading from the primary");
                    crate::metrics::record_read_route("primary_replica_down");
                    return Ok(primary);
                }
            }
        }
    }
}
