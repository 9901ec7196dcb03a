-- mnemo schema, part 1: tenants and append-only episodes.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE tenants (
    tenant_id   text PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE episodes (
    tenant_id        text NOT NULL,
    subject_id       text NOT NULL,
    id               uuid NOT NULL,
    session_id       text,
    source           text NOT NULL,
    type             text NOT NULL,
    payload          jsonb NOT NULL,
    metadata         jsonb NOT NULL DEFAULT '{}'::jsonb,
    provenance       jsonb NOT NULL DEFAULT '{}'::jsonb,
    idempotency_key  text,
    -- Per-subject ingest sequence: assigned under the subject's counter row lock, so seqs
    -- become visible in order and compile can keep a plain cursor (see subject_counters).
    seq              bigint NOT NULL,
    occurred_at      timestamptz NOT NULL DEFAULT now(),
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, subject_id, id),
    CHECK (jsonb_typeof(payload) = 'object'),
    CHECK (char_length(subject_id) BETWEEN 1 AND 256)
);

CREATE UNIQUE INDEX episodes_subject_seq ON episodes (tenant_id, subject_id, seq);

-- The last seq handed out per subject. Ingest increments it inside its own transaction, so a
-- later seq can only commit after every earlier one: a compile cursor never skips an episode.
CREATE TABLE subject_counters (
    tenant_id   text NOT NULL,
    subject_id  text NOT NULL,
    last_seq    bigint NOT NULL,
    PRIMARY KEY (tenant_id, subject_id)
);

-- A key names one episode per (tenant, subject).
CREATE UNIQUE INDEX episodes_idempotency
    ON episodes (tenant_id, subject_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- The per-subject order used by the timeline, compile and context.
CREATE INDEX episodes_subject_order
    ON episodes (tenant_id, subject_id, occurred_at, created_at, id);

-- Episodes are append-only: no UPDATE ever, DELETE only inside the erasure path,
-- which sets the transaction-local flag mnemo.erasure = 'on'.
CREATE FUNCTION mnemo_episodes_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND coalesce(current_setting('mnemo.erasure', true), '') = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'episodes are append-only (% rejected)', TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE TRIGGER episodes_append_only
    BEFORE UPDATE OR DELETE ON episodes
    FOR EACH ROW EXECUTE FUNCTION mnemo_episodes_guard();

CREATE TRIGGER episodes_no_truncate
    BEFORE TRUNCATE ON episodes
    FOR EACH STATEMENT EXECUTE FUNCTION mnemo_episodes_guard();
