-- mnemo schema, part 25: every statement of the context call is planned once per connection.
--
-- pg_stat_statements (track = all, track_planning on) on subjects of 605 and 6,050 episodes
-- (1,024 and 9,939 memories) showed statements of `mnemo_context` and its helpers planned again
-- on every call, although migration 0024 gave each one a single shape: the statement that unions
-- the memory lanes (0.63-0.67 ms of planning against 0.05-0.15 ms of execution), the task's
-- lexemes (0.15-0.19 ms, twice a call), the neighbouring turns (0.25 ms) and the BM25 probes
-- (0.21-0.27 ms). With the arrays and limits known, a custom plan always looked cheaper than the
-- generic one, so Postgres's plan cache never settled on the generic plan; on the 50-episode
-- subject it did. Forcing the generic plan for the function (and the helpers it calls, which
-- run inside its setting) removes that planning. The plans do the same work: the rows returned
-- were identical for every task and option set compared, and per call (one client, warm):
-- 6,050 episodes 3.19 -> 1.03 ms, 605 episodes 16.8 -> 15.7 ms, 50 episodes 3.19 -> 2.87 ms,
-- 100k memories 176 -> 171 ms. The statements built with EXECUTE (approximate vector lanes of
-- large subjects) are planned per call as before.

ALTER FUNCTION mnemo_context(text, text, timestamptz, text, text, text, text, timestamptz[], bigint, boolean,
                             boolean, boolean, integer[])
    SET plan_cache_mode = force_generic_plan;
