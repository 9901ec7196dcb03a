-- Leases up to p_limit passages still without a vector, across tenants, for the passage worker
-- (services::passages): the oldest of each tenant waiting, taken in turns (each tenant's first,
-- then each one's second, …), so one tenant's long backlog does not hold the others' back. The
-- tenants waiting are read off the pending index by a skip scan (one probe per tenant), each
-- one's oldest off the same index, no sort of the backlog. A lease older than a minute (its
-- worker died) is taken again; a passage another worker leased meanwhile is not (the update
-- checks again). Returns each with its episode's payload, to cut the passage's text from.
-- Security definer because the worker names no tenant.
CREATE OR REPLACE FUNCTION public.mnemo_claim_passages(p_limit integer)
 RETURNS TABLE(tenant_id text, subject_id text, episode_id uuid, passage smallint, start_char integer, end_char integer, payload jsonb)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH RECURSIVE tenants(t) AS (
        (SELECT p.tenant_id FROM episode_passages p WHERE p.embedding IS NULL ORDER BY p.tenant_id LIMIT 1)
        UNION ALL
        SELECT (SELECT p.tenant_id FROM episode_passages p
                WHERE p.embedding IS NULL AND p.tenant_id > tenants.t ORDER BY p.tenant_id LIMIT 1)
        FROM tenants WHERE tenants.t IS NOT NULL),
    turns AS (
        SELECT w.tenant_id, w.subject_id, w.episode_id, w.passage,
               row_number() OVER (PARTITION BY w.tenant_id ORDER BY w.created_at, w.subject_id, w.episode_id, w.passage) AS n
        FROM tenants
        CROSS JOIN LATERAL (SELECT p.tenant_id, p.subject_id, p.episode_id, p.passage, p.created_at
            FROM episode_passages p
            WHERE p.tenant_id = tenants.t AND p.embedding IS NULL
              AND (p.claimed_at IS NULL OR p.claimed_at < now() - interval '1 minute')
            ORDER BY p.created_at LIMIT p_limit) w
        WHERE tenants.t IS NOT NULL),
    pick AS (
        SELECT turns.tenant_id, turns.subject_id, turns.episode_id, turns.passage FROM turns
        ORDER BY turns.n, turns.tenant_id LIMIT p_limit),
    c AS (
        UPDATE episode_passages q SET claimed_at = now()
        FROM pick p
        WHERE q.tenant_id = p.tenant_id AND q.subject_id = p.subject_id AND q.episode_id = p.episode_id
          AND q.passage = p.passage AND q.embedding IS NULL
          AND (q.claimed_at IS NULL OR q.claimed_at < now() - interval '1 minute')
        RETURNING q.tenant_id, q.subject_id, q.episode_id, q.passage, q.start_char, q.end_char)
    SELECT c.tenant_id, c.subject_id, c.episode_id, c.passage, c.start_char, c.end_char, e.payload
    FROM c JOIN episodes e ON e.tenant_id = c.tenant_id AND e.subject_id = c.subject_id AND e.id = c.episode_id
    ORDER BY c.tenant_id, c.subject_id, c.episode_id, c.passage;
END
$function$
;
