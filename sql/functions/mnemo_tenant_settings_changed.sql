-- Trigger: a change to a tenant's settings rows bumps the tenant's version
-- (mnemo_bump_tenant_version).
CREATE OR REPLACE FUNCTION public.mnemo_tenant_settings_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM mnemo_bump_tenant_version(OLD.tenant_id);
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.tenant_id IS DISTINCT FROM OLD.tenant_id) THEN
        PERFORM mnemo_bump_tenant_version(NEW.tenant_id);
    END IF;
    RETURN NULL;
END $function$
;
