-- mnemo schema, part 54: SQL functions live in files, one per function (issue 50).
--
-- Until now every change to a function was a new migration holding a full copy of it: the
-- context function alone had eight copies across migrations 0020-0036, and to know what ran a
-- reader assembled it from several of them. From here on `sql/functions/<name>.sql` holds each
-- function's current definition, and the server installs the files after the migrations
-- (`db::functions::install`), only those whose text changed since they were last installed
-- (this table records the digest of each). Migrations remain the history of tables, indexes,
-- triggers and policies; a function's signature change is a migration that drops the old one,
-- with the new definition in its file.
--
-- Three functions nothing calls any more go: the full-text lanes of migration 0012 (replaced by
-- the BM25 lanes of 0027) and the first signature of `mnemo_context_small` (0031, replaced by
-- 0032's, which added the fingerprint and the version the caller holds).

CREATE TABLE mnemo_sql_functions (
    name text PRIMARY KEY,
    sha256 text NOT NULL,
    installed_at timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON mnemo_sql_functions FROM PUBLIC;

DROP FUNCTION mnemo_memory_lexical(text, timestamptz, tsquery, integer);
DROP FUNCTION mnemo_episode_lexical(text, timestamptz, tsquery, integer);
DROP FUNCTION mnemo_context_small(text, text, timestamptz, text, text, text, text);
