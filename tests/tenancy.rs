//! Tenancy: row-level security as a second wall behind the application's tenant filters.
#![allow(clippy::unwrap_used)]

mod common;

use common::{spawn, TestApp};
use serde_json::json;

/// Tables of the schema with a tenant_id column, from the catalog, and those without one.
async fn tables(app: &TestApp) -> (Vec<String>, Vec<String>) {
    let rows: Vec<(String, bool)> = sqlx::query_as(
        "SELECT t.table_name::text, EXISTS (SELECT 1 FROM information_schema.columns c \
             WHERE c.table_schema = t.table_schema AND c.table_name = t.table_name AND c.column_name = 'tenant_id') \
         FROM information_schema.tables t WHERE t.table_schema = current_schema() AND t.table_type = 'BASE TABLE' \
         ORDER BY 1",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let tenant = rows.iter().filter(|r| r.1).map(|r| r.0.clone()).collect();
    let other = rows.iter().filter(|r| !r.1).map(|r| r.0.clone()).collect();
    (tenant, other)
}

async fn populate(app: &TestApp, tenant: &str) {
    for text in ["My name is Kari and I live in Bergen.", "I work at Globex."] {
        app.post_as(tenant, "/v1/episodes", &common::episode("user:1", text)).await;
    }
    app.post_as(tenant, "/v1/memories/compile", &json!({"subject_id": "user:1"})).await;
    app.post_as(tenant, "/v1/memories/compile", &json!({"subject_id": "user:1", "async": true})).await;
    let ctx = json!({"subject_id": "user:1", "task": "Where does the user live?", "emit_receipt": true});
    let (s, b) = app.post_as(tenant, "/v1/context", &ctx).await;
    assert_eq!(s, 200, "{b}");
    app.post_as(tenant, "/v1/episodes", &common::episode("user:2", "I live in Oslo.")).await;
    let r = app.client.delete(app.url("/v1/subjects/user:2")).header("X-Tenant-ID", tenant).send().await.unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn the_app_role_without_a_tenant_sees_no_row_of_any_table() {
    let app = spawn().await;
    populate(&app, "alpha").await;
    populate(&app, "beta").await;
    let (tenant_tables, other) = tables(&app).await;
    // Only sqlx's bookkeeping may lack a tenant_id; any new table must carry one.
    assert_eq!(other, vec!["_sqlx_migrations".to_string()], "tables without tenant_id");
    assert!(tenant_tables.len() >= 14, "{tenant_tables:?}");

    let mut conn = app.app_pool.acquire().await.unwrap();
    let role: String = sqlx::query_scalar("SELECT current_user::text").fetch_one(&mut *conn).await.unwrap();
    assert_eq!(role, "mnemo_app");
    let mut populated = 0;
    for t in &tenant_tables {
        let rls: bool = sqlx::query_scalar("SELECT relrowsecurity FROM pg_class WHERE oid = $1::regclass")
            .bind(t)
            .fetch_one(&app.pool)
            .await
            .unwrap();
        assert!(rls, "row-level security is off on {t}");
        let as_owner: i64 =
            sqlx::query_scalar(&format!("SELECT count(*) FROM \"{t}\"")).fetch_one(&app.pool).await.unwrap();
        populated += usize::from(as_owner > 0);
        let as_app: i64 =
            sqlx::query_scalar(&format!("SELECT count(*) FROM \"{t}\"")).fetch_one(&mut *conn).await.unwrap();
        assert_eq!(as_app, 0, "{t}: the app role saw rows without naming a tenant");
    }
    // The check means something only if the tables really hold rows.
    assert!(populated >= 10, "only {populated} tables were populated");
}

#[tokio::test]
async fn a_tenant_transaction_sees_and_writes_only_its_tenant() {
    let app = spawn().await;
    populate(&app, "alpha").await;
    populate(&app, "beta").await;
    let (tenant_tables, _) = tables(&app).await;
    let mut tx = mnemo::db::scope::begin(&app.app_pool, "alpha").await.unwrap();
    for t in &tenant_tables {
        let foreign: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM \"{t}\" WHERE tenant_id <> 'alpha'"))
            .fetch_one(&mut *tx)
            .await
            .unwrap();
        assert_eq!(foreign, 0, "{t}");
    }
    let own: i64 = sqlx::query_scalar("SELECT count(*) FROM episodes").fetch_one(&mut *tx).await.unwrap();
    assert_eq!(own, 2);
    // Writing a row of another tenant is refused by the policy's WITH CHECK.
    let err = sqlx::query("INSERT INTO tenants (tenant_id) VALUES ('gamma')").execute(&mut *tx).await.unwrap_err();
    assert!(err.to_string().contains("row-level security"), "{err}");
    drop(tx);
    // An update that forgets its tenant filter cannot touch the other tenant's rows.
    let mut tx = mnemo::db::scope::begin(&app.app_pool, "alpha").await.unwrap();
    let n = sqlx::query("UPDATE memories SET confidence = 0.5").execute(&mut *tx).await.unwrap().rows_affected();
    tx.commit().await.unwrap();
    assert!(n > 0);
    let untouched: i64 =
        sqlx::query_scalar("SELECT count(*) FROM memories WHERE tenant_id = 'beta' AND confidence = 0.5")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(untouched, 0);
}
