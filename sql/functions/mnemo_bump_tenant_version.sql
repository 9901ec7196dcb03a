-- Advances a tenant's settings version, which servers compare to know their cached settings are
-- stale (tenant_versions).
CREATE OR REPLACE FUNCTION public.mnemo_bump_tenant_version(t text)
 RETURNS void
 LANGUAGE sql
AS $function$
    INSERT INTO tenant_versions (tenant_id, version) VALUES (t, nextval('tenant_version_seq'))
    ON CONFLICT (tenant_id) DO UPDATE SET version = EXCLUDED.version
$function$
;
