-- Statewave's backup import refuses a preserved id that exists anywhere in the database, in any
-- tenant (its ids are global primary keys). Row-level security shows mnemo_app only its own
-- tenant's rows, so this one question is answered by a SECURITY DEFINER function: which of the
-- given episode and memory ids are already used by some row. It returns only ids the caller
-- passed in (and which table holds them): never a tenant, a subject or any content.
-- Neither table has an index on id alone (keys lead with the tenant), so this is one scan of
-- each table hash-joined to the given ids: an import is rare and the ingest path stays as it is.
CREATE FUNCTION mnemo_ids_in_use(p_episode_ids uuid[], p_memory_ids uuid[])
RETURNS TABLE (kind text, id uuid)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT 'episode', e.id FROM episodes e WHERE e.id IN (SELECT unnest(p_episode_ids))
    UNION
    SELECT 'memory', m.id FROM memories m WHERE m.id IN (SELECT unnest(p_memory_ids))
    ORDER BY 1, 2
$$;
REVOKE ALL ON FUNCTION mnemo_ids_in_use(uuid[], uuid[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mnemo_ids_in_use(uuid[], uuid[]) TO mnemo_app;
