\set sid random(1, 100)
WITH c AS (INSERT INTO subject_counters (tenant_id, subject_id, last_seq) VALUES ('default', 'pgbe-' || :sid, 1)
           ON CONFLICT (tenant_id, subject_id) DO UPDATE SET last_seq = subject_counters.last_seq + 1 RETURNING last_seq)
INSERT INTO episodes (tenant_id, subject_id, id, session_id, source, type, payload, metadata, provenance, occurred_at, seq, search_tsv)
SELECT 'default', 'pgbe-' || :sid, gen_random_uuid(), 's00001', 'chat', 'message', e.p, '{}', '{}', now(), c.last_seq, mnemo_episode_lexemes(e.p)
FROM c, (SELECT '{"messages":[{"role":"user","content":"I work at Globex. How do I rotate logs with logrotate?"},{"role":"assistant","content":"Here is one way to do it: keep the change small, add a test, and roll it out behind a flag."}]}'::jsonb AS p OFFSET 0) e;
