-- SECURITY DEFINER functions run with their owner's rights, past row-level security: only the
-- server's role may call them (issue 49). Postgres grants EXECUTE on every new function to
-- PUBLIC, so until now any role that could connect to the database (a read-only reporting
-- login, a pooler's auth user) could look keys up by digest, claim compile jobs, list every
-- tenant or read other tenants' rows through these functions.
--
-- mnemo_lock_definer_functions() takes EXECUTE away from PUBLIC on every SECURITY DEFINER
-- function of this schema and grants it to mnemo_app (the owner keeps it, as owner). A
-- migration that creates or re-creates (DROP + CREATE) such a function calls it again;
-- tests/api/definer.rs fails the suite when one is executable by PUBLIC.
CREATE OR REPLACE FUNCTION mnemo_lock_definer_functions() RETURNS integer
LANGUAGE plpgsql AS $$
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
END $$;
REVOKE ALL ON FUNCTION mnemo_lock_definer_functions() FROM PUBLIC;
SELECT mnemo_lock_definer_functions();
