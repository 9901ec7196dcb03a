-- mnemo schema, part 9: bounds found by fuzzing the API.
--
-- A tsvector holds at most 1 MiB, so full-text covers the first 250,000 characters of an
-- episode's text or a memory's content (the rest stays stored and returned, just unindexed);
-- and the idempotency key is indexed by its md5, since a 512-character key of 4-byte
-- characters next to a long subject id exceeded the btree row limit.
ALTER TABLE episodes DROP COLUMN search_tsv;
ALTER TABLE episodes ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS (
    to_tsvector('english', left(coalesce(jsonb_path_query_array(payload, '$.messages[*].content')::text, '') || ' ' ||
        coalesce(jsonb_path_query_array(payload, '$.messages[*].name')::text, '') || ' ' ||
        coalesce(jsonb_path_query_array(payload, '$.messages[*].speaker')::text, '') || ' ' ||
        coalesce(payload->>'text', '') || ' ' || coalesce(payload->>'content', '') || ' ' ||
        coalesce(payload->>'speaker', '') || ' ' || coalesce(payload->>'author', ''), 250000))
) STORED;
CREATE INDEX episodes_search_tsv ON episodes USING gin (search_tsv);

ALTER TABLE memories DROP COLUMN content_tsv;
ALTER TABLE memories ADD COLUMN content_tsv tsvector
    GENERATED ALWAYS AS (to_tsvector('english', left(content, 250000))) STORED;
CREATE INDEX memories_tsv ON memories USING gin (content_tsv);

DROP INDEX episodes_idempotency;
CREATE UNIQUE INDEX episodes_idempotency
    ON episodes (tenant_id, subject_id, md5(idempotency_key))
    WHERE idempotency_key IS NOT NULL;
