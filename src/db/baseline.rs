//! Adopting a database built by the migrations that `migrations/0001_schema.sql` replaced.
//!
//! Up to commit 54ef6b8 the schema was built by 61 migrations (0001 `init` .. 0061 `passage
//! backfill`); the schema file builds the same schema (compared with `pg_dump --schema-only`
//! when it was written). A database that applied all 61 records them in `_sqlx_migrations`,
//! which sqlx would reject against the new list (different checksum for version 1, versions
//! 2-61 missing). [`adopt`] rewrites those records to the schema file's before the migrator
//! runs; the schema itself is not touched. A database part-way along the old chain is refused
//! with what to do: bring it to 0061 with a release that still has those migrations.

use anyhow::{bail, Context as _};
use sqlx::PgPool;

/// The old chain's first migration, as recorded (version, description).
const OLD_FIRST: (i64, &str) = (1, "init");
/// The old chain's last migration: its version and the SHA-384 of its text, as recorded.
const OLD_LAST: (i64, &str) =
    (61, "41e56f83e24d976b080bbfc806604c7a3888f3b79d9ec9f3e77e99fc4f6c75712c4978377ba537d4cb3eff13409ce082");

/// What the migration records of a database say of the old chain.
#[derive(Debug, PartialEq, Eq)]
pub enum Records {
    /// Not built by the old chain (new, or already adopted): nothing to do.
    Current,
    /// The old chain applied to its end: adopt.
    OldComplete,
    /// The old chain applied up to this version (or with a failed or altered step): refuse.
    OldPartial(i64),
}

/// Reads the records: `(version, description, success, checksum hex)` in version order.
pub fn classify(rows: &[(i64, String, bool, String)]) -> Records {
    let old = rows.iter().any(|(v, d, _, _)| (*v, d.as_str()) == OLD_FIRST);
    if !old {
        return Records::Current;
    }
    // sqlx applies migrations in order and stops at a failure, so a successful last step whose
    // text is the old chain's last means every step before it ran.
    let all_ok = rows.iter().all(|r| r.2);
    match rows.last() {
        Some((v, _, true, sum)) if all_ok && *v == OLD_LAST.0 && sum == OLD_LAST.1 => Records::OldComplete,
        _ => Records::OldPartial(rows.iter().filter(|r| r.2).map(|r| r.0).max().unwrap_or(0)),
    }
}

/// Replaces a fully migrated old database's records by the schema file's, under a lock so
/// servers starting together adopt once; refuses a database part-way along the old chain.
pub async fn adopt(pool: &PgPool, migrator: &sqlx::migrate::Migrator) -> anyhow::Result<()> {
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('mnemo_schema_baseline'))").execute(&mut *tx).await?;
    let exists: bool =
        sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL").fetch_one(&mut *tx).await?;
    if !exists {
        return Ok(());
    }
    let rows: Vec<(i64, String, bool, String)> = sqlx::query_as(
        "SELECT version, description, success, encode(checksum, 'hex') FROM _sqlx_migrations ORDER BY version",
    )
    .fetch_all(&mut *tx)
    .await?;
    match classify(&rows) {
        Records::Current => return Ok(()),
        Records::OldPartial(at) => {
            bail!(
                "this database was migrated by mnemo's earlier migrations up to {at} of {}; start it once \
                 with mnemo at commit 54ef6b8 or earlier (which applies the rest), then with this one \
                 (docs/operations.md, \"Upgrading\")",
                OLD_LAST.0
            )
        }
        Records::OldComplete => {}
    }
    let schema = migrator.iter().next().context("no migrations embedded")?;
    sqlx::query("DELETE FROM _sqlx_migrations").execute(&mut *tx).await?;
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
         VALUES ($1, $2, true, $3, 0)",
    )
    .bind(schema.version)
    .bind(schema.description.as_ref())
    .bind(schema.checksum.as_ref())
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    tracing::info!(version = schema.version, "adopted a database built by migrations 0001-0061");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn old(upto: i64) -> Vec<(i64, String, bool, String)> {
        (1..=upto)
            .map(|v| {
                let d = if v == 1 { "init".to_string() } else { format!("step {v}") };
                let sum = if v == OLD_LAST.0 { OLD_LAST.1.to_string() } else { "00".to_string() };
                (v, d, true, sum)
            })
            .collect()
    }

    #[test]
    fn a_complete_old_chain_is_adopted() {
        assert_eq!(classify(&old(61)), Records::OldComplete);
        let mut gaps = old(61); // the old chain had no 42-49
        gaps.retain(|r| !(42..=49).contains(&r.0));
        assert_eq!(classify(&gaps), Records::OldComplete);
    }

    #[test]
    fn a_partial_or_altered_old_chain_is_refused() {
        assert_eq!(classify(&old(40)), Records::OldPartial(40));
        let mut altered = old(61);
        altered[60].3 = "ab".into();
        assert_eq!(classify(&altered), Records::OldPartial(61));
        let mut failed = old(61);
        failed[60].2 = false;
        assert_eq!(classify(&failed), Records::OldPartial(60));
    }

    #[test]
    fn a_new_or_adopted_database_is_left_alone() {
        assert_eq!(classify(&[]), Records::Current);
        assert_eq!(classify(&[(1, "schema".into(), true, "ff".into())]), Records::Current);
    }
}
