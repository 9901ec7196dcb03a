-- The full-text key of a subject within its tenant (the leading column of the full-text indexes).
CREATE OR REPLACE FUNCTION public.mnemo_subject_key(p_tenant text, p_subject text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT length(p_tenant)::text || ':' || p_tenant || p_subject
$function$
;
