-- Claims the oldest runnable compile job (FOR UPDATE SKIP LOCKED) across tenants, for any
-- server's worker; security definer because the worker names no tenant.
CREATE OR REPLACE FUNCTION public.mnemo_claim_job(stale_secs double precision)
 RETURNS SETOF compile_jobs
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
BEGIN
    RETURN QUERY
    UPDATE compile_jobs j SET status = 'running', started_at = COALESCE(j.started_at, now()),
           heartbeat_at = now(), attempts = j.attempts + 1
    FROM (SELECT c.tenant_id, c.subject_id, c.id FROM compile_jobs c
          WHERE c.status = 'pending' OR (c.status = 'running'
                AND COALESCE(c.heartbeat_at, c.created_at) < now() - make_interval(secs => stale_secs))
          ORDER BY c.created_at FOR UPDATE SKIP LOCKED LIMIT 1) c
    WHERE j.tenant_id = c.tenant_id AND j.subject_id = c.subject_id AND j.id = c.id
    RETURNING j.*;
END
$function$
;
