-- Puts a failed webhook delivery back in the queue.
CREATE OR REPLACE FUNCTION public.mnemo_webhook_retry(p_id text)
 RETURNS SETOF webhook_events
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
    UPDATE webhook_events SET status = 'pending', attempts = 0, next_attempt_at = now(),
           last_error = NULL, http_status = NULL, delivered_at = NULL
    WHERE id = p_id AND status = 'dead_letter' AND payload IS NOT NULL
    RETURNING *
$function$
;
