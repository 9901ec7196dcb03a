-- An episode's full-text lexemes: to_tsvector('english') of mnemo_episode_text; stored in
-- episodes.search_tsv by every insert.
CREATE OR REPLACE FUNCTION public.mnemo_episode_lexemes(p_payload jsonb)
 RETURNS tsvector
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT to_tsvector('english'::regconfig, mnemo_episode_text(p_payload))
$function$
;
