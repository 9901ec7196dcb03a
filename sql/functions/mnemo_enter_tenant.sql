-- Names the tenant for the current transaction (set_config mnemo.tenant), which row-level
-- security reads.
CREATE OR REPLACE FUNCTION public.mnemo_enter_tenant(t text)
 RETURNS bigint
 LANGUAGE plpgsql
AS $function$
BEGIN
    PERFORM set_config('mnemo.tenant', t, true);
    RETURN COALESCE((SELECT version FROM tenant_versions WHERE tenant_id = t), 0);
END $function$
;
