-- mnemo schema, part 15: BM25 lanes that read only what they score, with plans made once.
--
-- The lanes of migration 0014 copied every matched row's tsvector into a CTE and unnested it
-- whole (positions arrays built for every lexeme) to find the few query terms: 10-12 ms for
-- 543 matched rows of a 663-turn conversation, the largest single cost of a context call. They
-- were also SQL functions with a SET clause, which Postgres never inlines and plans again on
-- every call.
--
-- Here each query term probes the subject's GIN index on its own (`tsv @@ term`), so a row is
-- visited once per term it holds and its tsvector is never unnested; the term frequency counts
-- as 1 (conversation turns and facts are short: 3.8% of the term occurrences of a long
-- conversation repeat within their item, and BM25 saturates repeats anyway). Everything else is
-- as before: the document frequency of a term is the number of matched rows holding it, the mean
-- length that of the matched rows, the collection size the subject's episode count as of
-- `p_as_of`, k1 = 1.2, b = 0.75, scores rounded to 9 decimals, ties by id. PL/pgSQL keeps each
-- statement's plan for the session (a generic plan once it is no worse), so calls stop paying
-- for planning. The two lanes differ only in the rows they match; `mnemo_bm25_rank` scores them.

-- Scores matched rows by BM25: one (row, term, row length) triple per query term a row holds,
-- and the collection size. Returns the best `p_limit`, ties by id.
CREATE FUNCTION mnemo_bm25_rank(p_id uuid[], p_term text[], p_dl float8[], p_n float8, p_limit integer)
RETURNS TABLE (id uuid, score float8)
LANGUAGE plpgsql IMMUTABLE ROWS 100 AS $$
BEGIN
    RETURN QUERY
    WITH hit AS (SELECT * FROM unnest(p_id, p_term, p_dl) h(id, l, dl)),
    df AS (SELECT hit.l, count(*)::float8 AS df FROM hit GROUP BY hit.l),
    d AS (SELECT DISTINCT ON (hit.id) hit.id, hit.dl FROM hit ORDER BY hit.id),
    k AS (SELECT GREATEST(p_n, (SELECT count(*) FROM d))::float8 AS n,
                 GREATEST((SELECT avg(d.dl) FROM d), 1)::float8 AS avgdl)
    SELECT hit.id,
           round(sum(ln(1 + (k.n - df.df + 0.5) / (df.df + 0.5))
                     * 2.2 / (1 + 1.2 * (0.25 + 0.75 * hit.dl / k.avgdl)))::numeric, 9)::float8
    FROM hit JOIN df USING (l), k
    GROUP BY hit.id ORDER BY 2 DESC, hit.id LIMIT p_limit;
END
$$;

-- The subject's episode count as of `p_as_of` (its latest seq then): the collection size of
-- both lanes (memories derive from episodes).
CREATE FUNCTION mnemo_subject_size(p_subject text, p_as_of timestamptz) RETURNS float8
LANGUAGE sql STABLE AS $$
    SELECT COALESCE((SELECT e.seq FROM episodes e
                     WHERE e.tenant_id = current_setting('mnemo.tenant', true) AND e.subject_id = p_subject
                       AND e.created_at <= p_as_of ORDER BY e.seq DESC LIMIT 1), 0)::float8
$$;

CREATE OR REPLACE FUNCTION mnemo_episode_bm25(p_subject text, p_as_of timestamptz, p_query tsquery, p_terms text[],
                                              p_limit integer)
RETURNS TABLE (id uuid, score float8)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT ROWS 100 AS $$
DECLARE
    v_id uuid[];
    v_term text[];
    v_dl float8[];
BEGIN
    SELECT array_agg(e.id), array_agg(t.l), array_agg(length(e.search_tsv)::float8) INTO v_id, v_term, v_dl
    FROM unnest(p_terms) t(l) JOIN episodes e ON e.search_tsv @@ quote_literal(t.l)::tsquery
    WHERE e.tenant_id = current_setting('mnemo.tenant', true) AND e.subject_id = p_subject
      AND e.created_at <= p_as_of AND p_query IS NOT NULL;
    RETURN QUERY SELECT r.id, r.score
    FROM mnemo_bm25_rank(v_id, v_term, v_dl, mnemo_subject_size(p_subject, p_as_of), p_limit) r;
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
BEGIN
    SELECT array_agg(x.id), array_agg(t.l), array_agg(length(x.content_tsv)::float8) INTO v_id, v_term, v_dl
    FROM unnest(p_terms) t(l) JOIN memories x ON x.content_tsv @@ quote_literal(t.l)::tsquery
    WHERE x.tenant_id = current_setting('mnemo.tenant', true) AND x.subject_id = p_subject
      AND x.recorded_at <= p_as_of AND (x.superseded_at IS NULL OR x.superseded_at > p_as_of)
      AND x.status <> 'tombstoned' AND (x.asserted_valid_to IS NULL OR x.asserted_valid_to > p_as_of)
      AND p_query IS NOT NULL;
    RETURN QUERY SELECT r.id, r.score
    FROM mnemo_bm25_rank(v_id, v_term, v_dl, mnemo_subject_size(p_subject, p_as_of), p_limit) r;
END
$$;

REVOKE ALL ON FUNCTION mnemo_bm25_rank(uuid[], text[], float8[], float8, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION mnemo_subject_size(text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mnemo_bm25_rank(uuid[], text[], float8[], float8, integer) TO mnemo_app;
GRANT EXECUTE ON FUNCTION mnemo_subject_size(text, timestamptz) TO mnemo_app;
