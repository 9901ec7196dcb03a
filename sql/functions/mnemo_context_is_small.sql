-- Whether a context call's subject is small enough for the server to apply the lanes itself to
-- its rows (then db::context calls mnemo_context_small instead of mnemo_context).
CREATE OR REPLACE FUNCTION public.mnemo_context_is_small(p_tenant text, p_subject text, p_as_of timestamp with time zone, p_vector text, p_approx_from bigint, p_small integer[])
 RETURNS boolean
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
    v_size bigint;
BEGIN
    PERFORM set_config('mnemo.tenant', p_tenant, true);
    v_size := COALESCE((SELECT e.seq FROM episodes e WHERE e.tenant_id = p_tenant AND e.subject_id = p_subject
                          ORDER BY e.seq DESC LIMIT 1), 0);
    IF v_size > p_small[1] OR (p_vector IS NOT NULL AND (p_approx_from <= 0 OR v_size >= p_approx_from)) THEN
        RETURN false;
    END IF;
    RETURN (SELECT count(*) FROM (SELECT 1 FROM memories m WHERE m.tenant_id = p_tenant AND m.subject_id = p_subject
                                    LIMIT p_small[2] + 1) c) <= p_small[2];
END
$function$
;
