-- Trigger: episodes and session snapshots are append-only: UPDATE and TRUNCATE are rejected, and
-- DELETE outside the erasure path.
CREATE OR REPLACE FUNCTION public.mnemo_episodes_guard()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF TG_OP = 'DELETE' AND coalesce(current_setting('mnemo.erasure', true), '') = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '% rows are append-only (% rejected)', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$function$
;
