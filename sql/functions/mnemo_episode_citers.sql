-- The memories recorded by the instant that were compiled from any of the episodes, with what
-- decides their backing of those turns (services::context::lanes): their sources, when they
-- were superseded, their status and asserted end, and whether a claim contradiction superseded
-- them. A session's digest (compile::digest) quotes turns without being extracted from them, so
-- it never backs one. Security definer so the overlap test can use the GIN index on the sources (row-level
-- security keeps a non-leakproof operator from the index); it filters by the tenant named for
-- the statement itself.
CREATE OR REPLACE FUNCTION public.mnemo_episode_citers(p_subject text, p_as_of timestamp with time zone, p_episodes uuid[])
 RETURNS TABLE(id uuid, source_episode_ids uuid[], superseded_at timestamp with time zone, status text, asserted_valid_to timestamp with time zone, contradicted boolean)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER ROWS 200
 SET search_path TO '$user', 'public'
AS $function$
BEGIN
    RETURN QUERY
    WITH hit AS MATERIALIZED (
        SELECT m.tenant_id, m.subject_id, m.id, m.recorded_at, m.superseded_at, m.status, m.asserted_valid_to,
               m.source_episode_ids
        FROM memories m WHERE m.source_episode_ids && p_episodes
          AND NOT m.metadata @> '{"digest": "session"}'
    )
    SELECT h.id, h.source_episode_ids, h.superseded_at, h.status, h.asserted_valid_to,
           EXISTS (SELECT 1 FROM supersession_records r
                   WHERE r.tenant_id = h.tenant_id AND r.superseded_memory_id = h.id
                     AND r.subject_id = h.subject_id AND r.rule = 'claim_contradiction')
    FROM hit h
    WHERE h.tenant_id = current_setting('mnemo.tenant', true) AND h.subject_id = p_subject
      AND h.recorded_at <= p_as_of
    ORDER BY h.id;
END
$function$
;
