-- mnemo schema, part 6: erasure certificates.
--
-- One row per DELETE of a subject. The certificate names the subject only by
-- sha256(tenant \x1f subject), so it holds no subject content and has no subject_id column
-- (the erasure's own catalog check therefore never counts it). The body is canonical JSON
-- text, stored exactly as signed.
CREATE TABLE erasures (
    tenant_id       text NOT NULL,
    erasure_id      text NOT NULL,
    subject_sha256  text NOT NULL,
    erased_at       timestamptz NOT NULL,
    certificate     text NOT NULL,
    PRIMARY KEY (tenant_id, erasure_id)
);
CREATE INDEX erasures_subject ON erasures (tenant_id, subject_sha256, erased_at);
