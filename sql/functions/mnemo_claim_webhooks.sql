-- Claims up to N due webhook deliveries across tenants for the delivery worker (FOR UPDATE SKIP
-- LOCKED).
CREATE OR REPLACE FUNCTION public.mnemo_claim_webhooks(batch integer, lease_secs double precision)
 RETURNS SETOF webhook_events
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
BEGIN
    RETURN QUERY
    UPDATE webhook_events w SET attempts = w.attempts + 1, last_attempt_at = now(),
           next_attempt_at = now() + make_interval(secs => lease_secs)
    FROM (SELECT c.tenant_id, c.id FROM webhook_events c
          WHERE c.status = 'pending' AND c.next_attempt_at <= now()
          ORDER BY c.next_attempt_at FOR UPDATE SKIP LOCKED LIMIT batch) c
    WHERE w.tenant_id = c.tenant_id AND w.id = c.id
    RETURNING w.*;
END
$function$
;
