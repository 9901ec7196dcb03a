-- A subject's state for the lexical index: its memory version and the seq and id of its latest
-- episode.
CREATE OR REPLACE FUNCTION public.mnemo_lexical_state(p_tenant text, p_subject text)
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$
    SELECT format('%s/%s/%s',
                  COALESCE((SELECT v.version FROM subject_versions v
                            WHERE v.tenant_id = p_tenant AND v.subject_id = p_subject), 0),
                  COALESCE(l.seq, 0), COALESCE(l.id::text, '-'))
    FROM (SELECT 1) one
    LEFT JOIN LATERAL (SELECT e.seq, e.id FROM episodes e WHERE e.tenant_id = p_tenant AND e.subject_id = p_subject
                       ORDER BY e.seq DESC LIMIT 1) l ON true
$function$
;
