//! The sharding rules of `docs/sharding.md`, checked against the catalog of a migrated
//! database and against the SQL in `src/db/`: tenant data can be distributed by `tenant_id`
//! (Citus) without changing a key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use sqlx::PgPool;

/// Global tables: small, not per subject, replicated to every node as Citus reference tables.
/// Everything else is distributed by `tenant_id`.
const REFERENCE_TABLES: &[&str] = &[
    // one row per tenant; the registry every other table's tenant belongs to
    "tenants", // one row per API key; looked up by the key's hash before the tenant is known
    "api_keys",
];

/// SQL literals in `src/db/` that name `subject_id` without naming `tenant_id`, checked by hand:
/// (file, start of the literal, why it is still routed by tenant).
const UNFILTERED_OK: &[(&str, &str, &str)] = &[(
    "episodes.rs",
    "SELECT $1, u.subject_id",
    "the INSERT's tenant_id column is $1, the tenant every row of the batch belongs to",
)];

/// A migrated database; keep the guard while the pool is used (it drops the database).
async fn migrated() -> (PgPool, crate::common::TestDb) {
    let db = crate::common::fresh_database().await;
    let pool = mnemo::db::pool::connect(db.options.clone(), 2).await.unwrap();
    mnemo::db::pool::migrate(&pool).await.unwrap();
    (pool, db)
}

async fn names(pool: &PgPool, sql: &str) -> Vec<String> {
    sqlx::query_scalar(sql).fetch_all(pool).await.unwrap()
}

async fn tables(pool: &PgPool) -> Vec<String> {
    names(
        pool,
        "SELECT c.relname::text FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace \
         AND c.relkind IN ('r', 'p') AND c.relname NOT IN ('_sqlx_migrations', 'mnemo_sql_functions') ORDER BY 1",
    )
    .await
}

fn doc() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/sharding.md")).expect("docs/sharding.md")
}

#[tokio::test]
async fn tenant_data_is_keyed_by_tenant_first() {
    let (pool, _db) = migrated().await;
    let all = tables(&pool).await;
    for r in REFERENCE_TABLES {
        assert!(all.iter().any(|t| t == r), "reference table {r} is not in the schema any more");
    }
    let distributed: Vec<&String> = all.iter().filter(|t| !REFERENCE_TABLES.contains(&t.as_str())).collect();

    // Every distributed table carries tenant_id (NOT NULL) and has a primary key.
    let with_tenant = names(
        &pool,
        "SELECT c.relname::text FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid \
         WHERE c.relnamespace = current_schema()::regnamespace AND a.attname = 'tenant_id' AND a.attnotnull",
    )
    .await;
    let with_pk = names(
        &pool,
        "SELECT i.indrelid::regclass::text FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid \
         WHERE c.relnamespace = current_schema()::regnamespace AND i.indisprimary",
    )
    .await;
    for t in &distributed {
        assert!(
            with_tenant.contains(t),
            "{t}: tenant data needs a NOT NULL tenant_id column (or list it as a reference table)"
        );
        assert!(with_pk.contains(t), "{t}: needs a primary key starting with tenant_id");
    }

    // Every primary key and unique index (constraints included) of a distributed table starts
    // with tenant_id; an expression as first column counts as a violation.
    let keys: Vec<(String, String, Option<String>)> = sqlx::query_as(
        "SELECT c.relname::text, ic.relname::text, a.attname::text FROM pg_index i \
         JOIN pg_class c ON c.oid = i.indrelid JOIN pg_class ic ON ic.oid = i.indexrelid \
         LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0] \
         WHERE c.relnamespace = current_schema()::regnamespace AND (i.indisunique OR i.indisprimary) \
           AND c.relname NOT IN ('_sqlx_migrations', 'mnemo_sql_functions') ORDER BY 1, 2",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let bad: Vec<String> = keys
        .iter()
        .filter(|(t, _, _)| !REFERENCE_TABLES.contains(&t.as_str()))
        .filter(|(_, _, first)| first.as_deref() != Some("tenant_id"))
        .map(|(t, i, first)| format!("{t}.{i} starts with {}", first.as_deref().unwrap_or("an expression")))
        .collect();
    assert!(bad.is_empty(), "unique keys of tenant data must start with tenant_id: {bad:?}");

    // Foreign keys between distributed tables must carry tenant_id first (co-located joins);
    // ones pointing at a reference table are fine.
    let fks: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT conrelid::regclass::text, confrelid::regclass::text, \
                (SELECT attname::text FROM pg_attribute WHERE attrelid = conrelid AND attnum = conkey[1]) \
         FROM pg_constraint WHERE contype = 'f' AND connamespace = current_schema()::regnamespace",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    for (from, to, first) in fks {
        if !REFERENCE_TABLES.contains(&to.as_str()) {
            assert_eq!(first, "tenant_id", "foreign key {from} -> {to} must start with tenant_id");
        }
    }

    // Reference tables stay global and small: none holds per-subject rows.
    let subject_cols = names(
        &pool,
        "SELECT c.relname::text FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid \
         WHERE c.relnamespace = current_schema()::regnamespace AND a.attname = 'subject_id'",
    )
    .await;
    for r in REFERENCE_TABLES {
        assert!(!subject_cols.iter().any(|t| t == r), "reference table {r} must not hold subject data");
    }
}

/// The distribution plan names every table, every SECURITY DEFINER helper, every trigger and
/// every sequence (and column fed by one), so a migration that adds one has to say how it shards.
#[tokio::test]
async fn the_distribution_plan_names_every_object() {
    let (pool, _db) = migrated().await;
    let doc = doc();
    let mut objects: BTreeSet<String> = tables(&pool).await.into_iter().collect();
    objects.extend(
        names(
            &pool,
            "SELECT proname::text FROM pg_proc WHERE pronamespace = current_schema()::regnamespace AND prosecdef",
        )
        .await,
    );
    objects.extend(
        names(
            &pool,
            "SELECT t.tgname::text FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid \
             WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal",
        )
        .await,
    );
    objects.extend(
        names(
            &pool,
            "SELECT table_name || '.' || column_name FROM information_schema.columns \
             WHERE table_schema = current_schema() AND column_default LIKE 'nextval(%'",
        )
        .await,
    );
    objects.extend(
        names(
            &pool,
            "SELECT relname::text FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND relkind = 'S'",
        )
        .await,
    );
    let missing: Vec<&String> = objects.iter().filter(|o| !doc.contains(&format!("`{o}`"))).collect();
    assert!(missing.is_empty(), "docs/sharding.md must name (in backticks) {missing:?}");
    for r in REFERENCE_TABLES {
        assert!(doc.contains(&format!("create_reference_table('{r}')")), "docs/sharding.md: {r} is a reference table");
    }
}

/// Every statement in `src/db/` that names `subject_id` also names `tenant_id` (after
/// expanding the file's `{CONST}` fragments), so Citus routes it to one shard.
#[test]
fn per_subject_statements_filter_on_tenant() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/db");
    let mut offenders = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        let lits = literals(code);
        for lit in &lits {
            let is_sql = ["SELECT ", "UPDATE ", "DELETE ", "INSERT "].iter().any(|k| lit.contains(k));
            if !is_sql || !lit.contains("subject_id") {
                continue;
            }
            let expanded = expand(lit, code);
            let tenant = ["tenant_id", "mnemo_tenant", "TENANT_CTE"].iter().any(|k| expanded.contains(k));
            let excused = UNFILTERED_OK.iter().any(|(f, start, _)| *f == file && lit.trim_start().starts_with(start));
            if !tenant && !excused {
                offenders.push(format!("{file}: {}", lit.chars().take(80).collect::<String>()));
            }
        }
    }
    assert!(offenders.is_empty(), "per-subject SQL without a tenant filter: {offenders:#?}");
}

/// String literals of Rust source (plain with escapes, and `r#"…"#`), contents only.
fn literals(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if code[i..].starts_with("r#\"") {
            let end = code[i + 3..].find("\"#").map(|e| i + 3 + e).unwrap_or(b.len());
            out.push(code[i + 3..end].to_string());
            i = end + 2;
        } else if b[i] == b'\'' && i + 2 < b.len() && b[i + 2] == b'\'' {
            i += 3; // a char literal such as '"'
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            out.push(code[i + 1..j.min(b.len())].to_string());
            i = j + 1;
        } else if code[i..].starts_with("//") {
            i = code[i..].find('\n').map(|e| i + e).unwrap_or(b.len());
        } else {
            i += 1;
        }
    }
    out
}

/// Replaces `{NAME}` by the first literal after `NAME: &str =` or `let NAME =` in the file (one
/// level deep is what the query builders use; unknown names stay as they are).
fn expand(lit: &str, code: &str) -> String {
    let mut out = lit.to_string();
    for _ in 0..3 {
        let mut next = out.clone();
        let mut rest = out.as_str();
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}') else { break };
            let name = &rest[open + 1..open + close];
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                let def = [format!("{name}: &str ="), format!("let {name} =")]
                    .iter()
                    .find_map(|d| code.find(d.as_str()).map(|at| at + d.len()));
                if let Some(at) = def {
                    if let Some(first) = literals(&code[at..]).into_iter().next() {
                        next = next.replace(&format!("{{{name}}}"), &first);
                    }
                }
            }
            rest = &rest[open + close..];
        }
        out = next;
    }
    out
}
