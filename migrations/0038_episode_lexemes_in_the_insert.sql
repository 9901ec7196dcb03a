-- mnemo schema, part 38: an episode's lexemes computed by its insert statement, not by a
-- generated column.
--
-- `episodes.search_tsv` was a generated column. Postgres prepares a generated column's
-- expression again for every statement that inserts (its stored text is read back into an
-- expression tree and planned: `ExecInitStoredGenerated`, about 4% of a one-episode insert's
-- time in the backend's profile), while an expression written in the statement is prepared
-- once with the statement's cached plan. The column is now a plain one, and mnemo's inserts
-- (`db::episodes`) store `mnemo_episode_lexemes(payload)`, the very expression the column was
-- generated from, so stored lexemes do not change. Single-episode ingest, 16 connections: about
-- 4% more episodes a second (bench/README.md).
--
-- A row inserted without them (an import, a bench script, a hand-written INSERT) gets them from
-- the trigger below, and the column is NOT NULL, so no path can store an episode that full-text
-- search cannot find. A dump leaves the column out and an import lets the trigger fill it
-- (`db::dump::DERIVED_COLUMNS`). Existing rows keep their values: the expression is dropped,
-- the data stays, and the generated expression never gave NULL.

CREATE FUNCTION mnemo_episode_text(p_payload jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT left(coalesce(jsonb_path_query_array(p_payload, '$.messages[*].content')::text, '') || ' ' ||
        coalesce(jsonb_path_query_array(p_payload, '$.messages[*].name')::text, '') || ' ' ||
        coalesce(jsonb_path_query_array(p_payload, '$.messages[*].speaker')::text, '') || ' ' ||
        coalesce(p_payload->>'text', '') || ' ' || coalesce(p_payload->>'content', '') || ' ' ||
        coalesce(p_payload->>'speaker', '') || ' ' || coalesce(p_payload->>'author', ''), 250000)
$$;

CREATE FUNCTION mnemo_episode_lexemes(p_payload jsonb) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('english'::regconfig, mnemo_episode_text(p_payload))
$$;

ALTER TABLE episodes ALTER COLUMN search_tsv DROP EXPRESSION;
ALTER TABLE episodes ALTER COLUMN search_tsv SET NOT NULL;

CREATE FUNCTION mnemo_episodes_fill_lexemes() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.search_tsv := mnemo_episode_lexemes(NEW.payload);
    RETURN NEW;
END
$$;

-- Fires only for rows that come without lexemes; mnemo's own inserts compute them in the
-- statement and do not pay for a trigger call.
CREATE TRIGGER episodes_fill_lexemes BEFORE INSERT ON episodes
    FOR EACH ROW WHEN (NEW.search_tsv IS NULL) EXECUTE FUNCTION mnemo_episodes_fill_lexemes();
