-- mnemo schema, part 5: receipts and the per-tenant hash chain.
--
-- Each receipt body carries chain {seq, prev_hash}; receipt_hash = sha256(canonical body).
-- Bodies are stored as canonical JSON text (exact float bytes; jsonb would renormalise
-- numbers). Tombstoning replaces the body but keeps the hashes, so the chain still verifies.
CREATE TABLE receipts (
    tenant_id          text NOT NULL,
    receipt_id         text NOT NULL,
    subject_id         text NOT NULL,
    seq                bigint NOT NULL,
    prev_hash          text NOT NULL,
    receipt_hash       text NOT NULL,
    mode               text NOT NULL,
    parent_receipt_id  text,
    context_hash       text NOT NULL,
    body               text NOT NULL,
    status             text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'tombstoned')),
    tombstoned_at      timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, receipt_id)
);
CREATE UNIQUE INDEX receipts_chain ON receipts (tenant_id, seq);
CREATE INDEX receipts_subject ON receipts (tenant_id, subject_id, receipt_id);
CREATE INDEX receipts_active_created ON receipts (tenant_id, created_at) WHERE status = 'active';

-- The head of each tenant's chain; emitters lock this row, so the chain never forks.
CREATE TABLE receipt_chain_heads (
    tenant_id  text PRIMARY KEY,
    last_seq   bigint NOT NULL,
    last_hash  text NOT NULL
);

-- Episode vectors written after an instant must not change what a replay as of it sees.
CREATE INDEX episode_embeddings_created ON episode_embeddings (tenant_id, subject_id, created_at);
