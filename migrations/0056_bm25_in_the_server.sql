-- BM25 is computed in one place, the server (services::context::lexical::bm25): Postgres finds
-- a lexical lane's hits (mnemo_memory_hits, mnemo_episode_hits, installed from sql/functions/)
-- and mnemo_context returns them when the call brought no lanes of its own; the server ranks
-- them and calls again with the lanes. The functions that ranked in SQL go.
DROP FUNCTION IF EXISTS mnemo_memory_bm25(text, timestamptz, tsquery, text[], integer);
DROP FUNCTION IF EXISTS mnemo_episode_bm25(text, timestamptz, tsquery, text[], integer);
DROP FUNCTION IF EXISTS mnemo_bm25_rank(uuid[], text[], double precision[], double precision, integer);
DROP FUNCTION IF EXISTS mnemo_subject_size(text, timestamptz);
-- mnemo_context returns the hits in three more columns (hit_ids, hit_terms, hit_dls): a new
-- result type, so the old function goes and sql/functions/mnemo_context.sql installs the new.
DROP FUNCTION IF EXISTS mnemo_context(text, text, timestamptz, text, text, text, text, timestamptz[], bigint, boolean,
    boolean, boolean, integer[], text, text[], text[], uuid[], double precision[], uuid[], double precision[]);
