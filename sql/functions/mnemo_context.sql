-- Stage 1 of a context call on a large subject: a pool of rows for the server to apply the
-- lanes to (services::context::lanes, as to a small subject's rows): each lane's leading
-- candidates, the turns next to the lanes' turns, the sources of the summaries among them, the
-- session's snapshot with its pinned turns, the distances of all of them to the task vector
-- (distance, where embedded says the row has an embedding of the vector's model) and the memories
-- citing them (db::context::candidates). An episode's distance is its nearest vector's: its
-- opening's (episode_embeddings) or one of its passages' (episode_passages). Rows in their own
-- columns; per-call records (header, snapshot) in meta. The lexical lanes come ranked with the
-- call (p_lex_*: from the server's index of the subject, valid when p_lex_state is the
-- subject's state, or from this function's own hits, p_lex_state NULL); without them it
-- returns the task's lexemes and their hits (part 5) for the server to rank, and nothing else.
CREATE OR REPLACE FUNCTION public.mnemo_context(p_tenant text, p_subject text, p_as_of timestamp with time zone, p_words text, p_vector text, p_model text, p_session text, p_days timestamp with time zone[], p_approx_from bigint, p_around boolean, p_sources boolean, p_iterative boolean, p_lanes integer[], p_lex_state text DEFAULT NULL::text, p_lex_mterms text[] DEFAULT NULL::text[], p_lex_eterms text[] DEFAULT NULL::text[], p_lex_mem uuid[] DEFAULT NULL::uuid[], p_lex_ep uuid[] DEFAULT NULL::uuid[])
 RETURNS TABLE(part smallint, id uuid, kind text, content text, summary text, confidence double precision, valid_from timestamp with time zone, valid_to timestamp with time zone, asserted_valid_to timestamp with time zone, superseded_at timestamp with time zone, source_episode_ids uuid[], metadata jsonb, status text, sensitivity_labels text[], suggested_labels text[], created_at timestamp with time zone, updated_at timestamp with time zone, claim_single boolean, source text, payload jsonb, provenance jsonb, session_id text, occurred_at timestamp with time zone, seq bigint, recorded_at timestamp with time zone, row_version bigint, contradicted boolean, lexemes text[], distance double precision, embedded boolean, ids uuid[], terms integer[], floats double precision[], meta jsonb)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
#variable_conflict use_column
DECLARE
    -- p_lanes: how many candidates each lane fetches: lexical (ranked by the server), semantic,
    -- recent facts, recent episodes, session episodes, date episodes, approximate candidates,
    -- sessions' digests (the constants of db::context; no eighth: none). The server applies the
    -- same sizes to the pool.
    v_sem integer := p_lanes[2];
    v_facts integer := p_lanes[3];
    v_recent integer := p_lanes[4];
    v_session integer := p_lanes[5];
    v_dates integer := p_lanes[6];
    v_approx integer := p_lanes[7];
    v_digests integer := COALESCE(p_lanes[8], 0);
    v_version bigint;
    v_vec vector;
    v_dims integer;
    v_big boolean;
    v_size bigint;
    v_index boolean := false;
    v_mem uuid[];
    v_ep uuid[];
    v_more uuid[];
    v_all uuid[];
    v_asked uuid[];
    v_snap session_snapshots%ROWTYPE;
    v_has_snap boolean := false;
    v_lex_state text;
    v_lex_used boolean;
    v_mq tsquery;
    v_mterms text[];
    v_eq tsquery;
    v_eterms text[];
BEGIN
    PERFORM set_config('mnemo.tenant', p_tenant, true);
    v_version := COALESCE((SELECT t.version FROM tenant_versions t WHERE t.tenant_id = p_tenant), 0);
    -- The subject's size as BM25 counts it: its latest turn recorded by the call's instant, read
    -- down the (tenant, subject, seq) index.
    v_size := COALESCE((SELECT e.seq FROM episodes e WHERE e.tenant_id = p_tenant AND e.subject_id = p_subject
                          AND e.created_at <= p_as_of ORDER BY e.seq DESC LIMIT 1), 0);
    -- The task's lexemes per source (without the subject's common terms), and whether the
    -- lexical lanes sent (`p_lex_*`) are this call's: ranked on this function's hits, or on the
    -- server's index when the index is of the subject's state now and its terms are these.
    -- Lanes ranked on this call's own hits are the call's (its first statement returned the
    -- lexemes and the state): neither is computed again.
    IF p_lex_mterms IS NOT NULL AND p_lex_state IS NULL THEN
        v_lex_used := true;
    ELSE
        SELECT t.q, t.terms INTO v_mq, v_mterms FROM mnemo_task_query(p_subject, p_as_of, p_words, 'memory') t;
        SELECT t.q, t.terms INTO v_eq, v_eterms FROM mnemo_task_query(p_subject, p_as_of, p_words, 'episode') t;
        v_lex_state := mnemo_lexical_state(p_tenant, p_subject);
        v_lex_used := p_lex_mterms IS NOT NULL AND p_lex_state = v_lex_state
            AND COALESCE(v_mterms, '{}') = COALESCE(p_lex_mterms, '{}')
            AND COALESCE(v_eterms, '{}') = COALESCE(p_lex_eterms, '{}');
    END IF;
    v_index := v_lex_used AND p_lex_state IS NOT NULL;
    -- The header (meta): the subject's state, the task's lexemes per source, whether the lexical
    -- lanes sent are used and whether the server's index ranked them, whether hits follow instead
    -- of the pool, the tenant's settings version and the subject's size.
    -- A record of the call is one row whose other columns stay NULL: its part and what it sets of
    -- the output columns (plpgsql's OUT variables), sent by RETURN NEXT, then cleared.
    part := 0;
    meta := jsonb_build_object('state', v_lex_state, 'memory_terms', COALESCE(v_mterms, '{}'),
        'episode_terms', COALESCE(v_eterms, '{}'), 'lexical_used', v_lex_used, 'index_used', v_index,
        'hits_follow', (v_mq IS NOT NULL OR v_eq IS NOT NULL) AND NOT v_lex_used, 'version', v_version,
        'size', v_size);
    RETURN NEXT;
    meta := NULL;
    IF (v_mq IS NOT NULL OR v_eq IS NOT NULL) AND NOT v_lex_used THEN
        -- The hits of each lexical lane, one row a source: ids, terms (places in the lexemes)
        -- and lengths, one element a hit.
        part := 5;
        source := 'memory';
        SELECT COALESCE(array_agg(m.id), '{}'), COALESCE(array_agg(m.term), '{}'), COALESCE(array_agg(m.dl), '{}')
        INTO ids, terms, floats
        FROM mnemo_memory_hits(p_subject, p_as_of, v_mterms) m WHERE v_mq IS NOT NULL;
        RETURN NEXT;
        source := 'episode';
        SELECT COALESCE(array_agg(e.id), '{}'), COALESCE(array_agg(e.term), '{}'), COALESCE(array_agg(e.dl), '{}')
        INTO ids, terms, floats
        FROM mnemo_episode_hits(p_subject, p_as_of, v_eterms) e WHERE v_eq IS NOT NULL;
        RETURN NEXT;
        RETURN;
    END IF;

    IF p_session IS NOT NULL THEN
        v_snap := mnemo_session_snapshot(p_tenant, p_subject, p_session, p_as_of);
        v_has_snap := v_snap.id IS NOT NULL;
    END IF;
    IF v_has_snap THEN
        part := 4;
        meta := to_jsonb(v_snap);
        RETURN NEXT;
        meta := NULL;
    END IF;

    IF p_vector IS NOT NULL THEN
        v_vec := p_vector::vector;
        v_dims := vector_dims(v_vec);
        PERFORM set_config('hnsw.ef_search', v_approx::text, true);
        IF p_iterative THEN
            PERFORM set_config('hnsw.iterative_scan', 'relaxed_order', true);
        END IF;
        v_big := p_approx_from <= 0 OR v_size >= p_approx_from;
    ELSE
        v_big := false;
    END IF;

    -- Memories: the lexical lane's, every single-valued claim shown at the instant (or
    -- superseded after it), the recent facts, the nearest vectors, the most recent sessions'
    -- digests when asked (no other lane takes a digest: services::context::lanes).
    SELECT array_agg(u.id) INTO v_mem FROM (
        SELECT unnest(CASE WHEN v_lex_used THEN p_lex_mem END) AS id
        UNION (SELECT m.id FROM memories m
               WHERE m.tenant_id = p_tenant AND m.subject_id = p_subject AND m.claim_single AND m.superseded_at IS NULL
                 AND m.recorded_at <= p_as_of AND m.status <> 'tombstoned'
                 AND (m.asserted_valid_to IS NULL OR m.asserted_valid_to > p_as_of))
        UNION (SELECT m.id FROM memories m
               WHERE m.tenant_id = p_tenant AND m.subject_id = p_subject AND m.claim_single AND m.superseded_at > p_as_of
                 AND m.recorded_at <= p_as_of AND m.status <> 'tombstoned'
                 AND (m.asserted_valid_to IS NULL OR m.asserted_valid_to > p_as_of))
        UNION (SELECT f.id FROM (
                 (SELECT m.id, m.valid_from FROM memories m
                  WHERE m.tenant_id = p_tenant AND m.subject_id = p_subject AND m.kind IN ('profile_fact', 'procedure')
                    AND m.superseded_at IS NULL AND m.recorded_at <= p_as_of AND m.status <> 'tombstoned'
                    AND (m.asserted_valid_to IS NULL OR m.asserted_valid_to > p_as_of)
                  ORDER BY m.valid_from DESC, m.id DESC LIMIT v_facts)
                 UNION ALL (SELECT m.id, m.valid_from FROM memories m
                  WHERE m.tenant_id = p_tenant AND m.subject_id = p_subject AND m.kind IN ('profile_fact', 'procedure')
                    AND m.superseded_at > p_as_of AND m.recorded_at <= p_as_of AND m.status <> 'tombstoned'
                    AND (m.asserted_valid_to IS NULL OR m.asserted_valid_to > p_as_of))) f
               ORDER BY f.valid_from DESC, f.id DESC LIMIT v_facts)
        UNION (SELECT d.id FROM memories d
               WHERE v_digests > 0 AND d.tenant_id = p_tenant AND d.subject_id = p_subject
                 AND d.kind = 'episode_summary' AND d.metadata @> '{"digest": "session"}'
                 AND d.recorded_at <= p_as_of AND (d.superseded_at IS NULL OR d.superseded_at > p_as_of)
                 AND d.status <> 'tombstoned' AND (d.asserted_valid_to IS NULL OR d.asserted_valid_to > p_as_of)
               ORDER BY d.valid_from DESC, d.id DESC LIMIT v_digests)) u;
    IF v_vec IS NOT NULL AND NOT v_big THEN
        SELECT array_agg(c.id) INTO v_more FROM (
            SELECT m.id FROM memories m
            WHERE m.tenant_id = p_tenant AND m.subject_id = p_subject AND m.recorded_at <= p_as_of
              AND (m.superseded_at IS NULL OR m.superseded_at > p_as_of) AND m.status <> 'tombstoned'
              AND (m.asserted_valid_to IS NULL OR m.asserted_valid_to > p_as_of) AND m.embedding_model = p_model
              AND NOT m.metadata @> '{"digest": "session"}'
            ORDER BY m.embedding <=> v_vec, m.id LIMIT v_sem) c;
        v_mem := v_mem || COALESCE(v_more, '{}');
    END IF;
    IF v_vec IS NOT NULL AND v_big THEN
        EXECUTE format(
            'SELECT array_agg(c.id) FROM (SELECT c.id FROM (SELECT m.id, m.embedding <=> $4 AS d FROM memories m '
            'WHERE m.tenant_id = $1 AND m.subject_id = $2 AND m.recorded_at <= $3 '
            'AND (m.superseded_at IS NULL OR m.superseded_at > $3) AND m.status <> ''tombstoned'' '
            'AND (m.asserted_valid_to IS NULL OR m.asserted_valid_to > $3) AND m.embedding_model = %L '
            'AND NOT m.metadata @> ''{"digest": "session"}'' '
            'ORDER BY m.embedding::vector(%s) <=> $4::vector(%s) LIMIT %s) c ORDER BY c.d, c.id LIMIT %s) c',
            p_model, v_dims, v_dims, v_approx, v_sem)
        INTO v_more USING p_tenant, p_subject, p_as_of, v_vec;
        v_mem := v_mem || COALESCE(v_more, '{}');
    END IF;
    v_mem := ARRAY(SELECT DISTINCT x FROM unnest(v_mem) x WHERE x IS NOT NULL ORDER BY x);

    -- Episodes: the lexical lane's, the recent ones, those of the days the task names, the
    -- nearest vectors, the session's latest.
    SELECT array_agg(u.id) INTO v_ep FROM (
        SELECT unnest(CASE WHEN v_lex_used THEN p_lex_ep END) AS id
        UNION (SELECT e.id FROM episodes e WHERE e.tenant_id = p_tenant AND e.subject_id = p_subject
                 AND e.created_at <= p_as_of
               ORDER BY e.occurred_at DESC, e.created_at DESC, e.id DESC LIMIT v_recent)) u;
    IF cardinality(p_days) > 0 THEN
        SELECT array_agg(c.id) INTO v_more FROM (
            SELECT day.id FROM unnest(p_days) d, LATERAL (
                SELECT e.id, e.occurred_at FROM episodes e WHERE e.tenant_id = p_tenant AND e.subject_id = p_subject
                  AND e.created_at <= p_as_of AND e.occurred_at >= d AND e.occurred_at < d + interval '1 day'
                ORDER BY e.occurred_at, e.id LIMIT v_dates) day
            ORDER BY day.occurred_at, day.id LIMIT v_dates) c;
        v_ep := v_ep || COALESCE(v_more, '{}');
    END IF;
    IF v_vec IS NOT NULL AND NOT v_big THEN
        -- An episode's distance is its nearest vector's: its opening's or a passage's.
        SELECT array_agg(c.episode_id) INTO v_more FROM (
            SELECT v.episode_id FROM (
                SELECT x.episode_id, x.embedding <=> v_vec AS d FROM episode_embeddings x
                WHERE x.tenant_id = p_tenant AND x.subject_id = p_subject AND x.created_at <= p_as_of
                  AND x.embedding_model = p_model
                UNION ALL
                SELECT q.episode_id, q.embedding <=> v_vec FROM episode_passages q
                WHERE q.tenant_id = p_tenant AND q.subject_id = p_subject AND q.embedded_at <= p_as_of
                  AND q.embedding_model = p_model) v
            GROUP BY v.episode_id ORDER BY min(v.d), v.episode_id LIMIT v_sem) c;
        v_ep := v_ep || COALESCE(v_more, '{}');
    END IF;
    IF v_vec IS NOT NULL AND v_big THEN
        -- An embedding row is written after its episode, so `created_at <= as_of` implies the
        -- episode is visible too.
        -- Each table's index gives its nearest rows; an episode's distance is its nearest one's.
        EXECUTE format(
            'SELECT array_agg(c.episode_id) FROM (SELECT c.episode_id FROM ('
            '(SELECT x.episode_id, x.embedding <=> $4 AS d FROM episode_embeddings x WHERE x.tenant_id = $1 '
            'AND x.subject_id = $2 AND x.created_at <= $3 AND x.embedding_model = %L '
            'ORDER BY x.embedding::vector(%s) <=> $4::vector(%s) LIMIT %s) UNION ALL '
            '(SELECT q.episode_id, q.embedding <=> $4 AS d FROM episode_passages q WHERE q.tenant_id = $1 '
            'AND q.subject_id = $2 AND q.embedded_at <= $3 AND q.embedding_model = %L '
            'ORDER BY q.embedding::vector(%s) <=> $4::vector(%s) LIMIT %s)) c '
            'GROUP BY c.episode_id ORDER BY min(c.d), c.episode_id LIMIT %s) c',
            p_model, v_dims, v_dims, v_approx, p_model, v_dims, v_dims, v_approx, v_sem)
        INTO v_more USING p_tenant, p_subject, p_as_of, v_vec;
        v_ep := v_ep || COALESCE(v_more, '{}');
    END IF;
    IF p_session IS NOT NULL THEN
        SELECT array_agg(c.id) INTO v_more FROM (
            SELECT e.id FROM episodes e WHERE e.tenant_id = p_tenant AND e.subject_id = p_subject
              AND e.created_at <= p_as_of AND e.session_id = p_session
            ORDER BY e.occurred_at DESC, e.created_at DESC, e.id DESC LIMIT v_session) c;
        v_ep := v_ep || COALESCE(v_more, '{}');
    END IF;

    -- The turns the lanes' closure may take: those next to the lanes' turns, the sources of
    -- the summaries (each summary's, to tell whether the snapshot covers all of them; without
    -- a snapshot only single-turn summaries' sources are shown), the snapshot's pinned turns.
    -- Each row is looked up by id once; the summaries only when their sources are shown, looked
    -- up for the snapshot or asked for their backing (below).
    v_more := '{}';
    v_asked := '{}';
    IF p_sources OR v_has_snap OR NOT v_index THEN
        SELECT COALESCE(array_agg(s.sid) FILTER (WHERE v_has_snap OR (p_sources AND cardinality(m.source_episode_ids) = 1)), '{}'),
               COALESCE(array_agg(s.sid), '{}')
        INTO v_more, v_asked
        FROM unnest(v_mem) u(id)
        CROSS JOIN LATERAL (SELECT m.kind, m.source_episode_ids FROM memories m
            WHERE m.tenant_id = p_tenant AND m.subject_id = p_subject AND m.id = u.id LIMIT 1) m
        CROSS JOIN LATERAL unnest(m.source_episode_ids) s(sid)
        WHERE m.kind = 'episode_summary';
    END IF;
    IF v_has_snap THEN
        v_more := v_more || v_snap.pinned;
    END IF;
    v_all := ARRAY(
        WITH lane AS MATERIALIZED (
            SELECT e.id, e.seq, e.created_at FROM (SELECT DISTINCT x FROM unnest(v_ep) x) u(id)
            CROSS JOIN LATERAL (SELECT e.id, e.seq, e.created_at FROM episodes e
                WHERE e.tenant_id = p_tenant AND e.subject_id = p_subject AND e.id = u.id LIMIT 1) e),
        near AS (
            SELECT n.id, n.seq, n.created_at
            FROM (SELECT DISTINCT s FROM lane, unnest(ARRAY[lane.seq - 1, lane.seq + 1]) s WHERE p_around) q(seq)
            CROSS JOIN LATERAL (SELECT n.id, n.seq, n.created_at FROM episodes n
                WHERE n.tenant_id = p_tenant AND n.subject_id = p_subject AND n.seq = q.seq LIMIT 1) n),
        other AS (
            SELECT e.id, e.seq, e.created_at FROM (SELECT DISTINCT x FROM unnest(v_more) x) u(id)
            CROSS JOIN LATERAL (SELECT e.id, e.seq, e.created_at FROM episodes e
                WHERE e.tenant_id = p_tenant AND e.subject_id = p_subject AND e.id = u.id LIMIT 1) e),
        every AS (SELECT * FROM lane UNION SELECT * FROM near UNION SELECT * FROM other)
        SELECT every.id FROM every WHERE every.created_at <= p_as_of ORDER BY every.id);

    RETURN QUERY
    -- The memories (without their contradiction records: the citers below bring those).
    SELECT 10::smallint, m.id, m.kind, m.content, m.summary, m.confidence, m.valid_from, m.valid_to,
        m.asserted_valid_to, m.superseded_at, m.source_episode_ids, m.metadata, m.status,
        m.sensitivity_labels, m.suggested_labels, m.created_at, m.updated_at, m.claim_single,
        NULL::text, NULL::jsonb, NULL::jsonb, NULL::text, NULL::timestamptz, NULL::bigint,
        m.recorded_at, m.xmin::text::bigint, NULL::boolean, NULL::text[],
        CASE WHEN v_vec IS NOT NULL AND m.embedding_model = p_model THEN (m.embedding <=> v_vec)::float8 END,
        v_vec IS NOT NULL AND m.embedding_model = p_model, NULL::uuid[], NULL::integer[],
        NULL::float8[], NULL::jsonb
    FROM unnest(v_mem) u(id)
    CROSS JOIN LATERAL (SELECT m.*, m.xmin FROM memories m
        WHERE m.tenant_id = p_tenant AND m.subject_id = p_subject AND m.id = u.id LIMIT 1) m;
    RETURN QUERY
    SELECT 11::smallint, e.id, e.type, NULL::text, NULL::text, NULL::float8, NULL::timestamptz,
        NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::uuid[], e.metadata,
        NULL::text, NULL::text[], NULL::text[], e.created_at, NULL::timestamptz, NULL::boolean,
        e.source, e.payload, e.provenance, e.session_id, e.occurred_at, e.seq, NULL::timestamptz,
        NULL::bigint, NULL::boolean, NULL::text[], LEAST((x.embedding <=> v_vec)::float8, q.d),
        x.episode_id IS NOT NULL, NULL::uuid[],
        -- where the nearest passage starts, when it is nearer than the opening (for the excerpt)
        CASE WHEN q.d < (x.embedding <=> v_vec)::float8 THEN ARRAY[q.s] END, NULL::float8[], NULL::jsonb
    FROM unnest(v_all) u(id)
    CROSS JOIN LATERAL (SELECT e.* FROM episodes e
        WHERE e.tenant_id = p_tenant AND e.subject_id = p_subject AND e.id = u.id LIMIT 1) e
    LEFT JOIN LATERAL (SELECT x.episode_id, x.embedding FROM episode_embeddings x
        WHERE v_vec IS NOT NULL AND x.tenant_id = p_tenant AND x.subject_id = p_subject AND x.episode_id = e.id
          AND x.embedding_model = p_model AND x.created_at <= p_as_of LIMIT 1) x ON true
    LEFT JOIN LATERAL (SELECT (q.embedding <=> v_vec)::float8 AS d, q.start_char AS s FROM episode_passages q
        WHERE v_vec IS NOT NULL AND q.tenant_id = p_tenant AND q.subject_id = p_subject AND q.episode_id = e.id
          AND q.embedding_model = p_model AND q.embedded_at <= p_as_of
        ORDER BY 1, 2 LIMIT 1) q ON true;

    -- The memories citing the pool's turns or its summaries' sources: whether a turn is backed
    -- (the server's index holds them when its lexical lanes were used).
    IF NOT v_index THEN
        v_asked := ARRAY(SELECT DISTINCT a FROM unnest(v_all || v_asked) a);
        RETURN QUERY
        SELECT 16::smallint, c.id, NULL::text, NULL::text, NULL::text, NULL::float8, NULL::timestamptz,
            NULL::timestamptz, c.asserted_valid_to, c.superseded_at, c.source_episode_ids,
            NULL::jsonb, c.status, NULL::text[], NULL::text[], NULL::timestamptz, NULL::timestamptz,
            NULL::boolean, NULL::text, NULL::jsonb, NULL::jsonb, NULL::text, NULL::timestamptz,
            NULL::bigint, NULL::timestamptz, NULL::bigint, c.contradicted, NULL::text[],
            NULL::float8, NULL::boolean, NULL::uuid[], NULL::integer[], NULL::float8[], NULL::jsonb
        FROM mnemo_episode_citers(p_subject, p_as_of, v_asked) c;
    END IF;
END
$function$
;
