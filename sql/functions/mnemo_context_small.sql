-- Stage 1 of a context call on a small subject: the rows that changed since the fingerprint the
-- caller holds, and what depends on the call (distances, task terms, snapshot), for
-- services::context::lanes. Rows in their own columns; per-call records (header, snapshot,
-- fingerprint, the memory list) in meta.
CREATE OR REPLACE FUNCTION public.mnemo_context_small(p_tenant text, p_subject text, p_as_of timestamp with time zone, p_words text, p_vector text, p_model text, p_session text, p_known text, p_known_xmin bigint)
 RETURNS TABLE(part smallint, id uuid, kind text, content text, summary text, confidence double precision, valid_from timestamp with time zone, valid_to timestamp with time zone, asserted_valid_to timestamp with time zone, superseded_at timestamp with time zone, source_episode_ids uuid[], metadata jsonb, status text, sensitivity_labels text[], suggested_labels text[], created_at timestamp with time zone, updated_at timestamp with time zone, claim_single boolean, source text, payload jsonb, provenance jsonb, session_id text, occurred_at timestamp with time zone, seq bigint, recorded_at timestamp with time zone, row_version bigint, contradicted boolean, lexemes text[], distance double precision, embedded boolean, ids uuid[], terms integer[], floats double precision[], meta jsonb)
 LANGUAGE plpgsql
 STABLE
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
#variable_conflict use_column
DECLARE
    v_vec vector;
    v_snap session_snapshots%ROWTYPE;
    v_has_snap boolean := false;
    v_mterms text[];
    v_eterms text[];
    v_version bigint;
    v_count bigint;
    v_last text;
    v_print text;
    v_memories text := 'all';
    v_episodes text := 'all';
    v_after bigint := 0;
BEGIN
    PERFORM set_config('mnemo.tenant', p_tenant, true);
    -- A record of the call is one row whose other columns stay NULL: its part and what it
    -- sets of the output columns (plpgsql's OUT variables), sent by RETURN NEXT, then cleared.
    part := 0;
    meta := jsonb_build_object('version',
        COALESCE((SELECT t.version FROM tenant_versions t WHERE t.tenant_id = p_tenant), 0));
    RETURN NEXT;

    IF p_session IS NOT NULL THEN
        v_snap := mnemo_session_snapshot(p_tenant, p_subject, p_session, p_as_of);
        v_has_snap := v_snap.id IS NOT NULL;
    END IF;
    IF v_has_snap THEN
        part := 4;
        meta := to_jsonb(v_snap);
        RETURN NEXT;
    END IF;
    meta := NULL;

    -- The task's lexemes per source, as `mnemo_task_query` makes them (without the subject's
    -- common terms of that source), the words parsed once for both.
    SELECT array_agg(l ORDER BY l) FILTER (WHERE NOT common_m), array_agg(l ORDER BY l) FILTER (WHERE NOT common_e)
    INTO v_mterms, v_eterms
    FROM (SELECT w.l,
                 EXISTS (SELECT 1 FROM subject_terms s WHERE s.tenant_id = p_tenant AND s.subject_id = p_subject
                           AND s.source = 'memory' AND s.lexeme = w.l AND s.common_since <= p_as_of) AS common_m,
                 EXISTS (SELECT 1 FROM subject_terms s WHERE s.tenant_id = p_tenant AND s.subject_id = p_subject
                           AND s.source = 'episode' AND s.lexeme = w.l AND s.common_since <= p_as_of) AS common_e
          FROM unnest(tsvector_to_array(to_tsvector('english', p_words))) w(l)) t;
    part := 12;
    source := 'memory';
    lexemes := v_mterms;
    RETURN NEXT;
    source := 'episode';
    lexemes := v_eterms;
    RETURN NEXT;
    source := NULL;
    lexemes := NULL;

    IF p_vector IS NOT NULL THEN
        -- One row a source: the ids of its rows with an embedding of the model (an episode's
        -- recorded by the call's instant) and their cosine distances to the task's vector.
        v_vec := p_vector::vector;
        part := 13;
        source := 'memory';
        SELECT COALESCE(array_agg(m.id), '{}'), COALESCE(array_agg((m.embedding <=> v_vec)::float8), '{}')
        INTO ids, floats
        FROM memories m
        WHERE m.tenant_id = p_tenant AND m.subject_id = p_subject AND m.embedding_model = p_model;
        RETURN NEXT;
        source := 'episode';
        -- An episode's distance is its nearest vector's: its opening's or a passage's; terms:
        -- where the nearest passage starts (-1: the opening is nearest), for the excerpt. A
        -- subject without passages (short turns) reads its openings alone.
        IF EXISTS (SELECT 1 FROM episode_passages q WHERE q.tenant_id = p_tenant AND q.subject_id = p_subject
                   AND q.embedding_model = p_model AND q.embedded_at <= p_as_of) THEN
            SELECT COALESCE(array_agg(y.episode_id), '{}'), COALESCE(array_agg(y.d), '{}'), COALESCE(array_agg(y.s), '{}')
            INTO ids, floats, terms
            -- (The smallest [distance, start] pair of each episode, by one hashed aggregate.)
            FROM (SELECT v.episode_id, m[1] AS d, m[2]::integer AS s FROM (
                    SELECT v.episode_id, min(ARRAY[v.d, v.s]) AS m FROM (
                        SELECT x.episode_id, (x.embedding <=> v_vec)::float8 AS d, -1::float8 AS s
                        FROM episode_embeddings x
                        WHERE x.tenant_id = p_tenant AND x.subject_id = p_subject AND x.embedding_model = p_model
                          AND x.created_at <= p_as_of
                        UNION ALL
                        SELECT q.episode_id, (q.embedding <=> v_vec)::float8, q.start_char::float8
                        FROM episode_passages q
                        WHERE q.tenant_id = p_tenant AND q.subject_id = p_subject AND q.embedding_model = p_model
                          AND q.embedded_at <= p_as_of) v
                    GROUP BY v.episode_id) v) y;
        ELSE
            SELECT COALESCE(array_agg(x.episode_id), '{}'), COALESCE(array_agg((x.embedding <=> v_vec)::float8), '{}')
            INTO ids, floats
            FROM episode_embeddings x
            WHERE x.tenant_id = p_tenant AND x.subject_id = p_subject AND x.embedding_model = p_model
              AND x.created_at <= p_as_of;
        END IF;
        RETURN NEXT;
        source := NULL;
        ids := NULL;
        floats := NULL;
        terms := NULL;
    END IF;

    -- The fingerprint: memory version / number of episodes / latest episode's id.
    v_version := COALESCE((SELECT v.version FROM subject_versions v
                           WHERE v.tenant_id = p_tenant AND v.subject_id = p_subject), 0);
    v_count := (SELECT count(*) FROM episodes e WHERE e.tenant_id = p_tenant AND e.subject_id = p_subject);
    v_last := COALESCE((SELECT e.id::text FROM episodes e WHERE e.tenant_id = p_tenant AND e.subject_id = p_subject
                        ORDER BY e.seq DESC LIMIT 1), '-');
    v_print := format('%s/%s/%s', v_version, v_count, v_last);
    IF p_known IS NOT NULL THEN
        IF split_part(p_known, '/', 1) = v_version::text THEN
            v_memories := 'kept';
        ELSIF p_known_xmin IS NOT NULL THEN
            v_memories := 'changed';
        END IF;
        IF split_part(p_known, '/', 2) = v_count::text AND split_part(p_known, '/', 3) = v_last THEN
            v_episodes := 'kept';
        ELSIF split_part(p_known, '/', 3) <> '-' THEN
            v_after := (SELECT e.seq FROM episodes e WHERE e.tenant_id = p_tenant AND e.subject_id = p_subject
                          AND e.id = split_part(p_known, '/', 3)::uuid);
            IF v_after IS NOT NULL AND split_part(p_known, '/', 2) = (
                SELECT count(*) FROM episodes e WHERE e.tenant_id = p_tenant AND e.subject_id = p_subject
                  AND e.seq <= v_after)::text THEN
                v_episodes := 'after';
            ELSE
                v_after := 0;
            END IF;
        END IF;
    END IF;
    part := 14;
    meta := jsonb_build_object('fingerprint', v_print, 'memories', v_memories, 'episodes', v_episodes);
    RETURN NEXT;
    meta := NULL;
    IF v_memories = 'changed' THEN
        part := 15;
        SELECT l.ids, jsonb_build_object('entries', l.versions) INTO ids, meta
        FROM (SELECT COALESCE(array_agg(m.id ORDER BY m.id), '{}') AS ids,
                     COALESCE(array_agg(m.xmin::text || CASE WHEN EXISTS (
                         SELECT 1 FROM supersession_records r
                         WHERE r.tenant_id = m.tenant_id AND r.superseded_memory_id = m.id
                           AND r.subject_id = m.subject_id AND r.rule = 'claim_contradiction')
                         THEN ':t' ELSE ':f' END ORDER BY m.id), '{}') AS versions
              FROM memories m WHERE m.tenant_id = p_tenant AND m.subject_id = p_subject) l;
        RETURN NEXT;
        ids := NULL;
        meta := NULL;
    END IF;
    IF v_memories <> 'kept' THEN
        RETURN QUERY
        SELECT 10::smallint, m.id, m.kind, m.content, m.summary, m.confidence, m.valid_from,
            m.valid_to, m.asserted_valid_to, m.superseded_at, m.source_episode_ids, m.metadata,
            m.status, m.sensitivity_labels, m.suggested_labels, m.created_at, m.updated_at,
            m.claim_single, NULL::text, NULL::jsonb, NULL::jsonb, NULL::text, NULL::timestamptz,
            NULL::bigint, m.recorded_at, m.xmin::text::bigint,
            EXISTS (SELECT 1 FROM supersession_records r
                       WHERE r.tenant_id = m.tenant_id AND r.superseded_memory_id = m.id
                         AND r.subject_id = m.subject_id AND r.rule = 'claim_contradiction'),
            tsvector_to_array(m.content_tsv), NULL::float8, NULL::boolean, NULL::uuid[],
            NULL::integer[], NULL::float8[], NULL::jsonb
        FROM memories m
        WHERE m.tenant_id = p_tenant AND m.subject_id = p_subject
          AND (v_memories = 'all' OR m.xmin::text::bigint > p_known_xmin);
    END IF;

    IF v_episodes = 'kept' THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT 11::smallint, e.id, e.type, NULL::text, NULL::text, NULL::float8, NULL::timestamptz,
        NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::uuid[], e.metadata,
        NULL::text, NULL::text[], NULL::text[], e.created_at, NULL::timestamptz, NULL::boolean,
        e.source, e.payload, e.provenance, e.session_id, e.occurred_at, e.seq, NULL::timestamptz,
        NULL::bigint, NULL::boolean, tsvector_to_array(e.search_tsv), NULL::float8, NULL::boolean,
        NULL::uuid[], NULL::integer[], NULL::float8[], NULL::jsonb
    FROM episodes e
    WHERE e.tenant_id = p_tenant AND e.subject_id = p_subject AND e.seq > v_after;
END
$function$
;
