-- Grows a large subject by cloning a compiled one: :copies generations of :src's episodes,
-- episode vectors, memories and supersession records under :dst, with fresh ids (md5 of the
-- old id and the generation, so memories' source_episode_ids and supersession links still
-- point inside the same generation). Generation k is shifted (copies-1-k) * 400 days back, so
-- the newest generation is the original timeline, and only it keeps claim_single (the
-- current single-valued claims); older generations keep their status and text.
-- Run as a superuser (bypasses RLS; every row carries its tenant_id).
\set ON_ERROR_STOP 1
BEGIN;
CREATE TEMP TABLE gen ON COMMIT DROP AS
  SELECT k, (:copies - 1 - k) * interval '400 days' AS sh FROM generate_series(0, :copies - 1) k;
CREATE TEMP TABLE seqmax ON COMMIT DROP AS
  SELECT max(seq) AS m FROM episodes WHERE tenant_id = :'tenant' AND subject_id = :'src';

INSERT INTO episodes (tenant_id, subject_id, id, session_id, source, type, payload, metadata, provenance,
                      seq, occurred_at, created_at)
SELECT e.tenant_id, :'dst', md5(e.id::text || g.k)::uuid, e.session_id || '-g' || g.k, e.source, e.type,
       e.payload, e.metadata, e.provenance, e.seq + g.k * s.m, e.occurred_at - g.sh, e.created_at
FROM episodes e, gen g, seqmax s WHERE e.tenant_id = :'tenant' AND e.subject_id = :'src';

INSERT INTO episode_embeddings (tenant_id, subject_id, episode_id, embedding_model, embedding, created_at)
SELECT x.tenant_id, :'dst', md5(x.episode_id::text || g.k)::uuid, x.embedding_model, x.embedding, x.created_at
FROM episode_embeddings x, gen g WHERE x.tenant_id = :'tenant' AND x.subject_id = :'src';

INSERT INTO memories (tenant_id, subject_id, id, kind, content, summary, confidence, valid_from, valid_to,
                      asserted_valid_to, recorded_at, superseded_at, source_episode_ids, metadata, status,
                      sensitivity_labels, suggested_labels, claim_key, claim_bucket, claim_single, order_at,
                      order_tiebreak, embedding, embedding_model, created_at, updated_at)
SELECT m.tenant_id, :'dst', md5(m.id::text || g.k)::uuid, m.kind, m.content, m.summary, m.confidence,
       m.valid_from - g.sh, m.valid_to - g.sh, m.asserted_valid_to - g.sh, m.recorded_at, m.superseded_at,
       ARRAY(SELECT md5(x::text || g.k)::uuid FROM unnest(m.source_episode_ids) x), m.metadata, m.status,
       m.sensitivity_labels, m.suggested_labels, m.claim_key, m.claim_bucket,
       m.claim_single AND g.k = :copies - 1, m.order_at - g.sh, m.order_tiebreak, m.embedding,
       m.embedding_model, m.created_at, m.updated_at
FROM memories m, gen g WHERE m.tenant_id = :'tenant' AND m.subject_id = :'src';

INSERT INTO supersession_records (tenant_id, subject_id, id, superseded_memory_id, superseding_memory_id, rule,
                                  claim_key, score, threshold, compile_job_id, details, created_at)
SELECT r.tenant_id, :'dst', md5(r.id::text || g.k)::uuid, md5(r.superseded_memory_id::text || g.k)::uuid,
       md5(r.superseding_memory_id::text || g.k)::uuid, r.rule, r.claim_key, r.score, r.threshold,
       r.compile_job_id, r.details, r.created_at
FROM supersession_records r, gen g WHERE r.tenant_id = :'tenant' AND r.subject_id = :'src';

-- Term statistics as compile would have kept them (same rule as migration 0012's backfill).
INSERT INTO subject_terms (tenant_id, subject_id, source, lexeme, df, common_since)
SELECT m.tenant_id, m.subject_id, 'memory', t.lexeme, count(*),
       CASE WHEN count(*) >= 1000 THEN (array_agg(m.recorded_at ORDER BY m.recorded_at))[1000] END
FROM memories m, unnest(m.content_tsv) t WHERE m.tenant_id = :'tenant' AND m.subject_id = :'dst'
GROUP BY m.tenant_id, m.subject_id, t.lexeme;
INSERT INTO subject_terms (tenant_id, subject_id, source, lexeme, df, common_since)
SELECT e.tenant_id, e.subject_id, 'episode', t.lexeme, count(*),
       CASE WHEN count(*) >= 1000 THEN (array_agg(e.created_at ORDER BY e.created_at))[1000] END
FROM episodes e, unnest(e.search_tsv) t WHERE e.tenant_id = :'tenant' AND e.subject_id = :'dst'
GROUP BY e.tenant_id, e.subject_id, t.lexeme;

INSERT INTO subject_counters (tenant_id, subject_id, last_seq)
SELECT :'tenant', :'dst', :copies * m FROM seqmax;
INSERT INTO compile_cursors (tenant_id, subject_id, compiled_seq)
SELECT :'tenant', :'dst', :copies * m FROM seqmax;
COMMIT;
