#![allow(clippy::unwrap_used)]
//! The SQL functions of a migrated database are exactly the files in `sql/functions/`: one
//! function per file, named for it, its definition as Postgres prints it. A function created by
//! a migration but missing from the files, an overload left behind, or a file whose text is not
//! what runs, fails here.

use std::collections::BTreeMap;

use mnemo::db::functions::{definition, install, FILES};

use crate::common::spawn;

/// Every mnemo function of the database: name -> definitions (more than one: overloads).
async fn functions(pool: &sqlx::PgPool) -> BTreeMap<String, Vec<String>> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT p.proname::text, pg_get_functiondef(p.oid) FROM pg_proc p
         WHERE p.pronamespace = 'public'::regnamespace
           AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
         ORDER BY p.proname, p.oid",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, def) in rows {
        out.entry(name).or_default().push(def);
    }
    out
}

#[tokio::test]
async fn the_migrated_database_runs_exactly_the_function_files() {
    let app = spawn().await;
    let found = functions(&app.pool).await;
    let files: BTreeMap<&str, &str> = FILES.iter().copied().collect();
    let missing: Vec<&String> = found.keys().filter(|n| !files.contains_key(n.as_str())).collect();
    assert!(
        missing.is_empty(),
        "functions with no file in sql/functions/ (write one with scripts/sql-functions, or drop them in a migration): {missing:?}"
    );
    let stray: Vec<&&str> = files.keys().filter(|n| !found.contains_key(**n)).collect();
    assert!(stray.is_empty(), "files of functions the database does not have: {stray:?}");
    for (name, defs) in &found {
        assert_eq!(defs.len(), 1, "{name} has {} overloads: drop the old ones in a migration", defs.len());
        let file = definition(files[name.as_str()]);
        assert!(
            defs[0].trim_end() == file,
            "sql/functions/{name}.sql is not the definition Postgres prints for it; write it in that form \
             (scripts/sql-functions rewrites the files from a database):\n{}",
            defs[0]
        );
    }
}

#[tokio::test]
async fn install_runs_only_the_files_that_changed() {
    let app = spawn().await;
    assert_eq!(install(&app.pool).await.unwrap(), 0, "a second install changes nothing");

    // A function changed behind the files' back is put back once its recorded digest differs.
    sqlx::raw_sql(
        "CREATE OR REPLACE FUNCTION public.mnemo_subject_key(p_tenant text, p_subject text) RETURNS text
         LANGUAGE sql IMMUTABLE AS $$ SELECT 'changed' $$;
         UPDATE mnemo_sql_functions SET sha256 = 'stale' WHERE name = 'mnemo_subject_key';",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    assert_eq!(install(&app.pool).await.unwrap(), 1);
    let def: String = sqlx::query_scalar("SELECT pg_get_functiondef('mnemo_subject_key'::regproc)")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let file = FILES.iter().find(|(n, _)| *n == "mnemo_subject_key").unwrap().1;
    assert_eq!(def.trim_end(), definition(file));

    // Security-definer functions stay out of PUBLIC's reach after an install.
    let public: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_proc p WHERE p.prosecdef AND p.pronamespace = 'public'::regnamespace
           AND has_function_privilege('public', p.oid, 'EXECUTE')",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(public, 0);
}

/// A database the 61 migrations before `0001_schema.sql` built is adopted in place: its migration
/// records become the schema file's and nothing else changes; one part-way along them is refused.
#[tokio::test]
async fn a_database_built_by_the_earlier_migrations_is_adopted_or_refused() {
    let app = spawn().await;
    // The records the earlier chain wrote: versions 1-41 and 50-61, 1 named `init`, 61 with the
    // checksum of its text (migrations/0061_passage_backfill.sql, as of commit 54ef6b8).
    let old_records = |upto: i64| {
        format!(
            "DELETE FROM _sqlx_migrations;
             INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
             SELECT v, CASE WHEN v = 1 THEN 'init' ELSE 'step ' || v END, true,
                    CASE WHEN v = 61 THEN decode('41e56f83e24d976b080bbfc806604c7a3888f3b79d9ec9f3e77e99fc4f6c75712c4978377ba537d4cb3eff13409ce082', 'hex')
                         ELSE '\\x00'::bytea END, 1
             FROM generate_series(1, {upto}) v WHERE v NOT BETWEEN 42 AND 49;"
        )
    };
    let records = |pool: sqlx::PgPool| async move {
        sqlx::query_as::<_, (i64, String)>("SELECT version, description FROM _sqlx_migrations ORDER BY version")
            .fetch_all(&pool)
            .await
            .unwrap()
    };
    let before = records(app.pool.clone()).await;
    assert_eq!(before.iter().map(|r| r.1.as_str()).collect::<Vec<_>>(), ["schema"]);

    sqlx::raw_sql(&old_records(61)).execute(&app.pool).await.unwrap();
    mnemo::db::pool::migrate(&app.pool).await.unwrap();
    assert_eq!(records(app.pool.clone()).await, before, "adopted: the schema file's record alone");
    mnemo::db::pool::migrate(&app.pool).await.unwrap(); // and a second start changes nothing
    assert_eq!(records(app.pool.clone()).await, before);

    sqlx::raw_sql(&old_records(40)).execute(&app.pool).await.unwrap();
    let err = mnemo::db::pool::migrate(&app.pool).await.unwrap_err().to_string();
    assert!(err.contains("up to 40 of 61") && err.contains("54ef6b8"), "{err}");
    assert_eq!(records(app.pool.clone()).await.len(), 40, "a refused database is left as it was");
}
