-- Deletes delivered or dead webhook deliveries older than N days, across tenants (retention).
CREATE OR REPLACE FUNCTION public.mnemo_purge_webhooks(hours integer)
 RETURNS bigint
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
    WITH old AS (SELECT tenant_id, id FROM webhook_events
                 WHERE status IN ('delivered', 'dead_letter')
                   AND COALESCE(delivered_at, last_attempt_at, created_at) < now() - make_interval(hours => hours)
                 FOR UPDATE SKIP LOCKED),
         d AS (DELETE FROM webhook_events w USING old
               WHERE w.tenant_id = old.tenant_id AND w.id = old.id RETURNING 1)
    SELECT count(*) FROM d
$function$
;
