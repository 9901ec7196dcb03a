-- mnemo schema, part 58: a large subject's context call returns a pool of rows instead of the
-- lanes' final choice: each lane's leading candidates with the turns and summaries the lanes'
-- closure may take, their distances to the task vector, and the memories citing those turns.
-- The server applies the lanes to the pool with the code it applies to a small subject's rows
-- (services::context::lanes), so each rule (lane limits, snapshot coverage, backing) is
-- written once. New argument and result types: the old functions go and sql/functions
-- installs the new (mnemo_episode_citers replaces mnemo_episode_backing).
DROP FUNCTION IF EXISTS mnemo_context(text, text, timestamptz, text, text, text, text, timestamptz[], bigint, boolean,
    boolean, boolean, integer[], text, text[], text[], uuid[], double precision[], uuid[], double precision[]);
DROP FUNCTION IF EXISTS mnemo_episode_backing(text, timestamptz, uuid[]);
