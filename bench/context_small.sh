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
# Each round also measures the machine's floors with the same client counts: pgbench running one
# indexed SELECT that reads the subject's rows (bench/sql/pgbench_subject_rows.sql, one statement
# per transaction, -M prepared) and the trivial axum server (loadgen baseline-server,
# POST /echo). Prints per binary the median over rounds of p50 and of throughput, and of their
# ratios to the same round's floors.
set -euo pipefail
# Context calls ask for bundles of CTX_TOKENS tokens: 800 by default, the budget of issue 18's
# comparison (the API's default is 4000; bundles that large read the longest lanes).
CTX_TOKENS=${CTX_TOKENS:-800}
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

floors() { # round
    local db=ctx_${BINS[0]%%=*} c out
    for c in 1 8; do
        out=$(/usr/lib/postgresql/15/bin/pgbench -h "$SOCK" -U postgres -n -M prepared -c "$c" -j 2 -T "$DUR" \
            -f bench/sql/pgbench_subject_rows.sql "$db" 2>&1)
        jq -cn --argjson r "$1" --argjson c "$c" \
            --argjson tps "$(echo "$out" | sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p')" \
            --argjson lat "$(echo "$out" | sed -n 's/^latency average = \([0-9.]*\) ms/\1/p')" \
            '{bin: "pgbench-select", round: $r, conc: $c, throughput_rps: $tps, latency_ms: {p50: $lat}}' >> "$RES"
    done
    "$LG" baseline-server --addr 127.0.0.1:$((PORT + 1)) 2>/dev/null &
    local base=$!
    sleep 0.5
    for c in 1 8; do
        "$LG" load --url "http://127.0.0.1:$((PORT + 1))" --pid "$base" --scenario echo --path /echo \
            --concurrency "$c" --duration "$DUR" --warmup 2 --label "echo-c$c" \
            | jq -c --argjson r "$1" --argjson c "$c" '. + {bin: "axum-echo", round: $r, conc: $c}' >> "$RES"
    done
    kill "$base"; wait "$base" 2>/dev/null || true
    log "round $1 floors: $(jq -sc --argjson r "$1" '[.[] | select(.round == $r and (.bin == "pgbench-select" or .bin == "axum-echo")) | {bin, conc, rps: (.throughput_rps | floor), p50: .latency_ms.p50}]' "$RES")"
}

for round in $(seq "$ROUNDS"); do
    floors "$round"
    order=("${BINS[@]}")
    if [ $((round % 2)) = 0 ]; then
        order=(); for ((i=${#BINS[@]}-1; i>=0; i--)); do order+=("${BINS[$i]}"); done
    fi
    for nb in "${order[@]}"; do
        name=${nb%%=*}; bin=${nb#*=}
        serve "$name" "$bin"
        for c in 1 8; do
            line=$("$LG" load --url "$URL" --pid "$SERVER_PID" --scenario context --max-tokens "$CTX_TOKENS" --subject small --receipts false \
                --concurrency "$c" --duration "$DUR" --warmup 2 --label "context-c$c")
            echo "$line" | jq -c --arg n "$name" --argjson r "$round" --argjson c "$c" '. + {bin: $n, round: $r, conc: $c}' >> "$RES"
            log "round $round $name c=$c: $(echo "$line" | jq -c '{rps: (.throughput_rps | floor), p50: .latency_ms.p50, p99: .latency_ms.p99, err: .errors}')"
        done
        stop
    done
done

echo "| binary | connections | p50 ms (median; per round) | throughput req/s (median; per round) | p50 ÷ pgbench SELECT p50 | req/s ÷ pgbench SELECT tps | req/s ÷ axum echo req/s |"
echo "|---|---|---|---|---|---|---|"
for nb in "pgbench-select=" "axum-echo=" "${BINS[@]}"; do
    name=${nb%%=*}
    for c in 1 8; do
        jq -rs --arg n "$name" --argjson c "$c" '
            def med: sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
            def r2: . * 100 | round / 100;
            . as $all
            | [$all[] | select(.bin == $n and .conc == $c)] as $r
            | [$r[] | . as $x | ($all[] | select(.bin == "pgbench-select" and .conc == $c and .round == $x.round)) as $f
                | ($all[] | select(.bin == "axum-echo" and .conc == $c and .round == $x.round)) as $h
                | {p: ($x.latency_ms.p50 / $f.latency_ms.p50), t: ($x.throughput_rps / $f.throughput_rps),
                   h: ($x.throughput_rps / $h.throughput_rps)}] as $q
            | "| \($n) | \($c) | \([$r[].latency_ms.p50] | med | r2) (\([$r[].latency_ms.p50 | r2 | tostring] | join(", "))) | \([$r[].throughput_rps] | med | floor) (\([$r[].throughput_rps | floor | tostring] | join(", "))) | \([$q[].p] | med | r2) | \([$q[].t] | med | r2) | \([$q[].h] | med | r2) |"' "$RES"
    done
done | tee "$OUT/summary.md"
