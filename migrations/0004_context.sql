-- mnemo schema, part 4: what context retrieval needs.

-- Full-text over the episode's text (messages, text or content) and its speakers' names, so a
-- task that names a person finds what they said; stemmed like memories.
ALTER TABLE episodes ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS (
    to_tsvector('english',
        coalesce(jsonb_path_query_array(payload, '$.messages[*].content')::text, '') || ' ' ||
        coalesce(jsonb_path_query_array(payload, '$.messages[*].name')::text, '') || ' ' ||
        coalesce(jsonb_path_query_array(payload, '$.messages[*].speaker')::text, '') || ' ' ||
        coalesce(payload->>'text', '') || ' ' || coalesce(payload->>'content', '') || ' ' ||
        coalesce(payload->>'speaker', '') || ' ' || coalesce(payload->>'author', ''))
) STORED;
CREATE INDEX episodes_search_tsv ON episodes USING gin (search_tsv);
CREATE INDEX episodes_subject_session ON episodes (tenant_id, subject_id, session_id, occurred_at);

-- Current single-valued claims and recent facts are read on every context call.
CREATE INDEX memories_subject_claims ON memories (tenant_id, subject_id) WHERE claim_single;
CREATE INDEX memories_subject_valid_from ON memories (tenant_id, subject_id, valid_from);
