-- mnemo schema, part 59: the two context functions return their per-call records (header,
-- snapshot, fingerprint, memory list) as one jsonb column of named fields, and rows in columns
-- of their own (row_version, distance, embedded) instead of columns reused per part. A new result
-- type, so the old functions go and sql/functions installs the new.
DROP FUNCTION IF EXISTS mnemo_context(text, text, timestamptz, text, text, text, text, timestamptz[], bigint, boolean,
    boolean, boolean, integer[], text, text[], text[], uuid[], uuid[]);
DROP FUNCTION IF EXISTS mnemo_context_small(text, text, timestamptz, text, text, text, text, text, bigint);
