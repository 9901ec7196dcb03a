//! The SQL functions' current definitions, one file each in `sql/functions/` (embedded at build
//! time), installed after the migrations: migrations are the schema's history, the files are
//! what runs now (`sql/README.md` says how to change one).
//!
//! [`install`] runs a file only when its text differs from the one last installed (the digests
//! are kept in `mnemo_sql_functions`), under a transaction-scoped advisory lock so servers
//! starting together install once, and then takes PUBLIC's EXECUTE off security-definer
//! functions again (`mnemo_lock_definer_functions`).

use std::collections::HashMap;

use sha2::{Digest, Sha256};
use sqlx::PgPool;

/// Every function file: its name (the function's) and its text.
pub const FILES: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/sql_functions.rs"));

/// Installs the function files whose text changed since they were last installed, in one
/// transaction. Returns how many were installed.
pub async fn install(pool: &PgPool) -> sqlx::Result<usize> {
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('mnemo_sql_functions'))").execute(&mut *tx).await?;
    // Files install in name order, and a SQL-language body naming a function installed after it
    // would be refused on a new database: bodies are checked when called instead (as pg_dump's
    // restore does); the API tests call every one.
    sqlx::query("SET LOCAL check_function_bodies = off").execute(&mut *tx).await?;
    let installed: HashMap<String, String> = sqlx::query!("SELECT name, sha256 FROM mnemo_sql_functions")
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .map(|r| (r.name, r.sha256))
        .collect();
    let mut n = 0;
    for (name, text) in FILES {
        let digest = hex::encode(Sha256::digest(text.as_bytes()));
        if installed.get(*name) == Some(&digest) {
            continue;
        }
        sqlx::raw_sql(text).execute(&mut *tx).await?;
        sqlx::query!(
            "INSERT INTO mnemo_sql_functions (name, sha256) VALUES ($1, $2)
             ON CONFLICT (name) DO UPDATE SET sha256 = EXCLUDED.sha256, installed_at = now()",
            name,
            digest
        )
        .execute(&mut *tx)
        .await?;
        n += 1;
    }
    if n > 0 {
        sqlx::query("SELECT mnemo_lock_definer_functions()").execute(&mut *tx).await?;
    }
    tx.commit().await?;
    Ok(n)
}

/// The statement of a function file: its text without the leading comment lines and the
/// final semicolon (the form `pg_get_functiondef` prints).
pub fn definition(text: &str) -> &str {
    let start = text.lines().take_while(|l| l.starts_with("--")).map(|l| l.len() + 1).sum::<usize>();
    text.get(start..).unwrap_or("").trim_end().trim_end_matches(';').trim_end()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_defines_the_function_it_is_named_for() {
        assert!(FILES.len() > 30, "the function files are embedded");
        for (name, text) in FILES {
            let def = definition(text);
            assert!(
                def.starts_with(&format!("CREATE OR REPLACE FUNCTION public.{name}(")),
                "sql/functions/{name}.sql must hold one CREATE OR REPLACE FUNCTION public.{name}(...)"
            );
            assert_eq!(def.matches("CREATE OR REPLACE FUNCTION").count(), 1, "{name}: one function a file");
        }
    }

    #[test]
    fn the_definition_leaves_out_the_header_and_the_semicolon() {
        assert_eq!(definition("-- a\n-- b\nCREATE x\n AS $f$ y $f$;\n"), "CREATE x\n AS $f$ y $f$");
    }
}
