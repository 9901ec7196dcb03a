#!/usr/bin/env bash
# mnemo HTTP benchmark suite (see bench/README.md).
#
#   bench/run.sh [--quick] [--out DIR] [--skip-minilm]
#
# Builds mnemo (release) and bench/loadgen, starts a private Postgres cluster
# (target/bench/postgres, default durability: fsync, synchronous_commit, full_page_writes on),
# a fresh database, and mnemo against it; then runs every scenario and writes DIR/results.jsonl
# (one JSON object per measurement), DIR/meta.json and DIR/results.md (the tables).
# --quick: 5 s runs, 1k-memory subject only, 100k background episodes (about 5 minutes).
set -euo pipefail
# Context calls ask for bundles of CTX_TOKENS tokens: 800 by default, the budget of issue 18's
# comparison (the API's default is 4000; bundles that large read the longest lanes).
CTX_TOKENS=${CTX_TOKENS:-800}
cd "$(dirname "$0")/.."
ROOT=$(pwd)

QUICK=0
MINILM=1
OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1 ;;
        --skip-minilm) MINILM=0 ;;
        --out) OUT="$2"; shift ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${OUT:-target/bench/results-$STAMP}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
RES="$OUT/results.jsonl"
: > "$RES"

if [ $QUICK = 1 ]; then
    DUR=5; WARM=1; BIG=0; BG=100000; COMPILE_RUNS=1; DEL_REPS=2
else
    DUR=20; WARM=3; BIG=1; BG=1000000; COMPILE_RUNS=3; DEL_REPS=3
fi
PORT=18100
BASE_PORT=18199
URL=http://127.0.0.1:$PORT
DATA=target/bench
DB=mnemo_bench

log() { echo "[$(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)] $*" | tee -a "$OUT/run.log" >&2; }

log "building mnemo (release) and loadgen"
cargo build --release --bin mnemo --locked 2>&1 | tail -1 >&2
(cd bench/loadgen && cargo build --release 2>&1 | tail -1 >&2)
MNEMO=$ROOT/target/release/mnemo
LG=$ROOT/bench/loadgen/target/release/loadgen

"$MNEMO" pg start --data-dir "$DATA" >/dev/null
SOCK=$(cd "$DATA/postgres/sock" && pwd)
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -h "$SOCK" -U postgres)
"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" 2>/dev/null
export MNEMO_DATABASE_URL="postgres://postgres@localhost/$DB?host=$SOCK"
"$MNEMO" migrate >/dev/null 2>&1
sql() { "${PSQL[@]}" -d "$DB" "$@"; }

SERVER_PID=""
BASE_PID=""
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
    [ -n "$BASE_PID" ] && kill "$BASE_PID" 2>/dev/null || true
    wait 2>/dev/null || true
}
trap cleanup EXIT
trap "exit 130" INT TERM

start_mnemo() { # embedder
    MNEMO_ADDR=127.0.0.1:$PORT MNEMO_EMBEDDER=$1 MNEMO_LOG=warn \
        MNEMO_MODEL_DIR=${MNEMO_MODEL_DIR:-$ROOT/.mnemo/models/all-MiniLM-L6-v2} \
        "$MNEMO" serve >>"$OUT/mnemo-$1.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 120); do curl -sf "$URL/readyz" >/dev/null && return 0; sleep 0.5; done
    log "mnemo did not become ready"; exit 1
}
stop_mnemo() { kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""; }

# record LABEL CMD...: runs a loadgen command, stores its JSON line with the label.
record() {
    local label=$1; shift
    local line
    line=$("$@" --label "$label")
    echo "$line" >> "$RES"
    echo "$line" > "$OUT/last.json"
    log "$label: $(echo "$line" | jq -c '{rps: (.throughput_rps // null | if . then floor else . end), items: (.items_per_s // null | if . then floor else . end), p50: .latency_ms.p50, p99: .latency_ms.p99, err: .errors, rss: .machine.rss_peak_mib, mem_s: .compile_memories_per_s, del: .median_ms}')"
}
half_rate() { jq -r '[(.throughput_rps * 0.5 | floor), 1] | max' "$OUT/last.json"; }
load() { "$LG" load --url "$URL" --pid "$SERVER_PID" --duration "$DUR" --warmup "$WARM" "$@"; }
analyze() { sql -c "VACUUM ANALYZE" 2>/dev/null; }

# ---------------------------------------------------------------- machine and settings
{
    echo "{"
    echo "\"date_utc\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\","
    echo "\"quick\": $QUICK, \"duration_s\": $DUR, \"warmup_s\": $WARM, \"context_max_tokens\": $CTX_TOKENS,"
    echo "\"nproc\": $(nproc), \"mem_gib\": $(awk '/MemTotal/ {printf "%.1f", $2/1048576}' /proc/meminfo),"
    echo "\"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')\","
    echo "\"os\": \"$(. /etc/os-release && echo "$PRETTY_NAME")\","
    echo "\"postgres\": \"$(sql -Atc 'SHOW server_version')\","
    echo "\"durability\": \"$(sql -Atc "SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) FROM pg_settings WHERE name IN ('fsync','synchronous_commit','full_page_writes','wal_sync_method','shared_buffers','max_wal_size')")\","
    echo "\"mnemo_commit\": \"$(git rev-parse --short HEAD)\","
    echo "\"loadavg_start\": \"$(cut -d' ' -f1-3 /proc/loadavg)\""
    echo "}"
} > "$OUT/meta.json"
log "meta: $(jq -c . "$OUT/meta.json")"

# ---------------------------------------------------------------- the machine's limits
# Measured at the start and again after the hash phase (the machine is shared: the report
# uses the mean of both and shows each).
pgbench_run() { # label script
    local out tps lat
    out=$(/usr/lib/postgresql/15/bin/pgbench -h "$SOCK" -U postgres -n -M prepared -c 16 -j 2 -T "$DUR" -f "$2" "$DB" 2>&1)
    tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p')
    lat=$(echo "$out" | sed -n 's/^latency average = \([0-9.]*\) ms/\1/p')
    echo "{\"cmd\":\"pgbench\",\"label\":\"$1\",\"clients\":16,\"tps\":$tps,\"latency_avg_ms\":$lat,\"machine\":{\"loadavg_end\":$(cut -d' ' -f1 /proc/loadavg)}}" >> "$RES"
    log "$1: $tps tps (avg latency $lat ms)"
}
limits() { # suffix
    # One INSERT of an episode-sized row per transaction into a plain table (2 btree indexes).
    sql -f bench/sql/pgbench_setup.sql >/dev/null 2>&1
    pgbench_run "pgbench-insert$1" bench/sql/pgbench_insert.sql
    sql -c "DROP TABLE bench_insert" >/dev/null
    # mnemo's own single-episode INSERT (counter upsert + episodes row), as SQL.
    pgbench_run "pgbench-episode-sql$1" bench/sql/pgbench_episode.sql
    "$LG" baseline-server --addr 127.0.0.1:$BASE_PORT 2>/dev/null &
    BASE_PID=$!
    sleep 0.5
    record "axum-get$1" "$LG" load --url http://127.0.0.1:$BASE_PORT --pid "$BASE_PID" --scenario get --path / \
        --concurrency 16 --duration "$DUR" --warmup "$WARM"
    record "axum-echo$1" "$LG" load --url http://127.0.0.1:$BASE_PORT --pid "$BASE_PID" --scenario echo --path /echo \
        --concurrency 16 --duration "$DUR" --warmup "$WARM"
    kill "$BASE_PID"; wait "$BASE_PID" 2>/dev/null || true; BASE_PID=""
}
log "machine limits (pgbench on the same cluster and durability settings; trivial axum handler)"
limits -start

# ---------------------------------------------------------------- hash embedder
log "mnemo --embedder hash"
start_mnemo hash
record mnemo-healthz load --scenario get --path /healthz --concurrency 16

record ingest-max load --scenario ingest --subject ing --subjects 100 --concurrency 16 --seed 11
record ingest-fixed-1000 load --scenario ingest --subject ing --subjects 100 --rate 1000 --concurrency 64 --seed 12
record batch-max load --scenario batch --subject bat --subjects 20 --batch-size 100 --concurrency 4 --seed 13

for i in $(seq "$COMPILE_RUNS"); do
    record compile-hash "$LG" seed --url "$URL" --pid "$SERVER_PID" --subject "comp-hash-$i" --episodes 1000 --compile
done
# The issue's compile figure: one compile call over a fresh subject of 50 episodes (median).
for i in $(seq 5); do
    record compile-hash-50 "$LG" seed --url "$URL" --pid "$SERVER_PID" --subject "comp50-$i" --episodes 50 --compile
done

# 605 chat episodes compile to ~1000 memories (summaries plus profile facts).
record seed-ctx1k "$LG" seed --url "$URL" --pid "$SERVER_PID" --subject ctx1k --episodes 605 --compile
analyze
context_runs() { # size subject concurrency extra...
    local size=$1 subject=$2 conc=$3; shift 3
    record "context-hash-$size-max" load --scenario context --max-tokens "$CTX_TOKENS" --subject "$subject" --concurrency "$conc" "$@"
    record "context-hash-$size-fixed" load --scenario context --max-tokens "$CTX_TOKENS" --subject "$subject" --rate "$(half_rate)" --concurrency 64 "$@"
}
context_runs 1k ctx1k 4 --receipts false
record context-hash-1k-c1 load --scenario context --max-tokens "$CTX_TOKENS" --subject ctx1k --concurrency 1 --receipts false
record context-hash-1k-receipts-max load --scenario context --max-tokens "$CTX_TOKENS" --subject ctx1k --concurrency 4 --receipts true
record context-hash-1k-receipts-fixed load --scenario context --max-tokens "$CTX_TOKENS" --subject ctx1k --rate "$(half_rate)" --concurrency 64 --receipts true

if [ $BIG = 1 ]; then
    record seed-ctx10k "$LG" seed --url "$URL" --pid "$SERVER_PID" --subject ctx10k --episodes 6050 --round 1000 --compile
    analyze
    context_runs 10k ctx10k 4 --receipts false
    log "cloning ctx10k x10 into ctx100k (SQL)"
    T0=$(date +%s.%N)
    sql -v tenant=default -v src=ctx10k -v dst=ctx100k -v copies=10 -f bench/sql/clone_subject.sql >/dev/null
    analyze
    log "clone took $(echo "$(date +%s.%N) - $T0" | bc) s; memories: $(sql -Atc "SELECT count(*) FROM memories WHERE subject_id = 'ctx100k'")"
    context_runs 100k ctx100k 2 --receipts false
    record context-hash-100k-c1 load --scenario context --max-tokens "$CTX_TOKENS" --subject ctx100k --concurrency 1 --receipts false
fi

log "background: $BG episodes in other subjects (SQL)"
T0=$(date +%s.%N)
sql -v tenant=default -v src=ctx1k -v total="$BG" -f bench/sql/background_episodes.sql >/dev/null
analyze
EPISODES=$(sql -Atc "SELECT count(*) FROM episodes")
log "background took $(echo "$(date +%s.%N) - $T0" | bc) s; episodes in the database: $EPISODES"
echo "{\"cmd\":\"info\",\"label\":\"episodes-total\",\"episodes\":$EPISODES}" >> "$RES"
context_runs "1k-bg" ctx1k 4 --receipts false
record ingest-max-bg load --scenario ingest --subject ing --subjects 100 --concurrency 16 --seed 14
record ingest-fixed-1000-bg load --scenario ingest --subject ing --subjects 100 --rate 1000 --concurrency 64 --seed 15

record delete-10k "$LG" delete --url "$URL" --pid "$SERVER_PID" --prefix del --episodes 10000 --reps "$DEL_REPS"
if [ $BIG = 1 ]; then
    # A compiled subject: 6050 episodes, ~10k memories, their vectors and supersession records.
    T=$(curl -s -o /dev/null -w '%{time_total}' -X DELETE "$URL/v1/subjects/ctx10k")
    echo "{\"cmd\":\"delete\",\"label\":\"delete-ctx10k-compiled\",\"median_ms\":$(echo "$T * 1000" | bc)}" >> "$RES"
    log "delete ctx10k (compiled): $T s"
fi
stop_mnemo
limits -end

# ---------------------------------------------------------------- minilm
if [ $MINILM = 1 ]; then
    log "mnemo --embedder minilm"
    start_mnemo minilm
    record compile-minilm "$LG" seed --url "$URL" --pid "$SERVER_PID" --subject mini1k --episodes 605 --compile
    analyze
    record context-minilm-1k-max load --scenario context --max-tokens "$CTX_TOKENS" --subject mini1k --concurrency 2 --receipts false
    record context-minilm-1k-fixed load --scenario context --max-tokens "$CTX_TOKENS" --subject mini1k --rate "$(half_rate)" --concurrency 64 --receipts false
    # 20 distinct tasks, repeated: the task vector comes from the cache after the first call.
    record context-minilm-1k-cached-max load --scenario context --max-tokens "$CTX_TOKENS" --subject mini1k --concurrency 2 --tasks 20 --receipts false
    record context-minilm-1k-cached-fixed load --scenario context --max-tokens "$CTX_TOKENS" --subject mini1k --rate "$(half_rate)" --concurrency 64 --tasks 20 --receipts false
    record ingest-max-minilm load --scenario ingest --subject ing --subjects 100 --concurrency 16 --seed 16
    stop_mnemo
fi

jq -n --arg l "$(cut -d' ' -f1-3 /proc/loadavg)" --slurpfile m "$OUT/meta.json" '$m[0] + {loadavg_end: $l}' > "$OUT/meta.tmp" && mv "$OUT/meta.tmp" "$OUT/meta.json"
python3 bench/report.py "$OUT" > "$OUT/results.md"
log "done: $OUT/results.md"
cat "$OUT/results.md"
