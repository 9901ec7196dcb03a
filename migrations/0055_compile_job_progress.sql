-- mnemo schema, part 55: a compile job's progress. `episodes_done` counts the episodes the job
-- has compiled; `episodes_total` is that plus what was still pending after its latest slice
-- (NULL until its first slice), so a poll can show processed/total while the job runs.

ALTER TABLE compile_jobs
    ADD COLUMN episodes_done  bigint NOT NULL DEFAULT 0,
    ADD COLUMN episodes_total bigint;
