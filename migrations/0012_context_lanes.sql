-- mnemo schema, part 12: context retrieval that stays bounded as a subject grows.
--
-- Under row-level security the planner may not evaluate a non-leakproof operator such as `@@`
-- or `&&` before the policy's qual, so it cannot use them as index conditions: as mnemo_app the
-- full-text lanes read every visible row of the subject (279 ms at 100k memories against 7 ms
-- as the owner). The functions below run as their owner (not subject to RLS) and apply the
-- tenant filter themselves from the same transaction-local setting the policies read, so they
-- return nothing a tenant's own query could not see. They return ids and flags only.

-- Per-subject document frequency of each lexeme, counted when compile stores memories and
-- consumes episodes. `common_since` is the instant the count reached the common-term threshold
-- (1000 items, set by the server): from then on the term is left out of the subject's full-text
-- queries, because a word in a thousand of one subject's items says little about which of them
-- matter and ranking all of them is what made the lane grow with the subject. The instant makes
-- the rule bitemporal: a context call as of an earlier time keeps the term.
CREATE TABLE subject_terms (
    tenant_id     text NOT NULL,
    subject_id    text NOT NULL,
    source        text NOT NULL CHECK (source IN ('memory', 'episode')),
    lexeme        text NOT NULL,
    df            bigint NOT NULL CHECK (df > 0),
    common_since  timestamptz,
    PRIMARY KEY (tenant_id, subject_id, source, lexeme)
);

INSERT INTO subject_terms (tenant_id, subject_id, source, lexeme, df, common_since)
SELECT m.tenant_id, m.subject_id, 'memory', t.lexeme, count(*),
       CASE WHEN count(*) >= 1000 THEN (array_agg(m.recorded_at ORDER BY m.recorded_at))[1000] END
FROM memories m, unnest(m.content_tsv) t
GROUP BY m.tenant_id, m.subject_id, t.lexeme;

INSERT INTO subject_terms (tenant_id, subject_id, source, lexeme, df, common_since)
SELECT e.tenant_id, e.subject_id, 'episode', t.lexeme, count(*),
       CASE WHEN count(*) >= 1000 THEN (array_agg(e.created_at ORDER BY e.created_at))[1000] END
FROM episodes e
JOIN compile_cursors c ON c.tenant_id = e.tenant_id AND c.subject_id = e.subject_id AND e.seq <= c.compiled_seq,
     unnest(e.search_tsv) t
GROUP BY e.tenant_id, e.subject_id, t.lexeme;

-- The full-text indexes carry the tenant and subject (btree_gin, a contrib extension marked
-- trusted): a word common in one subject made every other subject's lane visit those rows to
-- throw them away (a 1k subject beside a 100k one: 10,844 of 10,920 index hits discarded,
-- 196 ms); with the keys in the index, the lookup returns only the subject's rows.
-- Their pending lists are kept small (512 kB, against the 4 MB default): inserts still go in
-- batches, and a call never scans more than that before autovacuum or the next overflow merges it.
CREATE EXTENSION IF NOT EXISTS btree_gin;
DROP INDEX memories_tsv;
CREATE INDEX memories_subject_tsv ON memories USING gin (tenant_id, subject_id, content_tsv) WITH (gin_pending_list_limit = 512);
DROP INDEX episodes_search_tsv;
CREATE INDEX episodes_subject_tsv ON episodes USING gin (tenant_id, subject_id, search_tsv) WITH (gin_pending_list_limit = 512);

CREATE FUNCTION mnemo_memory_lexical(p_subject text, p_as_of timestamptz, p_query tsquery, p_limit integer)
RETURNS TABLE (id uuid)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT ROWS 100 AS $$
    SELECT m.id FROM memories m
    WHERE m.tenant_id = current_setting('mnemo.tenant', true) AND m.subject_id = p_subject
      AND m.recorded_at <= p_as_of AND (m.superseded_at IS NULL OR m.superseded_at > p_as_of)
      AND m.status <> 'tombstoned' AND (m.asserted_valid_to IS NULL OR m.asserted_valid_to > p_as_of)
      AND m.content_tsv @@ p_query
    ORDER BY ts_rank_cd(m.content_tsv, p_query) DESC, m.id
    LIMIT p_limit
$$;

CREATE FUNCTION mnemo_episode_lexical(p_subject text, p_as_of timestamptz, p_query tsquery, p_limit integer)
RETURNS TABLE (id uuid)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT ROWS 100 AS $$
    SELECT e.id FROM episodes e
    WHERE e.tenant_id = current_setting('mnemo.tenant', true) AND e.subject_id = p_subject
      AND e.created_at <= p_as_of AND e.search_tsv @@ p_query
    ORDER BY ts_rank_cd(e.search_tsv, p_query) DESC, e.id
    LIMIT p_limit
$$;

-- Which of the given episodes back a memory, and whether that backing still counts as of
-- `p_as_of`: `visible` when any memory compiled from the episode is visible then, `contradicted`
-- when any was superseded by then through a claim contradiction (the episode asserted a value
-- that is no longer current). Asked for a bounded list of candidate episodes through the GIN
-- index on `source_episode_ids`; episode ids are unique, so the index alone finds the subject's
-- rows and the tenant and subject are checked on those few (materialised first, so the planner
-- does not intersect the GIN bitmap with the whole subject's btree range). fastupdate is off:
-- a pending list would be scanned by every call.
CREATE INDEX memories_source_episodes ON memories USING gin (source_episode_ids) WITH (fastupdate = off);

CREATE FUNCTION mnemo_episode_backing(p_subject text, p_as_of timestamptz, p_episodes uuid[])
RETURNS TABLE (episode_id uuid, visible boolean, contradicted boolean)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT ROWS 200 AS $$
    WITH hit AS MATERIALIZED (
        SELECT m.tenant_id, m.subject_id, m.id, m.recorded_at, m.superseded_at, m.status, m.asserted_valid_to,
               m.source_episode_ids
        FROM memories m WHERE m.source_episode_ids && p_episodes
    )
    SELECT e,
           bool_or((h.superseded_at IS NULL OR h.superseded_at > p_as_of) AND h.status <> 'tombstoned'
                   AND (h.asserted_valid_to IS NULL OR h.asserted_valid_to > p_as_of)),
           bool_or(h.superseded_at IS NOT NULL AND h.superseded_at <= p_as_of AND EXISTS (
               SELECT 1 FROM supersession_records r
               WHERE r.tenant_id = h.tenant_id AND r.superseded_memory_id = h.id
                 AND r.subject_id = h.subject_id AND r.rule = 'claim_contradiction'))
    FROM hit h, unnest(h.source_episode_ids) e
    WHERE h.tenant_id = current_setting('mnemo.tenant', true) AND h.subject_id = p_subject
      AND h.recorded_at <= p_as_of AND e = ANY (p_episodes)
    GROUP BY e
$$;

-- The claims and recent-facts lanes read current rows through partial indexes of the rows not
-- superseded (superseded values accumulate: a cloned 100k subject had 2110 single-valued claim
-- rows, 2 of them current), and the rows superseded after `as_of` through their own index
-- (nothing, for a call about now).
DROP INDEX memories_subject_claims;
CREATE INDEX memories_subject_current_claims ON memories (tenant_id, subject_id)
    WHERE claim_single AND superseded_at IS NULL;
CREATE INDEX memories_subject_current_facts ON memories (tenant_id, subject_id, valid_from)
    WHERE kind IN ('profile_fact', 'procedure') AND superseded_at IS NULL;
CREATE INDEX memories_subject_superseded ON memories (tenant_id, subject_id, superseded_at)
    WHERE superseded_at IS NOT NULL;

REVOKE ALL ON FUNCTION mnemo_memory_lexical(text, timestamptz, tsquery, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION mnemo_episode_lexical(text, timestamptz, tsquery, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION mnemo_episode_backing(text, timestamptz, uuid[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mnemo_memory_lexical(text, timestamptz, tsquery, integer) TO mnemo_app;
GRANT EXECUTE ON FUNCTION mnemo_episode_lexical(text, timestamptz, tsquery, integer) TO mnemo_app;
GRANT EXECUTE ON FUNCTION mnemo_episode_backing(text, timestamptz, uuid[]) TO mnemo_app;

SELECT mnemo_apply_tenant_policies();
