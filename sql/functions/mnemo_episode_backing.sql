-- For each asked episode: whether a memory compiled from it is visible at the instant, and
-- whether one was superseded by then through a claim contradiction (suppression of unbacked and
-- contradicted turns).
CREATE OR REPLACE FUNCTION public.mnemo_episode_backing(p_subject text, p_as_of timestamp with time zone, p_episodes uuid[])
 RETURNS TABLE(episode_id uuid, visible boolean, contradicted boolean)
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
    )
    SELECT s.e,
           bool_or((h.superseded_at IS NULL OR h.superseded_at > p_as_of) AND h.status <> 'tombstoned'
                   AND (h.asserted_valid_to IS NULL OR h.asserted_valid_to > p_as_of)),
           bool_or(h.superseded_at IS NOT NULL AND h.superseded_at <= p_as_of AND EXISTS (
               SELECT 1 FROM supersession_records r
               WHERE r.tenant_id = h.tenant_id AND r.superseded_memory_id = h.id
                 AND r.subject_id = h.subject_id AND r.rule = 'claim_contradiction'))
    FROM hit h CROSS JOIN LATERAL unnest(h.source_episode_ids) s(e)
    WHERE h.tenant_id = current_setting('mnemo.tenant', true) AND h.subject_id = p_subject
      AND h.recorded_at <= p_as_of AND s.e IN (SELECT unnest(p_episodes))
    GROUP BY s.e ORDER BY s.e;
END
$function$
;
