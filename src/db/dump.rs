//! Queries for mnemo's lossless dump: every row of a tenant (or of one subject) as JSON text,
//! streamed from one snapshot, and batch inserts of such rows back, column for column.
//!
//! Rows travel as Postgres' own `to_jsonb` text, so every type (timestamps to the microsecond,
//! uuid arrays, vectors, float8) reads back exactly as it was; generated columns are left out
//! and recomputed on insert.

use futures_util::stream::BoxStream;
use sqlx::{PgConnection, PgPool, Postgres, Transaction};

/// One exported table: its name, whether it holds subject rows, and a total order of its rows.
#[derive(Debug, Clone, Copy)]
pub struct Table {
    pub name: &'static str,
    /// Has a `subject_id` column (exported for a subject export too).
    pub per_subject: bool,
    pub order_by: &'static str,
}

const fn t(name: &'static str, per_subject: bool, order_by: &'static str) -> Table {
    Table { name, per_subject, order_by }
}

/// Every table a dump carries, in import order.
pub const TABLES: &[Table] = &[
    t("tenants", false, "tenant_id"),
    t("tenant_configs", false, "tenant_id"),
    t("policy_bundles", false, "bundle_hash"),
    t("policy_active", false, "tenant_id"),
    t("subject_counters", true, "subject_id"),
    t("compile_cursors", true, "subject_id"),
    t("episodes", true, "subject_id, seq"),
    t("episode_embeddings", true, "subject_id, episode_id"),
    t("episode_passages", true, "subject_id, episode_id, passage"),
    t("memories", true, "subject_id, id"),
    t("supersession_records", true, "subject_id, id"),
    t("subject_terms", true, "subject_id, source, lexeme"),
    t("resolutions", true, "subject_id, id"),
    t("session_metadata", true, "subject_id, session_id"),
    t("session_snapshots", true, "subject_id, session_id, position"),
    t("subject_health_cache", true, "subject_id"),
    t("receipts", true, "seq"),
    t("receipt_chain_heads", false, "tenant_id"),
    t("erasures", false, "erasure_id"),
];

/// Tables with tenant rows that a dump leaves out, and why (kept in sync by a test).
pub const NOT_EXPORTED: &[(&str, &str)] = &[
    ("api_keys", "credentials never leave the server"),
    ("rate_buckets", "transient rate-limit state"),
    ("console_sessions", "console sign-ins, credentials of a kind"),
    ("compile_jobs", "transient job queue"),
    ("webhook_events", "delivery outbox, not data"),
    ("tenant_versions", "derived by triggers on insert"),
    ("subject_versions", "derived by triggers on insert"),
];

/// The table of that name, if a dump may carry it.
pub fn table(name: &str) -> Option<&'static Table> {
    TABLES.iter().find(|t| t.name == name)
}

/// Every table of the schema with a `tenant_id` column.
pub async fn tenant_tables(conn: &mut PgConnection) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar!(
        r#"SELECT c.relname::text AS "relname!" FROM pg_catalog.pg_class c
           WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
           AND EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a WHERE a.attrelid = c.oid
                       AND a.attname = 'tenant_id' AND a.attnum > 0 AND NOT a.attisdropped) ORDER BY 1"#
    )
    .fetch_all(conn)
    .await
}

/// A read-only transaction on one snapshot, confined to `tenant`, with timestamps in UTC (so
/// the same rows always render to the same text).
pub async fn begin_snapshot(pool: &PgPool, tenant: &str) -> sqlx::Result<Transaction<'static, Postgres>> {
    let mut tx = pool.begin().await?;
    sqlx::query!("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY").execute(&mut *tx).await?;
    sqlx::query!(
        "SELECT set_config('mnemo.tenant', $1, true) AS tenant, set_config('TimeZone', 'UTC', true) AS tz",
        tenant
    )
    .fetch_one(&mut *tx)
    .await?;
    Ok(tx)
}

fn filter(t: &Table) -> &'static str {
    if t.per_subject {
        "tenant_id = $1 AND ($2::text IS NULL OR subject_id = $2)"
    } else {
        "tenant_id = $1 AND $2::text IS NULL"
    }
}

/// How many rows of `t` a dump of the tenant (or subject) holds.
pub async fn count(conn: &mut PgConnection, t: &Table, tenant: &str, subject: Option<&str>) -> sqlx::Result<i64> {
    let sql = format!("SELECT count(*) FROM {} WHERE {}", t.name, filter(t));
    sqlx::query_scalar(&sql).bind(tenant).bind(subject).fetch_one(conn).await
}

/// Columns the database derives from a row's other columns: a dump leaves them out and an
/// import lets the database compute them again (`content_tsv` is generated; `search_tsv` is
/// filled by the `episodes_fill_lexemes` trigger when an insert leaves it out).
pub const DERIVED_COLUMNS: [&str; 2] = ["content_tsv", "search_tsv"];

/// The query [`rows`] runs for `t` (the caller keeps it alive while the rows stream).
pub fn rows_sql(t: &Table) -> String {
    format!(
        "SELECT (to_jsonb(x) - '{}' - '{}')::text FROM {} x WHERE {} ORDER BY {}",
        DERIVED_COLUMNS[0],
        DERIVED_COLUMNS[1],
        t.name,
        filter(t),
        t.order_by
    )
}

/// The rows of a table (`sql` from [`rows_sql`]), in its order, each as `to_jsonb` text without
/// generated columns; streamed, so a large table never sits in memory.
pub fn rows<'c>(
    conn: &'c mut PgConnection,
    sql: &'c str,
    tenant: &'c str,
    subject: Option<&'c str>,
) -> BoxStream<'c, sqlx::Result<String>> {
    sqlx::query_scalar(sql).bind(tenant).bind(subject).fetch(conn)
}

/// The columns an insert into `table` names: every stored column but the derived ones (so a
/// dump's rows can never set them).
pub async fn insert_columns(conn: &mut PgConnection, table: &str) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar!(
        r#"SELECT a.attname::text AS "attname!" FROM pg_catalog.pg_attribute a
           JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
           WHERE c.relnamespace = current_schema()::regnamespace AND c.relname = $1 AND a.attnum > 0
           AND NOT a.attisdropped AND a.attgenerated = '' AND a.attname <> ALL($2::text[]) ORDER BY a.attnum"#,
        table,
        &DERIVED_COLUMNS as &[&str]
    )
    .fetch_all(conn)
    .await
}

/// Inserts rows (a JSON array of row objects) into `table`, column for column.
pub async fn insert_rows(conn: &mut PgConnection, table: &Table, columns: &[String], rows: &str) -> sqlx::Result<u64> {
    let cols = columns.iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(", ");
    let sql = format!(
        "INSERT INTO {t} ({cols}) SELECT {cols} FROM jsonb_populate_recordset(NULL::{t}, $1::jsonb)",
        t = table.name
    );
    Ok(sqlx::query(&sql).bind(rows).execute(conn).await?.rows_affected())
}

/// Whether the tenant (or the subject) already holds episodes, memories or receipts.
pub async fn occupied(conn: &mut PgConnection, tenant: &str, subject: Option<&str>) -> sqlx::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM episodes WHERE tenant_id = $1 AND ($2::text IS NULL OR subject_id = $2))
           OR EXISTS (SELECT 1 FROM memories WHERE tenant_id = $1 AND ($2::text IS NULL OR subject_id = $2))
           OR EXISTS (SELECT 1 FROM receipts WHERE tenant_id = $1 AND ($2::text IS NULL OR subject_id = $2))
           AS "occupied!""#,
        tenant,
        subject
    )
    .fetch_one(conn)
    .await
}

/// After a subject import: the tenant's chain head moves to its newest receipt when that is
/// beyond the head (new receipts then continue the chain instead of reusing a seq).
pub async fn raise_chain_head(conn: &mut PgConnection, tenant: &str) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO receipt_chain_heads AS h (tenant_id, last_seq, last_hash) \
         SELECT tenant_id, seq, receipt_hash FROM receipts WHERE tenant_id = $1 ORDER BY seq DESC LIMIT 1 \
         ON CONFLICT (tenant_id) DO UPDATE SET last_seq = EXCLUDED.last_seq, last_hash = EXCLUDED.last_hash \
         WHERE h.last_seq < EXCLUDED.last_seq",
        tenant
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The subject's last seq and compile cursor, its counter row locked until commit (ingest into
/// the subject waits, so no seq can be taken behind a merge's back).
pub async fn lock_seq_state(conn: &mut PgConnection, tenant: &str, subject: &str) -> sqlx::Result<(i64, i64)> {
    let r = sqlx::query!(
        r#"SELECT COALESCE((SELECT last_seq FROM subject_counters WHERE tenant_id = $1 AND subject_id = $2 FOR UPDATE), 0)
             AS "last_seq!",
           COALESCE((SELECT compiled_seq FROM compile_cursors WHERE tenant_id = $1 AND subject_id = $2), 0)
             AS "compiled_seq!""#,
        tenant,
        subject
    )
    .fetch_one(conn)
    .await?;
    Ok((r.last_seq, r.compiled_seq))
}

/// Sets the subject's last seq (after a merge appended episodes).
pub async fn set_last_seq(conn: &mut PgConnection, tenant: &str, subject: &str, last_seq: i64) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO subject_counters (tenant_id, subject_id, last_seq) VALUES ($1, $2, $3) \
         ON CONFLICT (tenant_id, subject_id) DO UPDATE SET last_seq = EXCLUDED.last_seq",
        tenant,
        subject,
        last_seq
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Every session id the subject already uses (episodes, metadata, snapshots, resolutions).
pub async fn subject_sessions(conn: &mut PgConnection, tenant: &str, subject: &str) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar!(
        r#"SELECT session_id AS "session_id!" FROM episodes WHERE tenant_id = $1 AND subject_id = $2
             AND session_id IS NOT NULL
           UNION SELECT session_id FROM session_metadata WHERE tenant_id = $1 AND subject_id = $2
           UNION SELECT session_id FROM session_snapshots WHERE tenant_id = $1 AND subject_id = $2
           UNION SELECT session_id FROM resolutions WHERE tenant_id = $1 AND subject_id = $2"#,
        tenant,
        subject
    )
    .fetch_all(conn)
    .await
}

/// Which of these idempotency keys the subject's episodes already carry, and on which episode.
pub async fn idempotency_hits(
    conn: &mut PgConnection,
    tenant: &str,
    subject: &str,
    keys: &[String],
) -> sqlx::Result<Vec<(String, String)>> {
    let rows = sqlx::query!(
        r#"SELECT idempotency_key AS "key!", id::text AS "id!" FROM episodes
           WHERE tenant_id = $1 AND subject_id = $2 AND idempotency_key = ANY($3)"#,
        tenant,
        subject,
        keys
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.key, r.id)).collect())
}

/// Which of these ids rows of `table` (one of [`TABLES`] with an `id` column) already use in
/// the tenant, in any subject.
pub async fn ids_taken(
    conn: &mut PgConnection,
    table: &Table,
    tenant: &str,
    ids: &[String],
) -> sqlx::Result<Vec<String>> {
    let sql = format!("SELECT id::text FROM {} WHERE tenant_id = $1 AND id = ANY($2::text[]::uuid[])", table.name);
    sqlx::query_scalar(&sql).bind(tenant).bind(ids).fetch_all(conn).await
}

/// The current transaction's start time (`now()`).
pub async fn transaction_time(conn: &mut PgConnection) -> sqlx::Result<chrono::DateTime<chrono::Utc>> {
    sqlx::query_scalar!(r#"SELECT now() AS "now!""#).fetch_one(conn).await
}
