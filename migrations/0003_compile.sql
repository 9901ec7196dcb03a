-- mnemo schema, part 3: compile state, supersession audit, embeddings of episodes, tenant config.

-- How far compile has read each subject's episodes (by seq; see subject_counters).
CREATE TABLE compile_cursors (
    tenant_id      text NOT NULL,
    subject_id     text NOT NULL,
    compiled_seq   bigint NOT NULL DEFAULT 0,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, subject_id)
);

-- Async compile jobs, shared by every mnemo process through FOR UPDATE SKIP LOCKED.
CREATE TABLE compile_jobs (
    tenant_id         text NOT NULL,
    subject_id        text NOT NULL,
    id                text NOT NULL,
    status            text NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'failed')),
    memories_created  integer NOT NULL DEFAULT 0,
    error             text,
    attempts          integer NOT NULL DEFAULT 0,
    created_at        timestamptz NOT NULL DEFAULT now(),
    started_at        timestamptz,
    completed_at      timestamptz,
    heartbeat_at      timestamptz,
    PRIMARY KEY (tenant_id, subject_id, id)
);
CREATE UNIQUE INDEX compile_jobs_id ON compile_jobs (tenant_id, id);
CREATE INDEX compile_jobs_open ON compile_jobs (status, created_at) WHERE status IN ('pending', 'running');
CREATE INDEX compile_jobs_finished ON compile_jobs (completed_at) WHERE status IN ('completed', 'failed');

-- One row per supersession decision (never memory text or claim values).
CREATE TABLE supersession_records (
    tenant_id              text NOT NULL,
    subject_id             text NOT NULL,
    id                     uuid NOT NULL,
    superseded_memory_id   uuid NOT NULL,
    superseding_memory_id  uuid,
    rule                   text NOT NULL,
    claim_key              text,
    score                  double precision,
    threshold              double precision,
    compile_job_id         text,
    details                jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at             timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, subject_id, id)
);
CREATE INDEX supersession_superseded ON supersession_records (tenant_id, superseded_memory_id);

-- Episode vectors live beside the append-only episodes (which are never updated).
CREATE TABLE episode_embeddings (
    tenant_id        text NOT NULL,
    subject_id       text NOT NULL,
    episode_id       uuid NOT NULL,
    embedding_model  text NOT NULL,
    embedding        vector NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, subject_id, episode_id)
);

-- Per-tenant configuration document (claim_keys, receipts, ...); edited by the admin API.
CREATE TABLE tenant_configs (
    tenant_id   text PRIMARY KEY,
    config      jsonb NOT NULL DEFAULT '{}'::jsonb,
    version     integer NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
