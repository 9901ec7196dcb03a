#!/usr/bin/env bash
# An agent's loop on small subjects, for one or more mnemo binaries, alternated: one episode for
# a subject, then a context call on it (so every call follows a change of the subject), cycling
# over SUBJECTS subjects seeded with E compiled episodes each (bench/README.md, "Small subjects
# kept between calls").
#
#   bench/context_turns.sh [--rounds N] [--dur S] [--subjects K] [--episodes E] NAME=BINARY...
#
# Each binary gets a fresh database per round (the subjects grow during a run), seeded through
# its own server (loadgen seed --compile, hash embedder), then VACUUM ANALYZE; then loadgen's
# `turns` scenario runs closed loop with one client for S seconds after a 2 s warm-up, context
# calls of 800 tokens without receipts. Prints per binary and round the requests per second
# (episodes and context calls together), p50 and the CPU of mnemo and Postgres per request.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=2; DUR=8; SUBJECTS=20; EPISODES=50
BINS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS=$2; shift ;;
        --dur) DUR=$2; shift ;;
        --subjects) SUBJECTS=$2; shift ;;
        --episodes) EPISODES=$2; shift ;;
        *=*) BINS+=("$1") ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
[ ${#BINS[@]} -gt 0 ] || { echo "usage: $0 [--rounds N] [--dur S] NAME=BINARY..." >&2; exit 2; }
LG=${LOADGEN:-bench/loadgen/target/release/loadgen}
[ -x "$LG" ] || (cd bench/loadgen && cargo build --release 2>&1 | tail -1 >&2)
PORT=18150
URL=http://127.0.0.1:$PORT
DATA=target/bench
"${BINS[0]#*=}" pg start --data-dir "$DATA" >/dev/null
SOCK=$(cd "$DATA/postgres/sock" && pwd)
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -h "$SOCK" -U postgres)
SERVER_PID=""
trap '[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; wait 2>/dev/null || true' EXIT

echo "| binary | round | requests/s | p50 ms | mnemo CPU ms/request | Postgres CPU ms/request |"
echo "|---|---|---|---|---|---|"
for round in $(seq 1 "$ROUNDS"); do
    order=("${BINS[@]}")
    if [ $((round % 2)) -eq 0 ]; then order=($(printf '%s\n' "${BINS[@]}" | tac)); fi
    for nb in "${order[@]}"; do
        name=${nb%%=*}; bin=${nb#*=}
        db=turns_$name
        "${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" 2>/dev/null
        MNEMO_DATABASE_URL="postgres://postgres@localhost/$db?host=$SOCK" MNEMO_ADDR=127.0.0.1:$PORT \
            MNEMO_EMBEDDER=hash MNEMO_LOG=warn "$bin" serve >/dev/null 2>&1 &
        SERVER_PID=$!
        for _ in $(seq 1 100); do curl -sf "$URL/healthz" >/dev/null && break; sleep 0.2; done
        for k in $(seq 0 $((SUBJECTS - 1))); do
            "$LG" seed --url "$URL" --subject "turn-$k" --episodes "$EPISODES" --compile --label seed >/dev/null 2>&1
        done
        "${PSQL[@]}" -d "$db" -c "VACUUM ANALYZE" 2>/dev/null
        line=$("$LG" load --url "$URL" --pid "$SERVER_PID" --scenario turns --subject turn --subjects "$SUBJECTS" \
            --max-tokens 800 --receipts false --concurrency 1 --duration "$DUR" --warmup 2 --label turns)
        echo "$line" | jq -r --arg n "$name" --arg r "$round" \
            '"| \($n) | \($r) | \(.throughput_rps | floor) | \(.latency_ms.p50) | \((.machine.cpu_cores.mnemo / .throughput_rps * 1000 * 1000 | floor) / 1000) | \((.machine.cpu_cores.postgres / .throughput_rps * 1000 * 1000 | floor) / 1000) |"'
        kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""
    done
done
