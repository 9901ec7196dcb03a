#!/usr/bin/env bash
# Context calls on a small subject for one or more mnemo binaries, alternated (see bench/README.md,
# "Context on a small subject: one transaction per call").
#
#   bench/context_small.sh [--rounds N] [--dur S] [--episodes E] [--out DIR] NAME=BINARY...
#
# Each binary gets its own fresh database (a binary refuses a database migrated by a newer one),
# seeded once through its own server with the same deterministic E chat episodes (loadgen seed
# --compile, hash embedder), then VACUUM ANALYZE (calls before the first analyse run on plans
# without statistics). Each round then serves every binary in turn (the order alternates between
# rounds: the machine is shared and its load drifts) and measures context calls without receipts,
# closed loop, 1 client and then 8 connections, S seconds each after a 2 s warm-up.
# Prints per binary the median over rounds of p50 and of throughput.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=4; DUR=10; EPISODES=50; OUT=""
BINS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS=$2; shift ;;
        --dur) DUR=$2; shift ;;
        --episodes) EPISODES=$2; shift ;;
        --out) OUT=$2; shift ;;
        *=*) BINS+=("$1") ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
[ ${#BINS[@]} -gt 0 ] || { echo "usage: $0 [--rounds N] [--dur S] [--episodes E] NAME=BINARY..." >&2; exit 2; }
OUT=${OUT:-target/bench/ctx-small-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
RES="$OUT/results.jsonl"
: > "$RES"
LG=${LOADGEN:-bench/loadgen/target/release/loadgen}
[ -x "$LG" ] || (cd bench/loadgen && cargo build --release 2>&1 | tail -1 >&2)
PORT=18120
URL=http://127.0.0.1:$PORT
DATA=target/bench
FIRST=${BINS[0]#*=}

"$FIRST" pg start --data-dir "$DATA" >/dev/null
SOCK=$(cd "$DATA/postgres/sock" && pwd)
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -h "$SOCK" -U postgres)
log() { echo "[$(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)] $*" | tee -a "$OUT/run.log" >&2; }

SERVER_PID=""
trap '[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; wait 2>/dev/null || true' EXIT

serve() { # name binary
    export MNEMO_DATABASE_URL="postgres://postgres@localhost/ctx_$1?host=$SOCK"
    MNEMO_ADDR=127.0.0.1:$PORT MNEMO_EMBEDDER=hash MNEMO_LOG=warn "$2" serve >>"$OUT/mnemo-$1.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 120); do curl -sf "$URL/readyz" >/dev/null && return 0; sleep 0.5; done
    log "$1 did not become ready"; exit 1
}
stop() { kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""; }

for nb in "${BINS[@]}"; do
    name=${nb%%=*}; bin=${nb#*=}
    "${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS ctx_$name" -c "CREATE DATABASE ctx_$name" 2>/dev/null
    serve "$name" "$bin"
    "$LG" seed --url "$URL" --subject small --episodes "$EPISODES" --compile --label seed >/dev/null
    stop
    "${PSQL[@]}" -d "ctx_$name" -c "VACUUM ANALYZE" 2>/dev/null
    log "$name: seeded $EPISODES episodes, $("${PSQL[@]}" -d "ctx_$name" -Atc "SELECT count(*) FROM memories") memories"
done

for round in $(seq "$ROUNDS"); do
    order=("${BINS[@]}")
    if [ $((round % 2)) = 0 ]; then
        order=(); for ((i=${#BINS[@]}-1; i>=0; i--)); do order+=("${BINS[$i]}"); done
    fi
    for nb in "${order[@]}"; do
        name=${nb%%=*}; bin=${nb#*=}
        serve "$name" "$bin"
        for c in 1 8; do
            line=$("$LG" load --url "$URL" --pid "$SERVER_PID" --scenario context --subject small --receipts false \
                --concurrency "$c" --duration "$DUR" --warmup 2 --label "context-c$c")
            echo "$line" | jq -c --arg n "$name" --argjson r "$round" --argjson c "$c" '. + {bin: $n, round: $r, conc: $c}' >> "$RES"
            log "round $round $name c=$c: $(echo "$line" | jq -c '{rps: (.throughput_rps | floor), p50: .latency_ms.p50, p99: .latency_ms.p99, err: .errors}')"
        done
        stop
    done
done

echo "| binary | connections | p50 ms (median; per round) | throughput req/s (median; per round) |"
echo "|---|---|---|---|"
for nb in "${BINS[@]}"; do
    name=${nb%%=*}
    for c in 1 8; do
        jq -rs --arg n "$name" --argjson c "$c" '
            [.[] | select(.bin == $n and .conc == $c)] as $r
            | def med: sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
            "| \($n) | \($c) | \([$r[].latency_ms.p50] | med) (\([$r[].latency_ms.p50 | tostring] | join(", "))) | \([$r[].throughput_rps] | med | floor) (\([$r[].throughput_rps | floor | tostring] | join(", "))) |"' "$RES"
    done
done | tee "$OUT/summary.md"
