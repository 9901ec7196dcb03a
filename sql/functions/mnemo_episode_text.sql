-- The text of an episode's payload that full-text search indexes (message contents, names,
-- speakers, text, content, author), cut at 250,000 characters.
CREATE OR REPLACE FUNCTION public.mnemo_episode_text(p_payload jsonb)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT left(coalesce(jsonb_path_query_array(p_payload, '$.messages[*].content')::text, '') || ' ' ||
        coalesce(jsonb_path_query_array(p_payload, '$.messages[*].name')::text, '') || ' ' ||
        coalesce(jsonb_path_query_array(p_payload, '$.messages[*].speaker')::text, '') || ' ' ||
        coalesce(p_payload->>'text', '') || ' ' || coalesce(p_payload->>'content', '') || ' ' ||
        coalesce(p_payload->>'speaker', '') || ' ' || coalesce(p_payload->>'author', ''), 250000)
$function$
;
