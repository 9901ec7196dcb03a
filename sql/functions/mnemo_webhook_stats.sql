-- Counts of webhook deliveries by status for a tenant.
CREATE OR REPLACE FUNCTION public.mnemo_webhook_stats(p_tenant text)
 RETURNS TABLE(status text, events bigint, oldest timestamp with time zone)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
    SELECT status, count(*), min(created_at) FROM webhook_events
    WHERE p_tenant IS NULL OR tenant_id = p_tenant
    GROUP BY status ORDER BY status
$function$
;
