-- mnemo schema, part 34: the full-text indexes are keyed by the subject, tenant included, as one
-- value.
--
-- Since migration 0012 the GIN indexes were on (tenant_id, subject_id, tsvector): three
-- separate entries, so a probe for one term of one subject intersected three posting lists, one
-- of them every row of the tenant. In a tenant of 2.4M episodes (the benchmark's database, a
-- 66k-turn subject among 1,000 others) that intersection read 344 index pages for five terms
-- where 93 suffice, and the episode lane of a 100k-memory subject took 1.83 ms a call instead of
-- 1.16 (20 tasks, five runs each; identical rows). A write also added every row to the tenant's
-- posting tree, the largest of the index.
--
-- The indexes are now on (mnemo_subject_key(tenant_id, subject_id), tsvector): one entry whose
-- posting list holds exactly the subject's rows. The key is injective (the tenant's length
-- comes first, so no two (tenant, subject) pairs share it): comparing it selects the same rows
-- as comparing tenant_id and subject_id, so the lanes return the same rows and scores. The
-- probes compare the key in place of those two. Not beside them: the planner would take the
-- three for independent conditions and estimate a 60,500-turn subject at 1,395 rows, then scan
-- all of its rows once per term instead of probing the index (190 ms a call, seen while
-- testing). The Statewave search endpoint compares the key too.
--
-- And the probes are planned once again, whatever the subject's size. Migration 0028 planned
-- them on every call from 1,000 episodes (dynamic SQL, ~0.4 ms a lane with its parsing),
-- because a generic plan estimated a large subject at the table's mean size and scanned it
-- through the (tenant, subject, ...) btrees. With only the key to compare, no btree applies:
-- the full-text index is the one path a plan of any subject can take.

CREATE FUNCTION mnemo_subject_key(p_tenant text, p_subject text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT length(p_tenant)::text || ':' || p_tenant || p_subject
$$;

CREATE INDEX episodes_subject_key_tsv ON episodes USING gin (mnemo_subject_key(tenant_id, subject_id), search_tsv)
    WITH (gin_pending_list_limit = 512);
DROP INDEX episodes_subject_tsv;
CREATE INDEX memories_subject_key_tsv ON memories USING gin (mnemo_subject_key(tenant_id, subject_id), content_tsv)
    WITH (gin_pending_list_limit = 512);
DROP INDEX memories_subject_tsv;

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
    WHERE mnemo_subject_key(e.tenant_id, e.subject_id) = mnemo_subject_key(current_setting('mnemo.tenant', true), p_subject)
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
    WHERE mnemo_subject_key(x.tenant_id, x.subject_id) = mnemo_subject_key(current_setting('mnemo.tenant', true), p_subject)
      AND x.recorded_at <= p_as_of AND (x.superseded_at IS NULL OR x.superseded_at > p_as_of)
      AND x.status <> 'tombstoned' AND (x.asserted_valid_to IS NULL OR x.asserted_valid_to > p_as_of)
      AND p_query IS NOT NULL;
    RETURN QUERY SELECT r.id, r.score
    FROM mnemo_bm25_rank(v_id, v_term, v_dl, mnemo_subject_size(p_subject, p_as_of), p_limit) r;
END
$$;
