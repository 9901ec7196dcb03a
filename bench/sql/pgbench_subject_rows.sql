-- The context floor (bench/context_small.sh): one indexed SELECT that reads a subject's rows, the
-- episodes with their payloads, newest first, through the (tenant_id, subject_id, seq) index. One
-- statement per transaction, as the table owner (no row-level security): the strictest floor.
SELECT id, seq, payload FROM episodes WHERE tenant_id = 'default' AND subject_id = 'small' ORDER BY seq DESC;
