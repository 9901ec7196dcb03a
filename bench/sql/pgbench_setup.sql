-- The table pgbench's single-row INSERT script writes: a text key, a jsonb payload of an
-- episode's size, a bigserial primary key and a secondary btree index (episodes has several
-- indexes and a GIN, so this is a generous ceiling, not an equal workload).
DROP TABLE IF EXISTS bench_insert;
CREATE TABLE bench_insert (
    id          bigserial PRIMARY KEY,
    tenant_id   text NOT NULL,
    subject_id  text NOT NULL,
    payload     jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX bench_insert_subject ON bench_insert (tenant_id, subject_id, created_at);
