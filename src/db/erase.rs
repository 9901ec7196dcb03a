//! Erasure queries: delete every row of a subject, then prove none is left.

use sqlx::PgConnection;

/// Tables holding subject rows, in deletion order. `subject_counters` goes first: taking its
/// row lock waits for in-flight ingests of the subject and holds back new ones until commit.
pub const SUBJECT_TABLES: &[&str] = &[
    "subject_counters",
    "episodes",
    "memories",
    "episode_embeddings",
    "episode_passages",
    "supersession_records",
    "compile_jobs",
    "compile_cursors",
    "resolutions",
    "subject_health_cache",
    "webhook_events",
    "subject_terms",
    "session_snapshots",
    "session_metadata",
    // Last: deleting the subject's memories writes its version row.
    "subject_versions",
];

/// Takes the subject's ingest counter row lock, creating the row when the subject has none: a
/// plain DELETE would not see (nor wait for) a counter row an in-flight ingest is inserting,
/// and that ingest could then commit episodes behind the erasure. An ingest inserting the row
/// is waited for; later ones wait on this transaction. Returns whether the subject had a
/// counter (the row is deleted with the subject's other rows).
pub async fn hold_counter(conn: &mut PgConnection, tenant: &str, subject_id: &str) -> sqlx::Result<bool> {
    let last_seq: i64 = sqlx::query_scalar!(
        "INSERT INTO subject_counters (tenant_id, subject_id, last_seq) VALUES ($1, $2, 0) \
         ON CONFLICT (tenant_id, subject_id) DO UPDATE SET last_seq = subject_counters.last_seq \
         RETURNING last_seq",
        tenant,
        subject_id
    )
    .fetch_one(conn)
    .await?;
    // Ingest counters start at 1, so 0 is the row created here.
    Ok(last_seq > 0)
}

/// Allows episode deletes for the rest of this transaction (the append-only trigger checks it).
pub async fn allow_episode_delete(conn: &mut PgConnection) -> sqlx::Result<()> {
    sqlx::query_scalar!("SELECT set_config('mnemo.erasure', 'on', true)").fetch_one(conn).await?;
    Ok(())
}

/// Deletes a subject's rows from one table; returns the count. Dynamic SQL: the table is one of
/// [`SUBJECT_TABLES`] (a test keeps that list equal to [`tables_with_subjects`]).
pub async fn delete_from(conn: &mut PgConnection, table: &str, tenant: &str, subject_id: &str) -> sqlx::Result<u64> {
    let r = sqlx::query(&format!("DELETE FROM {table} WHERE tenant_id = $1 AND subject_id = $2"))
        .bind(tenant)
        .bind(subject_id)
        .execute(conn)
        .await?;
    Ok(r.rows_affected())
}

/// Every table of the schema with both `tenant_id` and `subject_id` columns, from the catalog,
/// so a table added later cannot be forgotten by the check. Reads `pg_class`/`pg_attribute`
/// directly: the `information_schema` views took 10-35 ms of a 10k-episode erasure, and they
/// hide tables the role has no privilege on (which would silently skip the check).
pub async fn tables_with_subjects(conn: &mut PgConnection) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar!(
        r#"SELECT c.relname::text AS "relname!" FROM pg_catalog.pg_class c
         WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
         AND EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a WHERE a.attrelid = c.oid
                     AND a.attname = 'subject_id' AND a.attnum > 0 AND NOT a.attisdropped)
         AND EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a WHERE a.attrelid = c.oid
                     AND a.attname = 'tenant_id' AND a.attnum > 0 AND NOT a.attisdropped)
         ORDER BY 1"#
    )
    .fetch_all(conn)
    .await
}

/// Rows of the subject left in each of `tables`, in their order, in one statement (one round
/// trip instead of one per table). Dynamic SQL: the tables come from the catalog
/// ([`tables_with_subjects`]), so a table added later is checked without a code change.
pub async fn remaining_in(
    conn: &mut PgConnection,
    tables: &[String],
    tenant: &str,
    subject_id: &str,
) -> sqlx::Result<Vec<(String, i64)>> {
    if tables.is_empty() {
        return Ok(Vec::new());
    }
    let sql = tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let quoted = t.replace('"', "\"\"");
            format!("SELECT {i} AS i, count(*) AS n FROM \"{quoted}\" WHERE tenant_id = $1 AND subject_id = $2")
        })
        .collect::<Vec<_>>()
        .join(" UNION ALL ");
    let counts: Vec<(i32, i64)> =
        sqlx::query_as(&format!("{sql} ORDER BY i")).bind(tenant).bind(subject_id).fetch_all(conn).await?;
    Ok(counts.into_iter().map(|(i, n)| (tables[i as usize].clone(), n)).collect())
}
