-- The BM25 lane of a subject's episodes for the task's lexemes as of an instant (through
-- mnemo_bm25_rank).
CREATE OR REPLACE FUNCTION public.mnemo_episode_bm25(p_subject text, p_as_of timestamp with time zone, p_query tsquery, p_terms text[], p_limit integer)
 RETURNS TABLE(id uuid, score double precision)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER ROWS 100
 SET search_path TO '$user', 'public'
AS $function$
DECLARE
    v_id uuid[];
    v_term text[];
    v_dl float8[];
BEGIN
    SELECT array_agg(e.id), array_agg(t.l), array_agg(length(e.search_tsv)::float8) INTO v_id, v_term, v_dl
    FROM unnest(p_terms) t(l) JOIN episodes e ON e.search_tsv @@ quote_literal(t.l)::tsquery
    WHERE mnemo_subject_key(e.tenant_id, e.subject_id) = mnemo_subject_key(current_setting('mnemo.tenant', true), p_subject)
      AND e.created_at <= p_as_of AND p_query IS NOT NULL;
    RETURN QUERY SELECT r.id, r.score
    FROM mnemo_bm25_rank(v_id, v_term, v_dl, mnemo_subject_size(p_subject, p_as_of), p_limit) r;
END
$function$
;
