-- Trigger: fills episodes.search_tsv when an insert did not compute it (imports, hand-written
-- inserts).
CREATE OR REPLACE FUNCTION public.mnemo_episodes_fill_lexemes()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    NEW.search_tsv := mnemo_episode_lexemes(NEW.payload);
    RETURN NEW;
END
$function$
;
