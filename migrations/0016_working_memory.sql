-- mnemo schema, part 16: sessions as working memory.
--
-- A session is the set of a subject's episodes that share a session_id; these tables add what
-- an agent's working memory needs beside the turns themselves: the session's own metadata (a
-- title, the agent's labels) and the compaction snapshots that stand for its oldest turns.

CREATE TABLE session_metadata (
    tenant_id   text NOT NULL,
    subject_id  text NOT NULL,
    session_id  text NOT NULL,
    metadata    jsonb NOT NULL DEFAULT '{}'::jsonb,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, subject_id, session_id),
    CHECK (jsonb_typeof(metadata) = 'object')
);

-- One row per snapshot, never rewritten: the history of a session's summaries is kept.
-- `position` numbers a session's snapshots from 1; the unique key is the compare-and-swap's
-- last wall (writers also serialise on the subject's advisory lock). `covers_through` is the
-- seq of the last episode the snapshot stands for: every episode of the session with a seq up
-- to it, except the pinned ones, is represented by `summary`.
CREATE TABLE session_snapshots (
    tenant_id       text NOT NULL,
    subject_id      text NOT NULL,
    session_id      text NOT NULL,
    id              uuid NOT NULL,
    position        integer NOT NULL CHECK (position >= 1),
    prev_id         uuid,
    summary         text NOT NULL,
    pinned          uuid[] NOT NULL DEFAULT '{}',
    covers_through  bigint NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, subject_id, id),
    UNIQUE (tenant_id, subject_id, session_id, position),
    CHECK ((position = 1) = (prev_id IS NULL))
);

-- Snapshots are append-only, like episodes: no UPDATE, DELETE only on the erasure path.
-- The episodes guard (0001) now names the table it protects, so it serves both.
CREATE OR REPLACE FUNCTION mnemo_episodes_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND coalesce(current_setting('mnemo.erasure', true), '') = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '% rows are append-only (% rejected)', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE TRIGGER session_snapshots_append_only
    BEFORE UPDATE OR DELETE ON session_snapshots
    FOR EACH ROW EXECUTE FUNCTION mnemo_episodes_guard();

CREATE TRIGGER session_snapshots_no_truncate
    BEFORE TRUNCATE ON session_snapshots
    FOR EACH STATEMENT EXECUTE FUNCTION mnemo_episodes_guard();

-- The session listing groups a subject's episodes by session.
CREATE INDEX episodes_subject_session_seq
    ON episodes (tenant_id, subject_id, session_id, seq) WHERE session_id IS NOT NULL;

SELECT mnemo_apply_tenant_policies();
