-- mnemo schema, part 31: a small subject's context lanes are chosen in process.
--
-- On a subject of 50 episodes `mnemo_context` costs ~1.1 ms of Postgres time per call, spread
-- over some twenty statements (executor start-up, the full-text probes, the BM25 ranking, the
-- backing check), none of which dominates; a plain read of the subject's rows costs a fraction
-- of that. For a subject no larger than a bound (episodes, memories) as of the call, whose
-- vector lanes would be exact (`mnemo_context_is_small`), `mnemo_context_small` returns
-- everything the lanes read: every memory recorded by then (with its lexemes when it holds one
-- of the task's, its cosine distance to the task vector, and whether a claim contradiction
-- superseded it), every episode recorded by then (likewise with its lexemes and its embedding's
-- distance), the task's lexemes per source after the subject's common terms are dropped
-- (as `mnemo_task_query` makes them), the tenant's settings version and the session's snapshot
-- (a memory no lane can pick comes without its content, which no lane reads). `of_model`
-- says whether a row's embedding is of the task vector's model (for an episode: and was
-- recorded by the call's instant); `dist` is then its cosine distance. The server then applies
-- the lanes of `mnemo_context` itself (`services::context::lanes`) to the same rows.
--
-- The call's one statement (`db::context::candidates`) asks `mnemo_context_is_small` first and
-- then runs either `mnemo_context_small` or `mnemo_context` (each under a one-time filter on
-- that answer, so the other is never called): one round trip either way, and a large
-- subject's rows are not copied through a second function.
--
-- Parts: 0 the settings version (in `seq`), 4 the snapshot (as in `mnemo_context`), 10 a memory,
-- 11 an episode, 12 the task's lexemes for one source (`kind` = 'memory' or 'episode', in
-- `lexemes`). Episodes recorded after the call's instant come too when the snapshot may cover
-- them (same session, seq up to its cursor): its coverage test reads them, as `mnemo_context`'s
-- does; the server keeps them out of every lane.

-- Whether a call on a subject takes the in-process lanes: the subject has at most `p_small[1]`
-- episodes and `p_small[2]` memories as of the call, and a task vector's lanes would be exact.
CREATE FUNCTION mnemo_context_is_small(p_tenant text, p_subject text, p_as_of timestamptz, p_vector text,
                                       p_approx_from bigint, p_small integer[])
RETURNS boolean
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_size bigint;
BEGIN
    PERFORM set_config('mnemo.tenant', p_tenant, true);
    -- The subject's episodes as of the call: the seq of its latest one recorded by then.
    v_size := COALESCE((SELECT e.seq FROM episodes e WHERE e.tenant_id = p_tenant AND e.subject_id = p_subject
                          AND e.created_at <= p_as_of ORDER BY e.seq DESC LIMIT 1), 0);
    IF v_size > p_small[1] OR (p_vector IS NOT NULL AND (p_approx_from <= 0 OR v_size >= p_approx_from)) THEN
        RETURN false;
    END IF;
    RETURN (SELECT count(*) FROM (SELECT 1 FROM memories m WHERE m.tenant_id = p_tenant AND m.subject_id = p_subject
                                    AND m.recorded_at <= p_as_of LIMIT p_small[2] + 1) c) <= p_small[2];
END
$$;

CREATE FUNCTION mnemo_context_small(
    p_tenant text, p_subject text, p_as_of timestamptz, p_words text, p_vector text, p_model text,
    p_session text)
RETURNS TABLE (
    part smallint, id uuid, kind text, content text, summary text, confidence float8,
    valid_from timestamptz, valid_to timestamptz, asserted_valid_to timestamptz, superseded_at timestamptz,
    source_episode_ids uuid[], metadata jsonb, status text, sensitivity_labels text[], suggested_labels text[],
    created_at timestamptz, updated_at timestamptz, claim_single boolean,
    source text, payload jsonb, provenance jsonb, session_id text, occurred_at timestamptz, seq bigint,
    lex float8, sem float8, visible boolean, contradicted boolean, "position" integer, prev_id uuid,
    lexemes text[], dist float8, of_model boolean)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
    v_vec vector;
    v_snap session_snapshots%ROWTYPE;
    v_has_snap boolean := false;
    v_mq tsquery;
    v_mterms text[];
    v_eq tsquery;
    v_eterms text[];
BEGIN
    PERFORM set_config('mnemo.tenant', p_tenant, true);
    RETURN QUERY SELECT 0::smallint, NULL::uuid, NULL::text, NULL::text, NULL::text, NULL::float8,
        NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::uuid[], NULL::jsonb,
        NULL::text, NULL::text[], NULL::text[], NULL::timestamptz, NULL::timestamptz, NULL::boolean,
        NULL::text, NULL::jsonb, NULL::jsonb, NULL::text, NULL::timestamptz,
        COALESCE((SELECT t.version FROM tenant_versions t WHERE t.tenant_id = p_tenant), 0),
        NULL::float8, NULL::float8, NULL::boolean, NULL::boolean, NULL::integer, NULL::uuid,
        NULL::text[], NULL::float8, NULL::boolean;

    IF p_session IS NOT NULL THEN
        SELECT * INTO v_snap FROM session_snapshots s
        WHERE s.tenant_id = p_tenant AND s.subject_id = p_subject AND s.session_id = p_session
          AND s.created_at <= p_as_of
        ORDER BY s.position DESC LIMIT 1;
        v_has_snap := FOUND;
    END IF;
    IF v_has_snap THEN
        RETURN QUERY SELECT 4::smallint, v_snap.id, NULL::text, NULL::text, v_snap.summary, NULL::float8,
            NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, v_snap.pinned, NULL::jsonb,
            NULL::text, NULL::text[], NULL::text[], v_snap.created_at, NULL::timestamptz, NULL::boolean,
            NULL::text, NULL::jsonb, NULL::jsonb, v_snap.session_id, NULL::timestamptz, v_snap.covers_through,
            NULL::float8, NULL::float8, NULL::boolean, NULL::boolean, v_snap.position, v_snap.prev_id,
            NULL::text[], NULL::float8, NULL::boolean;
    END IF;

    IF p_vector IS NOT NULL THEN
        v_vec := p_vector::vector;
    END IF;

    -- The task's lexemes per source, as `mnemo_task_query` makes them (without the subject's
    -- common terms of that source), the words parsed once for both.
    SELECT string_agg(quote_literal(l), ' | ' ORDER BY l) FILTER (WHERE NOT common_m)::tsquery,
           array_agg(l ORDER BY l) FILTER (WHERE NOT common_m),
           string_agg(quote_literal(l), ' | ' ORDER BY l) FILTER (WHERE NOT common_e)::tsquery,
           array_agg(l ORDER BY l) FILTER (WHERE NOT common_e)
    INTO v_mq, v_mterms, v_eq, v_eterms
    FROM (SELECT w.l,
                 EXISTS (SELECT 1 FROM subject_terms s WHERE s.tenant_id = p_tenant AND s.subject_id = p_subject
                           AND s.source = 'memory' AND s.lexeme = w.l AND s.common_since <= p_as_of) AS common_m,
                 EXISTS (SELECT 1 FROM subject_terms s WHERE s.tenant_id = p_tenant AND s.subject_id = p_subject
                           AND s.source = 'episode' AND s.lexeme = w.l AND s.common_since <= p_as_of) AS common_e
          FROM unnest(tsvector_to_array(to_tsvector('english', p_words))) w(l)) t;
    RETURN QUERY
    SELECT 12::smallint, NULL::uuid, s.source, NULL::text, NULL::text, NULL::float8,
        NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::uuid[], NULL::jsonb,
        NULL::text, NULL::text[], NULL::text[], NULL::timestamptz, NULL::timestamptz, NULL::boolean,
        NULL::text, NULL::jsonb, NULL::jsonb, NULL::text, NULL::timestamptz, NULL::bigint,
        NULL::float8, NULL::float8, NULL::boolean, NULL::boolean, NULL::integer, NULL::uuid,
        s.terms, NULL::float8, NULL::boolean
    FROM (VALUES ('memory', v_mterms), ('episode', v_eterms)) s(source, terms);

    -- A row's lexemes come only when it holds one of the task's (the lanes need them for no
    -- other row): `tsv @@ q` with q the task's lexemes joined by `|`, as the BM25 lanes probe.

    -- A memory's content, summary, metadata and labels come only when a lane can pick it: it is
    -- shown at the call's instant and is a BM25 hit, a single-valued claim, a fact or procedure,
    -- or has a vector of the task's model. Every other memory matters only to the backing check,
    -- which reads its sources and its state.
    RETURN QUERY
    SELECT 10::smallint, m.id, m.kind,
           CASE WHEN w.pickable THEN m.content END, CASE WHEN w.pickable THEN m.summary END,
           m.confidence, m.valid_from, m.valid_to, m.asserted_valid_to, m.superseded_at, m.source_episode_ids,
           CASE WHEN w.pickable THEN m.metadata END, m.status,
           CASE WHEN w.pickable THEN m.sensitivity_labels END, CASE WHEN w.pickable THEN m.suggested_labels END,
           m.created_at, m.updated_at, m.claim_single,
           NULL::text, NULL::jsonb, NULL::jsonb, NULL::text, NULL::timestamptz, NULL::bigint,
           NULL::float8, NULL::float8, NULL::boolean,
           -- Superseded by then through a claim contradiction (the backing check's second fact).
           COALESCE(m.superseded_at <= p_as_of AND EXISTS (
               SELECT 1 FROM supersession_records r
               WHERE r.tenant_id = m.tenant_id AND r.superseded_memory_id = m.id
                 AND r.subject_id = m.subject_id AND r.rule = 'claim_contradiction'), false),
           NULL::integer, NULL::uuid,
           CASE WHEN m.content_tsv @@ v_mq THEN tsvector_to_array(m.content_tsv) END,
           CASE WHEN v_vec IS NOT NULL AND m.embedding_model = p_model THEN (m.embedding <=> v_vec)::float8 END,
           COALESCE(v_vec IS NOT NULL AND m.embedding_model = p_model, false)
    FROM memories m
    CROSS JOIN LATERAL (SELECT (m.superseded_at IS NULL OR m.superseded_at > p_as_of) AND m.status <> 'tombstoned'
                               AND (m.asserted_valid_to IS NULL OR m.asserted_valid_to > p_as_of)
                               AND (m.claim_single OR m.kind IN ('profile_fact', 'procedure')
                                    OR COALESCE(m.content_tsv @@ v_mq, false)
                                    OR COALESCE(v_vec IS NOT NULL AND m.embedding_model = p_model, false))
                        AS pickable) w
    WHERE m.tenant_id = p_tenant AND m.subject_id = p_subject AND m.recorded_at <= p_as_of;

    RETURN QUERY
    SELECT 11::smallint, e.id, e.type, NULL::text, NULL::text, NULL::float8, NULL::timestamptz, NULL::timestamptz,
           NULL::timestamptz, NULL::timestamptz, NULL::uuid[], e.metadata, NULL::text, NULL::text[], NULL::text[],
           e.created_at, NULL::timestamptz, NULL::boolean,
           e.source, e.payload, e.provenance, e.session_id, e.occurred_at, e.seq,
           NULL::float8, NULL::float8, NULL::boolean, NULL::boolean, NULL::integer, NULL::uuid,
           CASE WHEN e.search_tsv @@ v_eq THEN tsvector_to_array(e.search_tsv) END,
           CASE WHEN v_vec IS NOT NULL AND x.embedding_model = p_model AND x.created_at <= p_as_of
                THEN (x.embedding <=> v_vec)::float8 END,
           COALESCE(v_vec IS NOT NULL AND x.embedding_model = p_model AND x.created_at <= p_as_of, false)
    FROM episodes e
    LEFT JOIN episode_embeddings x ON x.tenant_id = p_tenant AND x.subject_id = p_subject AND x.episode_id = e.id
    WHERE e.tenant_id = p_tenant AND e.subject_id = p_subject
      AND (e.created_at <= p_as_of
           OR (v_has_snap AND e.session_id = v_snap.session_id AND e.seq <= v_snap.covers_through));
END
$$;

REVOKE ALL ON FUNCTION mnemo_context_is_small(text, text, timestamptz, text, bigint, integer[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mnemo_context_is_small(text, text, timestamptz, text, bigint, integer[]) TO mnemo_app;
REVOKE ALL ON FUNCTION mnemo_context_small(text, text, timestamptz, text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mnemo_context_small(text, text, timestamptz, text, text, text, text) TO mnemo_app;
