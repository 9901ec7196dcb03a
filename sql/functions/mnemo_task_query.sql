-- The task's tsquery and lexemes for a subject's memories or episodes, without the terms the
-- subject holds too commonly to tell items apart.
CREATE OR REPLACE FUNCTION public.mnemo_task_query(p_subject text, p_as_of timestamp with time zone, p_words text, p_source text)
 RETURNS TABLE(q tsquery, terms text[])
 LANGUAGE plpgsql
 STABLE
AS $function$
BEGIN
    RETURN QUERY
    SELECT string_agg(quote_literal(l), ' | ' ORDER BY l)::tsquery, array_agg(l ORDER BY l)
    FROM unnest(tsvector_to_array(to_tsvector('english', p_words))) l
    WHERE NOT EXISTS (SELECT 1 FROM subject_terms s WHERE s.tenant_id = current_setting('mnemo.tenant', true)
                        AND s.subject_id = p_subject AND s.source = p_source AND s.lexeme = l
                        AND s.common_since <= p_as_of);
END
$function$
;
