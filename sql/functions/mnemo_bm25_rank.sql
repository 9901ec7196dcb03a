-- BM25 (k1 1.2, b 0.75) over the hits of a lexical lane: each item's id, the task terms it holds
-- and its length in lexemes; the best p_limit by score rounded to nine decimals, then id. Called by
-- mnemo_memory_bm25 and mnemo_episode_bm25.
CREATE OR REPLACE FUNCTION public.mnemo_bm25_rank(p_id uuid[], p_term text[], p_dl double precision[], p_n double precision, p_limit integer)
 RETURNS TABLE(id uuid, score double precision)
 LANGUAGE plpgsql
 IMMUTABLE ROWS 100
AS $function$
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
$function$
;
