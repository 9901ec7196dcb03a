\set sid random(1, 100)
INSERT INTO bench_insert (tenant_id, subject_id, payload) VALUES ('default', 'pgb-' || :sid, '{"messages":[{"role":"user","content":"I work at Globex. How do I rotate logs with logrotate?"},{"role":"assistant","content":"Here is one way to do it: keep the change small, add a test, and roll it out behind a flag."}]}');
