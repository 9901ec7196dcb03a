-- mnemo schema, part 10: suggested sensitivity labels, session resolutions, the health cache.
--
-- memories.suggested_labels (since 0002) now holds what the rule-based suggester found at
-- compile time; a reviewer promotes them to sensitivity_labels (only those drive policy).
CREATE INDEX memories_suggested ON memories (tenant_id, created_at DESC, id DESC)
    WHERE suggested_labels <> '{}';
CREATE INDEX memories_suggested_labels ON memories USING gin (suggested_labels)
    WHERE suggested_labels <> '{}';

-- One resolution per (tenant, subject, session); POST /v1/resolutions upserts it.
CREATE TABLE resolutions (
    tenant_id           text NOT NULL,
    id                  uuid NOT NULL,
    subject_id          text NOT NULL,
    session_id          text NOT NULL,
    status              text NOT NULL CHECK (status IN ('open', 'resolved', 'unresolved')),
    resolution_summary  text,
    resolved_at         timestamptz,
    metadata            jsonb NOT NULL DEFAULT '{}',
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, subject_id, session_id)
);
CREATE INDEX resolutions_recent ON resolutions (tenant_id, subject_id, updated_at DESC, id DESC);

-- The last health state seen per subject, so a transition is announced once.
CREATE TABLE subject_health_cache (
    tenant_id   text NOT NULL,
    subject_id  text NOT NULL,
    last_state  text NOT NULL,
    last_score  integer NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, subject_id)
);

SELECT mnemo_apply_tenant_policies();
