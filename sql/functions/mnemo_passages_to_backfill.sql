-- A subject whose older episodes may still lack their passages (compile_cursors.passages_through),
-- of any tenant, for the passage worker (services::passages); none when every
-- subject is done. Security definer because the worker names no tenant.
CREATE OR REPLACE FUNCTION public.mnemo_passages_to_backfill()
 RETURNS TABLE(tenant_id text, subject_id text, through bigint)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
    SELECT c.tenant_id, c.subject_id, c.passages_through FROM compile_cursors c
    WHERE c.passages_through IS NOT NULL
    ORDER BY c.tenant_id, c.subject_id
    LIMIT 1
$function$
;
