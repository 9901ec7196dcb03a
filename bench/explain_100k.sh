#!/usr/bin/env bash
# Seeds one subject with 100k memories (384-dim vectors) and 50k episodes in a scratch database
# of the embedded test cluster, then prints EXPLAIN ANALYZE for each context retrieval lane.
# Usage: bench/explain_100k.sh [--no-seed]   (after `scripts/test` or `mnemo pg start --data-dir target/tmp/mnemo-test`)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=target/tmp/mnemo-test
target/debug/mnemo pg start --data-dir "$DIR" >/dev/null
SOCK=$(cd "$DIR/postgres/sock" && pwd)
DB=mnemo_explain
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -h "$SOCK" -U postgres)
if [ "${1:-}" != "--no-seed" ]; then
"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
MNEMO_DATABASE_URL="postgres://postgres@localhost/$DB?host=$SOCK" target/debug/mnemo migrate >/dev/null
"${PSQL[@]}" -d "$DB" <<'SQL'
\timing on
-- A vocabulary of 2000 words; each memory has 12 of them.
CREATE TEMP TABLE vocab AS SELECT i, 'word' || i AS w FROM generate_series(1, 2000) i;
INSERT INTO memories (tenant_id, subject_id, id, kind, content, valid_from, asserted_valid_to, order_at, order_tiebreak,
                      claim_single, embedding, embedding_model, source_episode_ids)
SELECT 'default', 'big', gen_random_uuid(),
       (ARRAY['profile_fact', 'episode_summary', 'episode_summary', 'procedure'])[1 + g % 4],
       (SELECT string_agg('word' || (1 + ((g * 7919 + k * 104729) % 2000)), ' ') FROM generate_series(1, 12) k),
       now() - (g || ' minutes')::interval, NULL, now() - (g || ' minutes')::interval, lpad(g::text, 20, '0'),
       g % 500 = 0,
       (SELECT array_agg(sin(g * 0.37 + k * 1.7))::vector FROM generate_series(1, 384) k),
       'hash:384', ARRAY[gen_random_uuid()]
FROM generate_series(1, 100000) g;
INSERT INTO subject_counters VALUES ('default', 'big', 50000);
INSERT INTO episodes (tenant_id, subject_id, id, session_id, source, type, payload, seq, occurred_at)
SELECT 'default', 'big', gen_random_uuid(), 's' || (g / 30), 'chat', 'message',
       jsonb_build_object('messages', jsonb_build_array(jsonb_build_object('role', 'user', 'content',
         (SELECT string_agg('word' || (1 + ((g * 31 + k * 7) % 2000)), ' ') FROM generate_series(1, 15) k)))),
       g, now() - (g || ' minutes')::interval
FROM generate_series(1, 50000) g;
INSERT INTO episode_embeddings (tenant_id, subject_id, episode_id, embedding_model, embedding)
SELECT tenant_id, subject_id, id, 'hash:384', (SELECT array_agg(cos(seq * 0.11 + k))::vector FROM generate_series(1, 384) k)
FROM episodes WHERE subject_id = 'big';
ANALYZE;
\timing off
SELECT count(*) AS memories FROM memories WHERE subject_id = 'big';
SQL
fi
Q="'word17 | word923 | word1500'"
V="(SELECT array_agg(sin(k * 0.5))::vector FROM generate_series(1, 384) k)"
run() { echo "== $1"; "${PSQL[@]}" -d "$DB" -c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, SUMMARY ON) $2" | grep -E "Execution Time|Index|Seq Scan|Sort|Limit" | head -12; }
VIS="tenant_id = 'default' AND subject_id = 'big' AND recorded_at <= now() AND (superseded_at IS NULL OR superseded_at > now()) AND status <> 'tombstoned' AND (asserted_valid_to IS NULL OR asserted_valid_to > now())"
run "memories: full-text lane" "SELECT id FROM memories WHERE $VIS AND content_tsv @@ to_tsquery('english', $Q) ORDER BY ts_rank_cd(content_tsv, to_tsquery('english', $Q)) DESC, id LIMIT 100"
run "memories: exact cosine lane" "SELECT id FROM memories WHERE $VIS AND embedding_model = 'hash:384' ORDER BY embedding <=> $V, id LIMIT 100"
run "memories: current single-valued claims" "SELECT id FROM memories WHERE $VIS AND claim_single"
run "memories: recent facts" "SELECT id FROM memories WHERE $VIS AND kind IN ('profile_fact', 'procedure') ORDER BY valid_from DESC, id DESC LIMIT 50"
run "episodes: full-text lane" "SELECT id FROM episodes WHERE tenant_id = 'default' AND subject_id = 'big' AND created_at <= now() AND search_tsv @@ to_tsquery('english', $Q) ORDER BY ts_rank_cd(search_tsv, to_tsquery('english', $Q)) DESC, id LIMIT 100"
run "episodes: exact cosine lane" "SELECT x.episode_id FROM episode_embeddings x WHERE x.tenant_id = 'default' AND x.subject_id = 'big' AND x.embedding_model = 'hash:384' ORDER BY x.embedding <=> $V, x.episode_id LIMIT 100"
run "episodes: recent" "SELECT id FROM episodes WHERE tenant_id = 'default' AND subject_id = 'big' AND created_at <= now() ORDER BY occurred_at DESC, created_at DESC, id DESC LIMIT 20"
