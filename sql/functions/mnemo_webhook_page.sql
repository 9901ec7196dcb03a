-- A page of webhook deliveries, filtered by tenant and status, for the operator console.
CREATE OR REPLACE FUNCTION public.mnemo_webhook_page(p_status text, p_tenant text, p_limit integer, p_offset integer)
 RETURNS SETOF webhook_events
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
    SELECT * FROM webhook_events
    WHERE (p_status IS NULL OR status = p_status) AND (p_tenant IS NULL OR tenant_id = p_tenant)
    ORDER BY created_at DESC, id DESC LIMIT p_limit OFFSET p_offset
$function$
;
