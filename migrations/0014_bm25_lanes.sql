-- mnemo schema, part 14: BM25 full-text lanes.
--
-- `ts_rank_cd` scores a document by how many query words it holds and how close together they
-- are, whatever the words: a turn that says "Caroline" and "going" outranked the one turn that
-- says "adoption". BM25 weights each word by its rarity among the subject's items (inverse
-- document frequency) and saturates repeated words, with the usual k1 = 1.2, b = 0.75.
--
-- Everything is counted as of `p_as_of` from the rows the query matches, so a call replayed as
-- of an earlier instant counts the same: the document frequency of a word is the number of
-- matched rows holding it (every row holding a query word is matched), the mean length is that
-- of the matched rows, and the collection size is the subject's episode count then (its latest
-- seq; memories derive from episodes, so the same size serves both). The matched set stays
-- bounded because the caller leaves common words (1,000+ items, `subject_terms`) out of the
-- query. Like the lanes of migration 0012 these run as their owner, so the GIN index is usable
-- under row-level security, and apply the tenant filter themselves.

CREATE FUNCTION mnemo_episode_bm25(p_subject text, p_as_of timestamptz, p_query tsquery, p_terms text[],
                                   p_limit integer)
RETURNS TABLE (id uuid, score float8)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT ROWS 100 AS $$
    WITH m AS MATERIALIZED (
        SELECT e.id, e.search_tsv AS tsv FROM episodes e
        WHERE e.tenant_id = current_setting('mnemo.tenant', true) AND e.subject_id = p_subject
          AND e.created_at <= p_as_of AND e.search_tsv @@ p_query
    ),
    tf AS (
        SELECT m.id, t.lexeme, GREATEST(1, COALESCE(cardinality(t.positions), 1))::float8 AS tf,
               length(m.tsv)::float8 AS dl
        FROM m, unnest(m.tsv) t WHERE t.lexeme = ANY (p_terms)
    ),
    df AS (SELECT lexeme, count(*)::float8 AS df FROM tf GROUP BY lexeme),
    k AS (
        SELECT GREATEST(COALESCE((SELECT e.seq FROM episodes e
                          WHERE e.tenant_id = current_setting('mnemo.tenant', true) AND e.subject_id = p_subject
                            AND e.created_at <= p_as_of ORDER BY e.seq DESC LIMIT 1), 0),
                        (SELECT count(*) FROM m))::float8 AS n,
               GREATEST((SELECT avg(length(tsv)) FROM m), 1)::float8 AS avgdl
    )
    SELECT tf.id,
           round(sum(ln(1 + (k.n - df.df + 0.5) / (df.df + 0.5))
                     * tf.tf * 2.2 / (tf.tf + 1.2 * (0.25 + 0.75 * tf.dl / k.avgdl)))::numeric, 9)::float8
    FROM tf JOIN df USING (lexeme), k
    GROUP BY tf.id ORDER BY 2 DESC, tf.id LIMIT p_limit
$$;

CREATE FUNCTION mnemo_memory_bm25(p_subject text, p_as_of timestamptz, p_query tsquery, p_terms text[],
                                  p_limit integer)
RETURNS TABLE (id uuid, score float8)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT ROWS 100 AS $$
    WITH m AS MATERIALIZED (
        SELECT x.id, x.content_tsv AS tsv FROM memories x
        WHERE x.tenant_id = current_setting('mnemo.tenant', true) AND x.subject_id = p_subject
          AND x.recorded_at <= p_as_of AND (x.superseded_at IS NULL OR x.superseded_at > p_as_of)
          AND x.status <> 'tombstoned' AND (x.asserted_valid_to IS NULL OR x.asserted_valid_to > p_as_of)
          AND x.content_tsv @@ p_query
    ),
    tf AS (
        SELECT m.id, t.lexeme, GREATEST(1, COALESCE(cardinality(t.positions), 1))::float8 AS tf,
               length(m.tsv)::float8 AS dl
        FROM m, unnest(m.tsv) t WHERE t.lexeme = ANY (p_terms)
    ),
    df AS (SELECT lexeme, count(*)::float8 AS df FROM tf GROUP BY lexeme),
    k AS (
        SELECT GREATEST(COALESCE((SELECT e.seq FROM episodes e
                          WHERE e.tenant_id = current_setting('mnemo.tenant', true) AND e.subject_id = p_subject
                            AND e.created_at <= p_as_of ORDER BY e.seq DESC LIMIT 1), 0),
                        (SELECT count(*) FROM m))::float8 AS n,
               GREATEST((SELECT avg(length(tsv)) FROM m), 1)::float8 AS avgdl
    )
    SELECT tf.id,
           round(sum(ln(1 + (k.n - df.df + 0.5) / (df.df + 0.5))
                     * tf.tf * 2.2 / (tf.tf + 1.2 * (0.25 + 0.75 * tf.dl / k.avgdl)))::numeric, 9)::float8
    FROM tf JOIN df USING (lexeme), k
    GROUP BY tf.id ORDER BY 2 DESC, tf.id LIMIT p_limit
$$;

REVOKE ALL ON FUNCTION mnemo_episode_bm25(text, timestamptz, tsquery, text[], integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION mnemo_memory_bm25(text, timestamptz, tsquery, text[], integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mnemo_episode_bm25(text, timestamptz, tsquery, text[], integer) TO mnemo_app;
GRANT EXECUTE ON FUNCTION mnemo_memory_bm25(text, timestamptz, tsquery, text[], integer) TO mnemo_app;
