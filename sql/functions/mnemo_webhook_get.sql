-- One webhook delivery by id, across tenants, for the operator console.
CREATE OR REPLACE FUNCTION public.mnemo_webhook_get(p_id text)
 RETURNS SETOF webhook_events
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
    SELECT * FROM webhook_events WHERE id = p_id
$function$
;
