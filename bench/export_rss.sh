#!/usr/bin/env bash
# Peak memory of `mnemo export --format mnemo` and of `mnemo import` on a 100k-episode tenant
# (see bench/README.md, "Export and import in bounded memory").
#
#   bench/export_rss.sh [--episodes N] [--bin PATH] [--out DIR]
#
# Seeds one subject with N chat episodes (~450-byte payloads) and N memories (384-dim vectors)
# straight through SQL into a fresh database on the bench cluster, then runs the export, the
# import into another fresh database, and the Statewave-format export of the same subject (one
# document, streamed), each under /usr/bin/time -v; then the same document over HTTP
# (`GET /admin/export/{subject_id}` from `mnemo serve`, downloaded by curl), where the figure is
# the server's VmHWM after the download. Prints rows, bytes, seconds and maximum resident set
# size per run.
set -euo pipefail
cd "$(dirname "$0")/.."

EPISODES=100000; BIN=target/release/mnemo; OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --episodes) EPISODES=$2; shift ;;
        --bin) BIN=$2; shift ;;
        --out) OUT=$2; shift ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
[ -x "$BIN" ] || { echo "no binary at $BIN (cargo build --release, or pass --bin)" >&2; exit 2; }
OUT=${OUT:-target/bench/export-rss-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
DATA=target/bench
STARTED=$("$BIN" pg start --data-dir "$DATA")
trap 'case "$STARTED" in Started*) "$BIN" pg stop --data-dir "$DATA" ;; esac' EXIT
SOCK=$(cd "$DATA/postgres/sock" && pwd)
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -h "$SOCK" -U postgres)
for db in rss_src rss_dst; do
    "${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
    MNEMO_DATABASE_URL="postgres://postgres@localhost/$db?host=$SOCK" "$BIN" migrate 2>/dev/null
done

echo "seeding $EPISODES episodes and $EPISODES memories" >&2
"${PSQL[@]}" -d rss_src <<SQL
INSERT INTO tenants (tenant_id) VALUES ('bench');
INSERT INTO episodes (tenant_id, subject_id, id, source, type, payload, seq, occurred_at, created_at)
SELECT 'bench', 'user:big', gen_random_uuid(), 'chat', 'message',
       jsonb_build_object('messages', jsonb_build_array(jsonb_build_object('role', 'user',
         'content', 'Message ' || g || ': ' || repeat('we talked about the deploy pipeline and the weather ', 8)))),
       g, now() - (($EPISODES - g) || ' seconds')::interval, now()
FROM generate_series(1, $EPISODES) g;
INSERT INTO subject_counters VALUES ('bench', 'user:big', $EPISODES);
INSERT INTO compile_cursors (tenant_id, subject_id, compiled_seq) VALUES ('bench', 'user:big', $EPISODES);
INSERT INTO memories (tenant_id, subject_id, id, kind, content, summary, valid_from, order_at, order_tiebreak,
                      embedding, embedding_model)
SELECT 'bench', 'user:big', gen_random_uuid(), 'episode_summary', 'user: message ' || g, 'user: message ' || g,
       now(), now(), lpad(g::text, 20, '0') || ':0000',
       (SELECT array_agg(((g * 31 + i) % 97) / 97.0) FROM generate_series(1, 384) i)::float4[]::vector, 'hash-384'
FROM generate_series(1, $EPISODES) g;
SQL

run() { # label, then the command; stdout to $OUT/<label>.out
    local label=$1; shift
    /usr/bin/time -v -o "$OUT/$label.time" "$@" >"$OUT/$label.out" 2>"$OUT/$label.err"
    local rss secs bytes
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$OUT/$label.time")
    secs=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$OUT/$label.time")
    bytes=$(stat -c %s "$OUT/$label.out")
    printf '%-22s peak RSS %7.1f MiB  wall %s  stdout %s bytes\n' "$label" "$(echo "$rss / 1024" | bc -l)" "$secs" "$bytes"
    echo "{\"run\":\"$label\",\"episodes\":$EPISODES,\"max_rss_kib\":$rss,\"wall\":\"$secs\",\"stdout_bytes\":$bytes}" >>"$OUT/results.jsonl"
}

SRC="postgres://postgres@localhost/rss_src?host=$SOCK"
DST="postgres://postgres@localhost/rss_dst?host=$SOCK"
export MNEMO_EMBEDDER=hash MNEMO_LOG=warn
MNEMO_DATABASE_URL=$SRC run export-mnemo "$BIN" export --tenant bench --format mnemo
cp "$OUT/export-mnemo.out" "$OUT/dump.jsonl"
MNEMO_DATABASE_URL=$DST run import-mnemo "$BIN" import "$OUT/dump.jsonl"
MNEMO_DATABASE_URL=$SRC run export-statewave "$BIN" export --tenant bench --subject user:big --format statewave

# Over HTTP: the server's peak RSS (VmHWM) before and after one download of the document.
PORT=${MNEMO_BENCH_PORT:-18177}
MNEMO_DATABASE_URL=$SRC MNEMO_ADDR=127.0.0.1:$PORT "$BIN" serve >"$OUT/serve.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; case "$STARTED" in Started*) "$BIN" pg stop --data-dir "$DATA" ;; esac' EXIT
for _ in $(seq 1 150); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.2; done
idle=$(awk '/VmHWM/ {print $2}' "/proc/$SERVER/status")
t0=$(date +%s.%N)
curl -sf "http://127.0.0.1:$PORT/admin/export/user:big?tenant_id=bench" -o "$OUT/export-http.out"
secs=$(echo "$(date +%s.%N) - $t0" | bc -l)
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$SERVER/status")
bytes=$(stat -c %s "$OUT/export-http.out")
printf '%-22s peak RSS %7.1f MiB  (server before: %.1f MiB)  wall %.1f s  body %s bytes\n' export-statewave-http \
    "$(echo "$hwm / 1024" | bc -l)" "$(echo "$idle / 1024" | bc -l)" "$secs" "$bytes"
echo "{\"run\":\"export-statewave-http\",\"episodes\":$EPISODES,\"max_rss_kib\":$hwm,\"idle_rss_kib\":$idle,\"wall_s\":$secs,\"stdout_bytes\":$bytes}" >>"$OUT/results.jsonl"
cmp -s <(head -c 40 "$OUT/export-http.out") <(head -c 40 "$OUT/export-statewave.out") || echo "warning: HTTP and CLI documents start differently" >&2
kill "$SERVER"; wait "$SERVER" 2>/dev/null || true
rm -f "$OUT/dump.jsonl" "$OUT"/*.out
