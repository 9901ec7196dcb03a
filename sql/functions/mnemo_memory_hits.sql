-- The hits of a lexical lane over a subject's memories visible at an instant: each memory holding
-- one of the task's lexemes, with the lexeme's place in p_terms (from 0) and the memory's length in
-- lexemes. The server ranks them (services::context::lexical::bm25). Called by mnemo_context.
CREATE OR REPLACE FUNCTION public.mnemo_memory_hits(p_subject text, p_as_of timestamp with time zone, p_terms text[])
 RETURNS TABLE(id uuid, term integer, dl double precision)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER ROWS 100
 SET search_path TO '$user', 'public'
AS $function$
BEGIN
    RETURN QUERY
    SELECT x.id, (t.n - 1)::integer, length(x.content_tsv)::float8
    FROM unnest(p_terms) WITH ORDINALITY t(l, n) JOIN memories x ON x.content_tsv @@ quote_literal(t.l)::tsquery
    WHERE mnemo_subject_key(x.tenant_id, x.subject_id) = mnemo_subject_key(current_setting('mnemo.tenant', true), p_subject)
      AND x.recorded_at <= p_as_of AND (x.superseded_at IS NULL OR x.superseded_at > p_as_of)
      AND x.status <> 'tombstoned' AND (x.asserted_valid_to IS NULL OR x.asserted_valid_to > p_as_of)
      -- a session's digest is no lane's (services::context::lanes)
      AND NOT x.metadata @> '{"digest": "session"}';
END
$function$
;
