-- mnemo schema, part 17: a version of the tenant's settings that a context call reads besides
-- the subject's rows (its config document, its policy bundles and its active bundle), so that
-- a server can keep them in memory and check them with one value read inside the call's
-- retrieval transaction (services::tenant_settings).
--
-- Triggers write a new version in the same transaction as the change itself, so once a change
-- has committed, through whichever process, every later statement of every process sees the
-- new version. Versions come from one sequence: they only grow and are never handed out twice,
-- so a cached copy can never match a later state by accident. mnemo never deletes rows here (a
-- tenant without a row reads as version 0, which only a tenant that never had settings has).

CREATE SEQUENCE tenant_version_seq;

CREATE TABLE tenant_versions (
    tenant_id  text PRIMARY KEY,
    version    bigint NOT NULL
);

CREATE FUNCTION mnemo_bump_tenant_version(t text) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO tenant_versions (tenant_id, version) VALUES (t, nextval('tenant_version_seq'))
    ON CONFLICT (tenant_id) DO UPDATE SET version = EXCLUDED.version
$$;

-- Row triggers: the writer runs as mnemo_app under the same tenant as the row it changes, so
-- row-level security admits the version row too (no SECURITY DEFINER needed).
CREATE FUNCTION mnemo_tenant_settings_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM mnemo_bump_tenant_version(OLD.tenant_id);
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.tenant_id IS DISTINCT FROM OLD.tenant_id) THEN
        PERFORM mnemo_bump_tenant_version(NEW.tenant_id);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER tenant_configs_version AFTER INSERT OR UPDATE OR DELETE ON tenant_configs
    FOR EACH ROW EXECUTE FUNCTION mnemo_tenant_settings_changed();
CREATE TRIGGER policy_bundles_version AFTER INSERT OR UPDATE OR DELETE ON policy_bundles
    FOR EACH ROW EXECUTE FUNCTION mnemo_tenant_settings_changed();
CREATE TRIGGER policy_active_version AFTER INSERT OR UPDATE OR DELETE ON policy_active
    FOR EACH ROW EXECUTE FUNCTION mnemo_tenant_settings_changed();

-- Sets the transaction's tenant (as db::scope::begin does) and returns its settings version
-- (0 while it has none), in one statement. PL/pgSQL runs the read after set_config, so row-level
-- security filters it by the tenant just set; a single SQL statement would not guarantee that
-- order. Not SECURITY DEFINER: the caller sees only its own tenant's version.
CREATE FUNCTION mnemo_enter_tenant(t text) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('mnemo.tenant', t, true);
    RETURN COALESCE((SELECT version FROM tenant_versions WHERE tenant_id = t), 0);
END $$;

GRANT USAGE ON SEQUENCE tenant_version_seq TO mnemo_app;
SELECT mnemo_apply_tenant_policies();
