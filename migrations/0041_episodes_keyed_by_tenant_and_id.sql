-- Episodes are keyed by (tenant, id) instead of (tenant, subject, id) (issue 18).
--
-- An episode id is unique in its tenant: the server makes ids (ULIDs, in time order), and an
-- import refuses any id the tenant already uses, in whatever subject (`services::dump::merge`).
-- The primary key now says exactly that, and costs a stored episode less:
--
-- - Ids grow with time, so within a tenant every new key lands at the end of the tenant's
--   range: the btree insert goes to the same few pages instead of to each subject's own place
--   among the tenant's subjects, and compares a uuid where it compared the subject's text. With
--   one tenant the new key is the index's largest, and Postgres skips the descent altogether.
--   Single-episode ingest at 16 connections (the server, hash embedder, fresh database, 10 s
--   runs alternated): 11,315 / 12,060 / 11,704 episodes/s against 12,016 / 12,391 / 12,313.
-- - Reading episodes by id within a tenant (the import's check that its ids are free) reads the
--   ids asked for, where it read every key of the tenant.
--
-- Every lookup of an episode by id names its tenant (and its subject, checked against the row
-- found), so each still reads one index entry. Building the new key reads the table once, under
-- a lock that holds writes back until this migration commits.
ALTER TABLE episodes DROP CONSTRAINT episodes_pkey;
ALTER TABLE episodes ADD CONSTRAINT episodes_pkey PRIMARY KEY (tenant_id, id);
