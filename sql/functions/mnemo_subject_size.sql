-- How many episodes a subject had as of an instant (its latest seq recorded by then), the N of
-- BM25's idf.
CREATE OR REPLACE FUNCTION public.mnemo_subject_size(p_subject text, p_as_of timestamp with time zone)
 RETURNS double precision
 LANGUAGE plpgsql
 STABLE
AS $function$
BEGIN
    RETURN COALESCE((SELECT e.seq FROM episodes e
                     WHERE e.tenant_id = current_setting('mnemo.tenant', true) AND e.subject_id = p_subject
                       AND e.created_at <= p_as_of ORDER BY e.seq DESC LIMIT 1), 0)::float8;
END
$function$
;
