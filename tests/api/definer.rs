//! SECURITY DEFINER functions (they run past row-level security) are executable by the server's
//! role only, never by PUBLIC (issue 49): checked on the catalog, so a function added later
//! without `mnemo_lock_definer_functions()` fails here.
#![allow(clippy::unwrap_used)]

use crate::common::{spawn, TestApp};

/// Every SECURITY DEFINER function outside the system schemas: (signature, PUBLIC may execute,
/// mnemo_app may execute).
async fn definers(app: &TestApp) -> Vec<(String, bool, bool)> {
    sqlx::query_as(
        "SELECT p.oid::regprocedure::text, \
                p.proacl IS NULL OR EXISTS (SELECT 1 FROM aclexplode(p.proacl) a \
                                            WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE'), \
                has_function_privilege('mnemo_app', p.oid, 'EXECUTE') \
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
         WHERE p.prosecdef AND n.nspname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn no_security_definer_function_is_executable_by_public_and_the_server_may_run_them_all() {
    let app = spawn().await;
    let found = definers(&app).await;
    // The 12 of the finding and more: the check has something to check.
    assert!(found.len() >= 12, "{found:?}");
    let public: Vec<_> = found.iter().filter(|f| f.1).map(|f| &f.0).collect();
    assert!(public.is_empty(), "executable by PUBLIC (call mnemo_lock_definer_functions()): {public:?}");
    let closed: Vec<_> = found.iter().filter(|f| !f.2).map(|f| &f.0).collect();
    assert!(closed.is_empty(), "not executable by mnemo_app: {closed:?}");
    // The server, running as mnemo_app, still uses them (key lookup, tenant list, context lanes).
    let key = mnemo::services::keys::create(&app.pool, "acme", mnemo::services::keys::Scope::Operator, None)
        .await
        .unwrap()
        .secret;
    let r = app.client.get(app.url("/admin/tenants")).header("X-API-Key", &key).send().await.unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn a_role_without_grants_cannot_execute_them() {
    let app = spawn().await;
    // Roles belong to the cluster, not the test's database: a unique name, dropped at the end.
    let role = format!("mnemo_probe_{}", ulid::Ulid::new().to_string().to_lowercase());
    sqlx::query(&format!("CREATE ROLE {role} NOLOGIN")).execute(&app.pool).await.unwrap();
    let allowed: Vec<(String, bool)> = sqlx::query_as(
        "SELECT p.oid::regprocedure::text, has_function_privilege($1, p.oid, 'EXECUTE') \
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
         WHERE p.prosecdef AND n.nspname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1",
    )
    .bind(&role)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    // And a real call, as that role: refused by Postgres, not by an empty answer.
    let mut calls = Vec::new();
    for sql in [
        "SELECT mnemo_keys_exist()",
        "SELECT count(*) FROM mnemo_list_tenants()",
        "SELECT count(*) FROM mnemo_find_key('\\x00')",
    ] {
        let mut tx = app.pool.begin().await.unwrap();
        sqlx::query(&format!("SET LOCAL ROLE {role}")).execute(&mut *tx).await.unwrap();
        calls.push((sql, sqlx::query(sql).execute(&mut *tx).await.map_err(|e| e.to_string())));
        tx.rollback().await.unwrap();
    }
    sqlx::query(&format!("DROP ROLE {role}")).execute(&app.pool).await.unwrap();

    assert!(allowed.len() >= 12);
    let open: Vec<_> = allowed.iter().filter(|f| f.1).map(|f| &f.0).collect();
    assert!(open.is_empty(), "a role without grants may execute {open:?}");
    for (sql, outcome) in calls {
        let err = outcome.expect_err(sql);
        assert!(err.contains("permission denied for function"), "{sql}: {err}");
    }
}
