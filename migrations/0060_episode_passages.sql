-- mnemo schema, part 60: passages of long episodes, each with a vector of its own. An episode's
-- vector (episode_embeddings) reads its opening; the later parts of a long turn (a 4 KB answer)
-- are passages, char ranges of the episode's text (compile::text::passages), so a question
-- about the middle of the answer finds the episode. Compile writes the ranges; a background
-- worker embeds them (services::passages), so compile's pace does not depend on message
-- length. Derived from the append-only episodes: erased with them, rebuilt by reembed;
-- embedded_at keeps replay as of a receipt exact (a passage counts from when it had its vector).
CREATE TABLE episode_passages (
    tenant_id        text NOT NULL,
    subject_id       text NOT NULL,
    episode_id       uuid NOT NULL,
    passage          smallint NOT NULL,
    start_char       integer NOT NULL,
    end_char         integer NOT NULL,
    embedding_model  text,
    embedding        vector,
    embedded_at      timestamptz,
    -- a worker's lease on a passage it is embedding (taken again when it is older than a minute)
    claimed_at       timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, subject_id, episode_id, passage),
    CHECK (passage >= 1 AND start_char >= 0 AND end_char > start_char),
    CHECK ((embedding IS NULL) = (embedding_model IS NULL) AND (embedding IS NULL) = (embedded_at IS NULL))
);
CREATE INDEX episode_passages_embedded ON episode_passages (tenant_id, subject_id, embedded_at);
CREATE INDEX episode_passages_pending ON episode_passages (tenant_id, created_at) WHERE embedding IS NULL;

SELECT mnemo_apply_tenant_policies();
