-- Leases up to p_limit passages still without a vector, across tenants, for the passage worker
-- (services::passages), in the order of the pending index (tenant, then oldest first: read off
-- the index however long the backlog, no sort); a lease older than a minute (its worker died)
-- is taken again. Returns each with its episode's payload, to cut the passage's text from. Security
-- definer because the worker names no tenant.
CREATE OR REPLACE FUNCTION public.mnemo_claim_passages(p_limit integer)
 RETURNS TABLE(tenant_id text, subject_id text, episode_id uuid, passage smallint, start_char integer, end_char integer, payload jsonb)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH c AS (
        UPDATE episode_passages q SET claimed_at = now()
        FROM (SELECT p.tenant_id, p.subject_id, p.episode_id, p.passage FROM episode_passages p
              WHERE p.embedding IS NULL AND (p.claimed_at IS NULL OR p.claimed_at < now() - interval '1 minute')
              ORDER BY p.tenant_id, p.created_at
              FOR UPDATE SKIP LOCKED LIMIT p_limit) p
        WHERE q.tenant_id = p.tenant_id AND q.subject_id = p.subject_id AND q.episode_id = p.episode_id
          AND q.passage = p.passage
        RETURNING q.tenant_id, q.subject_id, q.episode_id, q.passage, q.start_char, q.end_char)
    SELECT c.tenant_id, c.subject_id, c.episode_id, c.passage, c.start_char, c.end_char, e.payload
    FROM c JOIN episodes e ON e.tenant_id = c.tenant_id AND e.subject_id = c.subject_id AND e.id = c.episode_id
    ORDER BY c.tenant_id, c.subject_id, c.episode_id, c.passage;
END
$function$
;
