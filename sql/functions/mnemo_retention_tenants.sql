-- Tenants whose retention policy asks for old episodes to be purged, across tenants, for the
-- retention worker.
CREATE OR REPLACE FUNCTION public.mnemo_retention_tenants()
 RETURNS TABLE(tenant_id text, days bigint)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
    SELECT tenant_id, (config->>'receipt_retention_days')::bigint FROM tenant_configs
    WHERE jsonb_typeof(config->'receipt_retention_days') = 'number'
      AND (config->>'receipt_retention_days')::numeric >= 1
    ORDER BY tenant_id
$function$
;
