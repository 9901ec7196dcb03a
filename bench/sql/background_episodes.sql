-- Background data: :total episodes in subjects bg-0, bg-1, ... (1000 each, uncompiled), their
-- payloads cycled from the real chat episodes of :src, so the database holds :total more rows
-- in every episode index (full-text included). Run as a superuser; rows carry their tenant_id.
\set ON_ERROR_STOP 1
BEGIN;
CREATE TEMP TABLE src ON COMMIT DROP AS
  SELECT (row_number() OVER (ORDER BY seq)) - 1 AS rn, payload, session_id
  FROM episodes WHERE tenant_id = :'tenant' AND subject_id = :'src';
SELECT count(*) AS n FROM src \gset
INSERT INTO episodes (tenant_id, subject_id, id, session_id, source, type, payload, seq, occurred_at)
SELECT :'tenant', 'bg-' || (g / 1000), gen_random_uuid(), src.session_id, 'chat', 'message', src.payload,
       g % 1000 + 1, timestamptz '2025-01-01' + (g % 1000) * interval '1 hour'
FROM generate_series(0, :total - 1) g JOIN src ON src.rn = g % :n;
INSERT INTO subject_counters (tenant_id, subject_id, last_seq)
SELECT :'tenant', 'bg-' || s, 1000 FROM generate_series(0, (:total - 1) / 1000) s
ON CONFLICT (tenant_id, subject_id) DO NOTHING;
COMMIT;
