-- The hits of a lexical lane over a subject's episodes recorded by an instant: each episode holding
-- one of the task's lexemes, with the lexeme's place in p_terms (from 0) and the episode's length in
-- lexemes. The server ranks them (services::context::lexical::bm25). Called by mnemo_context.
CREATE OR REPLACE FUNCTION public.mnemo_episode_hits(p_subject text, p_as_of timestamp with time zone, p_terms text[])
 RETURNS TABLE(id uuid, term integer, dl double precision)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER ROWS 100
 SET search_path TO '$user', 'public'
AS $function$
BEGIN
    RETURN QUERY
    SELECT e.id, (t.n - 1)::integer, length(e.search_tsv)::float8
    FROM unnest(p_terms) WITH ORDINALITY t(l, n) JOIN episodes e ON e.search_tsv @@ quote_literal(t.l)::tsquery
    WHERE mnemo_subject_key(e.tenant_id, e.subject_id) = mnemo_subject_key(current_setting('mnemo.tenant', true), p_subject)
      AND e.created_at <= p_as_of;
END
$function$
;
