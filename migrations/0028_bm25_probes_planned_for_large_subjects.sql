-- mnemo schema, part 28: the full-text probes of a large subject are planned for that subject.
--
-- Migration 0025 runs `mnemo_context` (and so the lane functions it calls) with generic plans:
-- planning the probes on every call cost more than running them on small subjects. A generic
-- plan estimates a subject's rows as the table's average per subject, and in a database of many
-- small subjects that average is small. For the probes that estimate made scanning all of the
-- subject's rows (testing `@@` on each, once per task term) look cheaper than the full-text
-- index: measured after 1.9M episodes of other subjects were added to the benchmark's database,
-- the episode probe of a 60,500-episode subject took 100 ms per call (480,820 rows tested)
-- instead of 1.4 ms, and the whole call 113 ms.
--
-- From 1,000 episodes (as of the call) each probe is now planned for the subject and its as_of
-- (dynamic SQL: a custom plan per call, about 0.3 ms, which the index saves many times over at
-- that size); smaller subjects keep the cached generic plan, which suits them. The statements
-- are the same, so the rows are: only the plan changes. The subject's size is computed once and
-- handed to the ranking.

CREATE OR REPLACE FUNCTION mnemo_episode_bm25(p_subject text, p_as_of timestamptz, p_query tsquery, p_terms text[],
                                              p_limit integer)
RETURNS TABLE (id uuid, score float8)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT ROWS 100 AS $$
DECLARE
    v_id uuid[];
    v_term text[];
    v_dl float8[];
    v_size float8 := mnemo_subject_size(p_subject, p_as_of);
BEGIN
    IF v_size >= 1000 THEN
        EXECUTE
            'SELECT array_agg(e.id), array_agg(t.l), array_agg(length(e.search_tsv)::float8) '
            'FROM unnest($1) t(l) JOIN episodes e ON e.search_tsv @@ quote_literal(t.l)::tsquery '
            'WHERE e.tenant_id = current_setting(''mnemo.tenant'', true) AND e.subject_id = $2 '
            'AND e.created_at <= $3 AND $4 IS NOT NULL'
        INTO v_id, v_term, v_dl USING p_terms, p_subject, p_as_of, p_query;
    ELSE
        SELECT array_agg(e.id), array_agg(t.l), array_agg(length(e.search_tsv)::float8) INTO v_id, v_term, v_dl
        FROM unnest(p_terms) t(l) JOIN episodes e ON e.search_tsv @@ quote_literal(t.l)::tsquery
        WHERE e.tenant_id = current_setting('mnemo.tenant', true) AND e.subject_id = p_subject
          AND e.created_at <= p_as_of AND p_query IS NOT NULL;
    END IF;
    RETURN QUERY SELECT r.id, r.score FROM mnemo_bm25_rank(v_id, v_term, v_dl, v_size, p_limit) r;
END
$$;

CREATE OR REPLACE FUNCTION mnemo_memory_bm25(p_subject text, p_as_of timestamptz, p_query tsquery, p_terms text[],
                                             p_limit integer)
RETURNS TABLE (id uuid, score float8)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT ROWS 100 AS $$
DECLARE
    v_id uuid[];
    v_term text[];
    v_dl float8[];
    v_size float8 := mnemo_subject_size(p_subject, p_as_of);
BEGIN
    IF v_size >= 1000 THEN
        EXECUTE
            'SELECT array_agg(x.id), array_agg(t.l), array_agg(length(x.content_tsv)::float8) '
            'FROM unnest($1) t(l) JOIN memories x ON x.content_tsv @@ quote_literal(t.l)::tsquery '
            'WHERE x.tenant_id = current_setting(''mnemo.tenant'', true) AND x.subject_id = $2 '
            'AND x.recorded_at <= $3 AND (x.superseded_at IS NULL OR x.superseded_at > $3) '
            'AND x.status <> ''tombstoned'' AND (x.asserted_valid_to IS NULL OR x.asserted_valid_to > $3) '
            'AND $4 IS NOT NULL'
        INTO v_id, v_term, v_dl USING p_terms, p_subject, p_as_of, p_query;
    ELSE
        SELECT array_agg(x.id), array_agg(t.l), array_agg(length(x.content_tsv)::float8) INTO v_id, v_term, v_dl
        FROM unnest(p_terms) t(l) JOIN memories x ON x.content_tsv @@ quote_literal(t.l)::tsquery
        WHERE x.tenant_id = current_setting('mnemo.tenant', true) AND x.subject_id = p_subject
          AND x.recorded_at <= p_as_of AND (x.superseded_at IS NULL OR x.superseded_at > p_as_of)
          AND x.status <> 'tombstoned' AND (x.asserted_valid_to IS NULL OR x.asserted_valid_to > p_as_of)
          AND p_query IS NOT NULL;
    END IF;
    RETURN QUERY SELECT r.id, r.score FROM mnemo_bm25_rank(v_id, v_term, v_dl, v_size, p_limit) r;
END
$$;
