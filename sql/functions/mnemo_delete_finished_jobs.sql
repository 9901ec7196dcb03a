-- Deletes compile jobs finished more than N seconds ago, across tenants (retention).
CREATE OR REPLACE FUNCTION public.mnemo_delete_finished_jobs(hours integer)
 RETURNS bigint
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
    WITH d AS (DELETE FROM compile_jobs WHERE status IN ('completed', 'failed')
               AND completed_at < now() - make_interval(hours => hours) RETURNING 1)
    SELECT count(*) FROM d
$function$
;
