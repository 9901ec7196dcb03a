-- Takes EXECUTE on every SECURITY DEFINER function of the schema away from PUBLIC and grants it
-- to mnemo_app; run after installing functions.
CREATE OR REPLACE FUNCTION public.mnemo_lock_definer_functions()
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
DECLARE
    f regprocedure;
    n integer := 0;
BEGIN
    FOR f IN
        SELECT p.oid::regprocedure FROM pg_proc p
        WHERE p.prosecdef AND p.pronamespace = current_schema()::regnamespace
    LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO mnemo_app', f);
        n := n + 1;
    END LOOP;
    RETURN n;
END $function$
;
