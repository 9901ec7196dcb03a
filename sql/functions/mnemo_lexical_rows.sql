-- A large subject's lexemes and backing columns since a state, for the server's in-process
-- lexical index (services::context::lexical).
CREATE OR REPLACE FUNCTION public.mnemo_lexical_rows(p_tenant text, p_subject text, p_known text)
 RETURNS TABLE(part smallint, id uuid, seq bigint, stamp timestamp with time zone, superseded_at timestamp with time zone, asserted_valid_to timestamp with time zone, tombstoned boolean, lexemes text[], note text, sources uuid[], contradiction boolean)
 LANGUAGE plpgsql
 STABLE
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
#variable_conflict use_column
DECLARE
    v_state text;
    v_memories text := 'all';
    v_episodes text := 'all';
    v_after bigint := 0;
BEGIN
    PERFORM set_config('mnemo.tenant', p_tenant, true);
    v_state := mnemo_lexical_state(p_tenant, p_subject);
    IF p_known IS NOT NULL THEN
        IF split_part(p_known, '/', 1) = split_part(v_state, '/', 1) THEN
            v_memories := 'kept';
        END IF;
        IF split_part(p_known, '/', 3) <> '-' AND EXISTS (
            SELECT 1 FROM episodes e WHERE e.tenant_id = p_tenant AND e.subject_id = p_subject
              AND e.seq = split_part(p_known, '/', 2)::bigint AND e.id = split_part(p_known, '/', 3)::uuid) THEN
            v_episodes := 'after';
            v_after := split_part(p_known, '/', 2)::bigint;
        END IF;
    END IF;
    RETURN QUERY SELECT 0::smallint, NULL::uuid, NULL::bigint, NULL::timestamptz, NULL::timestamptz,
        NULL::timestamptz, NULL::boolean, ARRAY[v_memories, v_episodes], v_state, NULL::uuid[], NULL::boolean;
    IF v_memories = 'all' THEN
        RETURN QUERY
        SELECT 1::smallint, m.id, NULL::bigint, m.recorded_at, m.superseded_at, m.asserted_valid_to,
               m.status = 'tombstoned', tsvector_to_array(m.content_tsv), NULL::text, m.source_episode_ids,
               EXISTS (SELECT 1 FROM supersession_records r
                       WHERE r.tenant_id = m.tenant_id AND r.superseded_memory_id = m.id
                         AND r.subject_id = m.subject_id AND r.rule = 'claim_contradiction')
        FROM memories m WHERE m.tenant_id = p_tenant AND m.subject_id = p_subject
          -- a session's digest is no lane's, and it quotes turns without backing them
          AND NOT m.metadata @> '{"digest": "session"}';
    END IF;
    RETURN QUERY
    SELECT 2::smallint, e.id, e.seq, e.created_at, NULL::timestamptz, NULL::timestamptz, NULL::boolean,
           tsvector_to_array(e.search_tsv), NULL::text, NULL::uuid[], NULL::boolean
    FROM episodes e WHERE e.tenant_id = p_tenant AND e.subject_id = p_subject AND e.seq > v_after
    ORDER BY e.seq;
    RETURN QUERY
    SELECT 3::smallint, NULL::uuid, NULL::bigint, s.common_since, NULL::timestamptz, NULL::timestamptz,
           NULL::boolean, ARRAY[s.lexeme], s.source, NULL::uuid[], NULL::boolean
    FROM subject_terms s
    WHERE s.tenant_id = p_tenant AND s.subject_id = p_subject AND s.common_since IS NOT NULL;
END
$function$
;
