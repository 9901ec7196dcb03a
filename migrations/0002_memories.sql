-- mnemo schema, part 2: compiled memories (bitemporal).
--   valid_from / valid_to         : when the fact was true in the world
--   recorded_at / superseded_at   : when mnemo believed it (transaction time)
--   asserted_valid_to             : valid_to as first recorded, so "what did we believe at T"
--                                   can be answered after supersession rewrote valid_to.
CREATE TABLE memories (
    tenant_id           text NOT NULL,
    subject_id          text NOT NULL,
    id                  uuid NOT NULL,
    kind                text NOT NULL,
    content             text NOT NULL,
    summary             text NOT NULL DEFAULT '',
    confidence          double precision NOT NULL DEFAULT 1.0,
    valid_from          timestamptz NOT NULL,
    valid_to            timestamptz,
    asserted_valid_to   timestamptz,
    recorded_at         timestamptz NOT NULL DEFAULT now(),
    superseded_at       timestamptz,
    source_episode_ids  uuid[] NOT NULL DEFAULT '{}',
    metadata            jsonb NOT NULL DEFAULT '{}'::jsonb,
    status              text NOT NULL DEFAULT 'active'
                        CHECK (status IN ('active', 'superseded', 'tombstoned')),
    sensitivity_labels  text[] NOT NULL DEFAULT '{}',
    suggested_labels    text[] NOT NULL DEFAULT '{}',
    claim_key           text,
    claim_bucket        text,
    claim_single        boolean NOT NULL DEFAULT false,
    order_at            timestamptz NOT NULL,
    order_tiebreak      text NOT NULL,
    embedding           vector,
    embedding_model     text,
    content_tsv         tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, subject_id, id)
);

CREATE INDEX memories_subject_created ON memories (tenant_id, subject_id, created_at, id);
CREATE INDEX memories_subject_active ON memories (tenant_id, subject_id, kind) WHERE status = 'active';
CREATE INDEX memories_by_id ON memories (tenant_id, id);
CREATE INDEX memories_tsv ON memories USING gin (content_tsv);
