-- Erasures recorded in the last N seconds, across tenants: every server drops its cached rows of
-- erased subjects.
CREATE OR REPLACE FUNCTION public.mnemo_erasures_recent(p_window_secs double precision)
 RETURNS TABLE(tenant_id text, erasure_id text, subject_sha256 text)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
    SELECT e.tenant_id, e.erasure_id, e.subject_sha256 FROM erasures e
    WHERE e.erased_at > now() - make_interval(secs => p_window_secs)
    ORDER BY e.erased_at, e.tenant_id, e.erasure_id
$function$
;
