-- mnemo schema, part 7: tenancy as a second wall (row-level security), API keys and
-- shared rate-limit buckets.
--
-- The server's pool runs as the role mnemo_app (SET ROLE after connecting, or a login role
-- of the operator's). mnemo_app has no BYPASSRLS, so every table with a tenant_id column
-- shows it only the rows of the tenant named by the transaction-local setting mnemo.tenant;
-- a query that forgets its tenant filter, or a transaction that never set the tenant, sees
-- nothing. The few cross-tenant operations of the server (claiming compile jobs, retention,
-- API-key lookup) are SECURITY DEFINER functions below, each doing exactly one thing.

DO $$
BEGIN
    CREATE ROLE mnemo_app NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL; -- created earlier, or by a concurrent migration of another database
END $$;

DO $$
BEGIN
    IF NOT pg_has_role(current_user, 'mnemo_app', 'MEMBER') THEN
        EXECUTE format('GRANT mnemo_app TO %I', current_user);
    END IF;
END $$;

CREATE TABLE api_keys (
    tenant_id   text NOT NULL,
    key_id      text NOT NULL,
    key_sha256  bytea NOT NULL,
    is_admin    boolean NOT NULL DEFAULT false,
    label       text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz,
    PRIMARY KEY (tenant_id, key_id)
);
CREATE UNIQUE INDEX api_keys_id ON api_keys (key_id);
CREATE UNIQUE INDEX api_keys_hash ON api_keys (key_sha256);

-- Token buckets shared by every mnemo process: one row per (tenant, bucket), where bucket is
-- 'tenant' or 'key:<key_id>'. Refilled lazily from the time of the last take.
CREATE TABLE rate_buckets (
    tenant_id     text NOT NULL,
    bucket        text NOT NULL,
    tokens        double precision NOT NULL,
    last_allowed  boolean NOT NULL,
    updated_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, bucket)
);

-- Enables RLS with the tenant policy on every table that has a tenant_id column (later
-- migrations call it again, so a new table cannot be left open).
CREATE FUNCTION mnemo_apply_tenant_policies() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    t text;
BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO mnemo_app', current_schema());
    FOR t IN
        SELECT c.table_name FROM information_schema.columns c
        JOIN information_schema.tables tb ON tb.table_schema = c.table_schema AND tb.table_name = c.table_name
        WHERE c.table_schema = current_schema() AND c.column_name = 'tenant_id' AND tb.table_type = 'BASE TABLE'
    LOOP
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO mnemo_app', t);
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('DROP POLICY IF EXISTS mnemo_tenant ON %I', t);
        EXECUTE format(
            'CREATE POLICY mnemo_tenant ON %I TO mnemo_app '
            'USING (tenant_id = current_setting(''mnemo.tenant'', true)) '
            'WITH CHECK (tenant_id = current_setting(''mnemo.tenant'', true))', t);
    END LOOP;
END $$;
REVOKE ALL ON FUNCTION mnemo_apply_tenant_policies() FROM PUBLIC;
SELECT mnemo_apply_tenant_policies();

-- The worker's claim: the oldest pending job of any tenant, or a running one whose worker
-- stopped heartbeating; SKIP LOCKED lets replicas share the queue.
CREATE FUNCTION mnemo_claim_job(stale_secs double precision) RETURNS SETOF compile_jobs
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    UPDATE compile_jobs j SET status = 'running', started_at = COALESCE(j.started_at, now()),
           heartbeat_at = now(), attempts = j.attempts + 1
    FROM (SELECT tenant_id, subject_id, id FROM compile_jobs
          WHERE status = 'pending' OR (status = 'running'
                AND COALESCE(heartbeat_at, created_at) < now() - make_interval(secs => stale_secs))
          ORDER BY created_at FOR UPDATE SKIP LOCKED LIMIT 1) c
    WHERE j.tenant_id = c.tenant_id AND j.subject_id = c.subject_id AND j.id = c.id
    RETURNING j.*
$$;

-- Retention of finished jobs, across tenants.
CREATE FUNCTION mnemo_delete_finished_jobs(hours integer) RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    WITH d AS (DELETE FROM compile_jobs WHERE status IN ('completed', 'failed')
               AND completed_at < now() - make_interval(hours => hours) RETURNING 1)
    SELECT count(*) FROM d
$$;

-- Tenants whose config sets a receipt retention (the work is then done per tenant).
CREATE FUNCTION mnemo_retention_tenants() RETURNS TABLE (tenant_id text, days bigint)
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT tenant_id, (config->>'receipt_retention_days')::bigint FROM tenant_configs
    WHERE jsonb_typeof(config->'receipt_retention_days') = 'number'
      AND (config->>'receipt_retention_days')::numeric >= 1
    ORDER BY tenant_id
$$;

-- API-key authentication: which live key has this hash (the hash is all the caller knows).
CREATE FUNCTION mnemo_find_key(digest bytea) RETURNS TABLE (key_id text, tenant_id text, is_admin boolean)
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT key_id, tenant_id, is_admin FROM api_keys WHERE key_sha256 = digest AND revoked_at IS NULL
$$;

-- Whether any live key exists (then requests without a key are refused).
CREATE FUNCTION mnemo_keys_exist() RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT EXISTS (SELECT 1 FROM api_keys WHERE revoked_at IS NULL)
$$;

-- Every tenant mnemo knows, for the operator's admin listing.
CREATE FUNCTION mnemo_list_tenants() RETURNS TABLE (tenant_id text, created_at timestamptz)
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT tenant_id, created_at FROM tenants ORDER BY tenant_id
$$;

-- The migration bookkeeping is readable (for /ops-style checks), never writable, by the app.
DO $$
BEGIN
    IF to_regclass('_sqlx_migrations') IS NOT NULL THEN
        GRANT SELECT ON _sqlx_migrations TO mnemo_app;
    END IF;
END $$;
