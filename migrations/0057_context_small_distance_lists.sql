-- mnemo schema, part 57: a small subject's context call returns the task vector's distances as
-- one row a source (the ids and the distances as two arrays) instead of one row a distance:
-- decoding some 700 rows of 35 columns, nearly all NULL, was about a fifth of the server's time
-- for a call on a long chat. A new result type, so the old function goes and
-- sql/functions/mnemo_context_small.sql installs the new.
DROP FUNCTION IF EXISTS mnemo_context_small(text, text, timestamptz, text, text, text, text, text, bigint);
