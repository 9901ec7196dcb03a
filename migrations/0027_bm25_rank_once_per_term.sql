-- mnemo schema, part 27: the BM25 ranking of a lexical lane does per term and per candidate
-- only the work that needs them.
--
-- Same inputs, same formula, same rows as migration 0015's `mnemo_bm25_rank` (byte-identical
-- ids and scores; checked with md5 over every row `mnemo_context` returns for 40 tasks on
-- subjects of 50 episodes, 6,050 episodes and 100k memories). Three changes:
-- - each term's IDF (a logarithm) is computed once per term, not once per hit: the same float
--   operations on the same values, so the same bits;
-- - the collection's size and mean length come from a hashed grouping of the hits by item
--   instead of a sort: the lengths are whole numbers, so their float sum is exact in any order;
-- - the score is rounded to 9 decimals (a numeric conversion, the costliest per-item step) only
--   for the items whose unrounded score is within 2e-9 of the lane's last place: rounding is
--   monotone and two values more than 1e-9 apart never round to the same 9-decimal value, so an
--   item further below cannot reach the lane, whichever way ties are broken.
-- With no more hits than the lane holds, every item is rounded (nothing to cut): the cut would
-- only add its own statement's cost. A lane of 2,660 hits over 1,440 items: 3.0-3.5 -> 2.2-2.4
-- ms; of 30 hits: 70 us either way.

CREATE OR REPLACE FUNCTION mnemo_bm25_rank(p_id uuid[], p_term text[], p_dl float8[], p_n float8, p_limit integer)
RETURNS TABLE (id uuid, score float8)
LANGUAGE plpgsql IMMUTABLE ROWS 100 AS $$
BEGIN
    IF cardinality(p_id) <= p_limit THEN
        RETURN QUERY
        WITH hit AS (SELECT * FROM unnest(p_id, p_term, p_dl) h(id, l, dl)),
        k AS (SELECT GREATEST(p_n, count(*))::float8 AS n, GREATEST(avg(d.dl), 1)::float8 AS avgdl
              FROM (SELECT hit.id, min(hit.dl) AS dl FROM hit GROUP BY hit.id) d),
        idf AS (SELECT c.l, ln(1 + (k.n - c.df + 0.5) / (c.df + 0.5)) AS w
                FROM (SELECT hit.l, count(*)::float8 AS df FROM hit GROUP BY hit.l) c, k)
        SELECT hit.id, round(sum(idf.w * 2.2 / (1 + 1.2 * (0.25 + 0.75 * hit.dl / k.avgdl)))::numeric, 9)::float8
        FROM hit JOIN idf USING (l), k GROUP BY hit.id ORDER BY 2 DESC, hit.id LIMIT p_limit;
        RETURN;
    END IF;
    RETURN QUERY
    WITH hit AS (SELECT * FROM unnest(p_id, p_term, p_dl) h(id, l, dl)),
    k AS (SELECT GREATEST(p_n, count(*))::float8 AS n, GREATEST(avg(d.dl), 1)::float8 AS avgdl
          FROM (SELECT hit.id, min(hit.dl) AS dl FROM hit GROUP BY hit.id) d),
    idf AS (SELECT c.l, ln(1 + (k.n - c.df + 0.5) / (c.df + 0.5)) AS w
            FROM (SELECT hit.l, count(*)::float8 AS df FROM hit GROUP BY hit.l) c, k),
    s AS MATERIALIZED (
        SELECT hit.id, sum(idf.w * 2.2 / (1 + 1.2 * (0.25 + 0.75 * hit.dl / k.avgdl))) AS raw
        FROM hit JOIN idf USING (l), k GROUP BY hit.id),
    cut AS (SELECT s.raw FROM s ORDER BY s.raw DESC LIMIT 1 OFFSET GREATEST(p_limit, 1) - 1)
    SELECT s.id, round(s.raw::numeric, 9)::float8
    FROM s WHERE s.raw >= COALESCE((SELECT cut.raw FROM cut), '-Infinity'::float8) - 2e-9
    ORDER BY 2 DESC, s.id LIMIT p_limit;
END
$$;
