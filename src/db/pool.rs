//! Connecting to Postgres and applying migrations.

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgPool};

/// How long a pooled connection may sit idle before it is pinged again before use.
const IDLE_BEFORE_PING: Duration = Duration::from_secs(1);

/// The embedded migrations (plain SQL in `migrations/`).
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Opens a pool with bounded size and acquire timeout.
pub async fn connect(opts: PgConnectOptions, max_connections: u32) -> sqlx::Result<PgPool> {
    PgPoolOptions::new()
        .max_connections(max_connections)
        .min_connections(1)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(opts)
        .await
}

/// Opens the server's pool: every connection switches to the `mnemo_app` role (no BYPASSRLS),
/// so row-level security applies to everything the server does. Run migrations first.
pub async fn connect_app(opts: PgConnectOptions, max_connections: u32) -> sqlx::Result<PgPool> {
    let pool = PgPoolOptions::new()
        .max_connections(max_connections)
        .min_connections(1)
        .acquire_timeout(Duration::from_secs(10))
        // sqlx pings every connection it hands out, a round trip as long as a whole
        // single-statement ingest. A connection that was just in use was pinged when it came
        // back (sqlx does on release), so only one idle for a while (say, across a failover)
        // is checked again before use.
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for < IDLE_BEFORE_PING {
                    return Ok(true);
                }
                Ok(conn.ping().await.is_ok())
            })
        })
        .after_connect(|conn, _| {
            Box::pin(async move {
                // A login that already is an unprivileged member of mnemo_app (owning nothing, so
                // row-level security applies to it) needs no SET ROLE; behind a transaction
                // pooler it must not get one, as session state sticks to one server connection.
                // Whether the login must switch: it is a superuser, bypasses row-level security,
                // is not a member of mnemo_app, or owns a table (owners are exempt from row-level security).
                let needs_role: bool = sqlx::query_scalar!(
                    r#"SELECT r.rolsuper OR r.rolbypassrls OR NOT pg_has_role(r.oid, 'mnemo_app', 'USAGE')
                       OR EXISTS (SELECT 1 FROM pg_class c WHERE c.relowner = r.oid) AS "needs!"
                       FROM pg_roles r WHERE r.rolname = current_user"#
                )
                .fetch_one(&mut *conn)
                .await?;
                if needs_role {
                    sqlx::query!("SET ROLE mnemo_app").execute(&mut *conn).await?;
                }
                Ok(())
            })
        })
        .connect_with(opts)
        .await?;
    let role = sqlx::query!(
        r#"SELECT rolsuper AS "rolsuper!", rolbypassrls AS "rolbypassrls!" FROM pg_roles WHERE rolname = current_user"#
    )
    .fetch_one(&pool)
    .await?;
    if role.rolsuper || role.rolbypassrls {
        return Err(sqlx::Error::Configuration("the application role must not bypass row-level security".into()));
    }
    Ok(pool)
}

/// Applies pending migrations (after adopting a database the schema file's predecessors built,
/// [`super::baseline::adopt`]), then installs the SQL function files that changed
/// ([`super::functions::install`]).
pub async fn migrate(pool: &PgPool) -> anyhow::Result<()> {
    super::baseline::adopt(pool, &MIGRATOR).await?;
    MIGRATOR.run(pool).await?;
    super::functions::install(pool).await?;
    Ok(())
}
