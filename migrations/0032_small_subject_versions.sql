-- mnemo schema, part 32: a server keeps a small subject's rows in memory between context calls.
--
-- Migration 0031 made a small subject's context call one read of its rows, the lanes applied in
-- process. Most of what remained was shipping and decoding those same rows on every call,
-- though they rarely change between two calls. Now the server keeps the decoded rows of recent
-- small subjects (`services::context::subjects`) under a fingerprint of their state, and sends
-- that fingerprint with the call; the rows come back only when the subject's fingerprint is
-- another one. What depends on the call (the task's lexemes, the cosine distances to the task
-- vector, the snapshot, the settings version) still comes from Postgres on every call.
--
-- The fingerprint: the subject's memory version (below), its number of episodes and the id of
-- its latest one. Episodes are append-only and deleted only all together by an erasure, so a
-- new one changes the count and an erasure followed by as many new ones changes the latest id.
-- Memories change in place (supersession, labels, tombstones, re-embedding), so statement
-- triggers on `memories` and `supersession_records` (a claim contradiction's record) write a
-- new version from one sequence in the same transaction as the change: versions only grow and
-- are never handed out twice, so a copy can never match a later state by accident
-- (`tenant_versions`, migration 0017, works the same way). An erasure deletes the version row
-- with the subject's other rows, after the rows whose deletion wrote it.

CREATE SEQUENCE subject_version_seq;

CREATE TABLE subject_versions (
    tenant_id   text NOT NULL,
    subject_id  text NOT NULL,
    version     bigint NOT NULL,
    PRIMARY KEY (tenant_id, subject_id)
);

-- One statement per changing statement (transition tables), whatever the number of rows. The
-- writer runs as mnemo_app under the tenant of the rows it changes, so row-level security
-- admits the version row too.
CREATE FUNCTION mnemo_subject_rows_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO subject_versions (tenant_id, subject_id, version)
    SELECT c.tenant_id, c.subject_id, nextval('subject_version_seq')
    FROM (SELECT DISTINCT tenant_id, subject_id FROM changed) c
    ORDER BY c.tenant_id, c.subject_id
    ON CONFLICT (tenant_id, subject_id) DO UPDATE SET version = EXCLUDED.version;
    RETURN NULL;
END $$;

CREATE TRIGGER memories_inserted_version AFTER INSERT ON memories
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION mnemo_subject_rows_changed();
CREATE TRIGGER memories_updated_version AFTER UPDATE ON memories
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION mnemo_subject_rows_changed();
CREATE TRIGGER memories_deleted_version AFTER DELETE ON memories
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION mnemo_subject_rows_changed();
CREATE TRIGGER supersessions_inserted_version AFTER INSERT ON supersession_records
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION mnemo_subject_rows_changed();
CREATE TRIGGER supersessions_updated_version AFTER UPDATE ON supersession_records
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION mnemo_subject_rows_changed();
CREATE TRIGGER supersessions_deleted_version AFTER DELETE ON supersession_records
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION mnemo_subject_rows_changed();

-- Subjects that already hold memories start with a version of their own.
INSERT INTO subject_versions (tenant_id, subject_id, version)
SELECT s.tenant_id, s.subject_id, nextval('subject_version_seq')
FROM (SELECT DISTINCT tenant_id, subject_id FROM memories) s
ORDER BY s.tenant_id, s.subject_id;

GRANT USAGE ON SEQUENCE subject_version_seq TO mnemo_app;
SELECT mnemo_apply_tenant_policies();

-- Small now means small today, whatever the call's instant: the rows a server keeps are the
-- subject's current rows, and a past instant's call on a subject that has since grown large
-- takes `mnemo_context` (the same rows either way; only the cost differs).
CREATE OR REPLACE FUNCTION mnemo_context_is_small(p_tenant text, p_subject text, p_as_of timestamptz, p_vector text,
                                                  p_approx_from bigint, p_small integer[])
RETURNS boolean
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_size bigint;
BEGIN
    PERFORM set_config('mnemo.tenant', p_tenant, true);
    v_size := COALESCE((SELECT e.seq FROM episodes e WHERE e.tenant_id = p_tenant AND e.subject_id = p_subject
                          ORDER BY e.seq DESC LIMIT 1), 0);
    IF v_size > p_small[1] OR (p_vector IS NOT NULL AND (p_approx_from <= 0 OR v_size >= p_approx_from)) THEN
        RETURN false;
    END IF;
    RETURN (SELECT count(*) FROM (SELECT 1 FROM memories m WHERE m.tenant_id = p_tenant AND m.subject_id = p_subject
                                    LIMIT p_small[2] + 1) c) <= p_small[2];
END
$$;

-- A small subject's call. `p_known` is the fingerprint of the copy the server holds (NULL: none).
-- Parts: 0 the settings version (in `seq`), 4 the session's snapshot as of the call (as in
-- `mnemo_context`), 12 the task's lexemes for one source (`kind` = 'memory' or 'episode', in
-- `lexemes`), 13 the cosine distance (`dist`) of one row's embedding of the task vector's model
-- (`kind` = 'memory' or 'episode'; for an episode, an embedding recorded by the call's instant),
-- 14 the subject's fingerprint (in `kind`) with what follows of its rows, whatever the call's
-- instant (the server applies the instant to them):
-- - `content` 'all': every memory, as part 10 (with `recorded_at`, its distinct lexemes, in
--   `contradicted` whether a claim contradiction's record names it as the superseded one, and in
--   `seq` its row version, `xmin`); 'kept': none, the copy's memory version is the subject's;
--   'changed': the copy's memory version is not the subject's, so part 15 lists every memory
--   (`source_episode_ids`) with its row version and contradiction flag (`lexemes`, as
--   'xmin:t' or 'xmin:f'), and part 10 sends those whose row version is above `p_known_xmin`
--   (the highest of the copy's). The server takes the others from its copy when their entry is
--   the copy's, and otherwise asks again with no fingerprint: transaction ids are not given out
--   in commit order, so a change can carry a lower one.
-- - `summary` 'all': every episode, as part 11 (with its distinct lexemes); 'after': only those
--   after the copy's latest episode, which is still there with as many episodes up to it as the
--   copy holds (episodes are append-only, so the copy's are then exactly those); 'kept': none.
CREATE FUNCTION mnemo_context_small(
    p_tenant text, p_subject text, p_as_of timestamptz, p_words text, p_vector text, p_model text,
    p_session text, p_known text, p_known_xmin bigint)
RETURNS TABLE (
    part smallint, id uuid, kind text, content text, summary text, confidence float8,
    valid_from timestamptz, valid_to timestamptz, asserted_valid_to timestamptz, superseded_at timestamptz,
    source_episode_ids uuid[], metadata jsonb, status text, sensitivity_labels text[], suggested_labels text[],
    created_at timestamptz, updated_at timestamptz, claim_single boolean,
    source text, payload jsonb, provenance jsonb, session_id text, occurred_at timestamptz, seq bigint,
    lex float8, sem float8, visible boolean, contradicted boolean, "position" integer, prev_id uuid,
    lexemes text[], dist float8, recorded_at timestamptz)
-- STABLE: every statement below reads the calling statement's snapshot, so the fingerprint and
-- the rows sent with it are of one state of the subject (a VOLATILE function takes a new
-- snapshot per statement, and a change committed in between would file newer rows under an
-- older fingerprint, which an erasure could bring back).
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
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
    RETURN QUERY SELECT 0::smallint, NULL::uuid, NULL::text, NULL::text, NULL::text, NULL::float8,
        NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::uuid[], NULL::jsonb,
        NULL::text, NULL::text[], NULL::text[], NULL::timestamptz, NULL::timestamptz, NULL::boolean,
        NULL::text, NULL::jsonb, NULL::jsonb, NULL::text, NULL::timestamptz,
        COALESCE((SELECT t.version FROM tenant_versions t WHERE t.tenant_id = p_tenant), 0),
        NULL::float8, NULL::float8, NULL::boolean, NULL::boolean, NULL::integer, NULL::uuid,
        NULL::text[], NULL::float8, NULL::timestamptz;

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
            NULL::text[], NULL::float8, NULL::timestamptz;
    END IF;

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
    RETURN QUERY
    SELECT 12::smallint, NULL::uuid, s.source, NULL::text, NULL::text, NULL::float8,
        NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::uuid[], NULL::jsonb,
        NULL::text, NULL::text[], NULL::text[], NULL::timestamptz, NULL::timestamptz, NULL::boolean,
        NULL::text, NULL::jsonb, NULL::jsonb, NULL::text, NULL::timestamptz, NULL::bigint,
        NULL::float8, NULL::float8, NULL::boolean, NULL::boolean, NULL::integer, NULL::uuid,
        s.terms, NULL::float8, NULL::timestamptz
    FROM (VALUES ('memory', v_mterms), ('episode', v_eterms)) s(source, terms);

    IF p_vector IS NOT NULL THEN
        v_vec := p_vector::vector;
        RETURN QUERY
        SELECT 13::smallint, m.id, 'memory'::text, NULL::text, NULL::text, NULL::float8,
            NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::uuid[], NULL::jsonb,
            NULL::text, NULL::text[], NULL::text[], NULL::timestamptz, NULL::timestamptz, NULL::boolean,
            NULL::text, NULL::jsonb, NULL::jsonb, NULL::text, NULL::timestamptz, NULL::bigint,
            NULL::float8, NULL::float8, NULL::boolean, NULL::boolean, NULL::integer, NULL::uuid,
            NULL::text[], (m.embedding <=> v_vec)::float8, NULL::timestamptz
        FROM memories m
        WHERE m.tenant_id = p_tenant AND m.subject_id = p_subject AND m.embedding_model = p_model;
        RETURN QUERY
        SELECT 13::smallint, x.episode_id, 'episode'::text, NULL::text, NULL::text, NULL::float8,
            NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::uuid[], NULL::jsonb,
            NULL::text, NULL::text[], NULL::text[], NULL::timestamptz, NULL::timestamptz, NULL::boolean,
            NULL::text, NULL::jsonb, NULL::jsonb, NULL::text, NULL::timestamptz, NULL::bigint,
            NULL::float8, NULL::float8, NULL::boolean, NULL::boolean, NULL::integer, NULL::uuid,
            NULL::text[], (x.embedding <=> v_vec)::float8, NULL::timestamptz
        FROM episode_embeddings x
        WHERE x.tenant_id = p_tenant AND x.subject_id = p_subject AND x.embedding_model = p_model
          AND x.created_at <= p_as_of;
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
    RETURN QUERY SELECT 14::smallint, NULL::uuid, v_print, v_memories, v_episodes, NULL::float8,
        NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::uuid[], NULL::jsonb,
        NULL::text, NULL::text[], NULL::text[], NULL::timestamptz, NULL::timestamptz, NULL::boolean,
        NULL::text, NULL::jsonb, NULL::jsonb, NULL::text, NULL::timestamptz, NULL::bigint,
        NULL::float8, NULL::float8, NULL::boolean, NULL::boolean, NULL::integer, NULL::uuid,
        NULL::text[], NULL::float8, NULL::timestamptz;
    IF v_memories = 'changed' THEN
        RETURN QUERY SELECT 15::smallint, NULL::uuid, NULL::text, NULL::text, NULL::text, NULL::float8,
            NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, l.ids, NULL::jsonb,
            NULL::text, NULL::text[], NULL::text[], NULL::timestamptz, NULL::timestamptz, NULL::boolean,
            NULL::text, NULL::jsonb, NULL::jsonb, NULL::text, NULL::timestamptz, NULL::bigint,
            NULL::float8, NULL::float8, NULL::boolean, NULL::boolean, NULL::integer, NULL::uuid,
            l.versions, NULL::float8, NULL::timestamptz
        FROM (SELECT COALESCE(array_agg(m.id ORDER BY m.id), '{}') AS ids,
                     COALESCE(array_agg(m.xmin::text || CASE WHEN EXISTS (
                         SELECT 1 FROM supersession_records r
                         WHERE r.tenant_id = m.tenant_id AND r.superseded_memory_id = m.id
                           AND r.subject_id = m.subject_id AND r.rule = 'claim_contradiction')
                         THEN ':t' ELSE ':f' END ORDER BY m.id), '{}') AS versions
              FROM memories m WHERE m.tenant_id = p_tenant AND m.subject_id = p_subject) l;
    END IF;
    IF v_memories <> 'kept' THEN
        RETURN QUERY
        SELECT 10::smallint, m.id, m.kind, m.content, m.summary, m.confidence, m.valid_from, m.valid_to,
               m.asserted_valid_to, m.superseded_at, m.source_episode_ids, m.metadata, m.status,
               m.sensitivity_labels, m.suggested_labels, m.created_at, m.updated_at, m.claim_single,
               NULL::text, NULL::jsonb, NULL::jsonb, NULL::text, NULL::timestamptz, m.xmin::text::bigint,
               NULL::float8, NULL::float8, NULL::boolean,
               EXISTS (SELECT 1 FROM supersession_records r
                       WHERE r.tenant_id = m.tenant_id AND r.superseded_memory_id = m.id
                         AND r.subject_id = m.subject_id AND r.rule = 'claim_contradiction'),
               NULL::integer, NULL::uuid, tsvector_to_array(m.content_tsv), NULL::float8, m.recorded_at
        FROM memories m
        WHERE m.tenant_id = p_tenant AND m.subject_id = p_subject
          AND (v_memories = 'all' OR m.xmin::text::bigint > p_known_xmin);
    END IF;

    IF v_episodes = 'kept' THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT 11::smallint, e.id, e.type, NULL::text, NULL::text, NULL::float8, NULL::timestamptz, NULL::timestamptz,
           NULL::timestamptz, NULL::timestamptz, NULL::uuid[], e.metadata, NULL::text, NULL::text[], NULL::text[],
           e.created_at, NULL::timestamptz, NULL::boolean,
           e.source, e.payload, e.provenance, e.session_id, e.occurred_at, e.seq,
           NULL::float8, NULL::float8, NULL::boolean, NULL::boolean, NULL::integer, NULL::uuid,
           tsvector_to_array(e.search_tsv), NULL::float8, NULL::timestamptz
    FROM episodes e
    WHERE e.tenant_id = p_tenant AND e.subject_id = p_subject AND e.seq > v_after;
END
$$;

REVOKE ALL ON FUNCTION mnemo_context_small(text, text, timestamptz, text, text, text, text, text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mnemo_context_small(text, text, timestamptz, text, text, text, text, text, bigint)
    TO mnemo_app;
