#!/usr/bin/env bash
# Ingest and compile of one or more mnemo binaries against the machine's floor, measured in
# the same run (see bench/README.md, "Ingest and compile against the floor").
#
#   bench/ingest_compile.sh [--rounds N] [--dur S] [--compiles K] [--out DIR] NAME=BINARY...
#
# Each round measures the floor first (pgbench, one single-row INSERT per transaction, 16
# clients), then every binary in turn (the order alternates between rounds, so drift of a shared
# machine does not favour one): a fresh database, `mnemo serve` with the hash embedder, single-
# episode ingest at 16 connections for S seconds, then K subjects of 50 episodes each ingested
# and compiled (the time of the compile call). Prints medians per binary; the ingest ratio is
# taken per round against that round's floor, then the median of those ratios.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=3; DUR=10; COMPILES=5; OUT=""
BINS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS=$2; shift ;;
        --dur) DUR=$2; shift ;;
        --compiles) COMPILES=$2; shift ;;
        --out) OUT=$2; shift ;;
        *=*) BINS+=("$1") ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
[ ${#BINS[@]} -gt 0 ] || { echo "usage: $0 [--rounds N] [--dur S] [--compiles K] NAME=BINARY..." >&2; exit 2; }
OUT=${OUT:-target/bench/ab-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
RES="$OUT/results.jsonl"
: > "$RES"
LG=bench/loadgen/target/release/loadgen
[ -x "$LG" ] || (cd bench/loadgen && cargo build --release 2>&1 | tail -1 >&2)
PGBENCH=$(command -v pgbench || echo /usr/lib/postgresql/15/bin/pgbench)
PORT=18110
URL=http://127.0.0.1:$PORT
DATA=target/bench
FIRST=${BINS[0]#*=}

"$FIRST" pg start --data-dir "$DATA" >/dev/null
SOCK=$(cd "$DATA/postgres/sock" && pwd)
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -h "$SOCK" -U postgres)
log() { echo "[$(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)] $*" | tee -a "$OUT/run.log" >&2; }
fresh_db() { "${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1" 2>/dev/null; }

SERVER_PID=""
trap '[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; wait 2>/dev/null || true' EXIT

for round in $(seq "$ROUNDS"); do
    fresh_db mnemo_floor
    "${PSQL[@]}" -d mnemo_floor -f bench/sql/pgbench_setup.sql >/dev/null 2>&1
    out=$("$PGBENCH" -h "$SOCK" -U postgres -n -M prepared -c 16 -j 2 -T "$DUR" -f bench/sql/pgbench_insert.sql mnemo_floor 2>&1)
    tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p')
    echo "{\"cmd\":\"pgbench\",\"round\":$round,\"tps\":$tps}" >> "$RES"
    log "round $round: pgbench single-row INSERT $tps tps"
    order=("${BINS[@]}")
    if [ $((round % 2)) = 0 ]; then
        order=(); for ((i=${#BINS[@]}-1; i>=0; i--)); do order+=("${BINS[$i]}"); done
    fi
    for nb in "${order[@]}"; do
        name=${nb%%=*}; bin=${nb#*=}
        fresh_db mnemo_ab
        export MNEMO_DATABASE_URL="postgres://postgres@localhost/mnemo_ab?host=$SOCK"
        "$bin" migrate >/dev/null 2>&1
        MNEMO_ADDR=127.0.0.1:$PORT MNEMO_EMBEDDER=hash MNEMO_LOG=warn "$bin" serve >>"$OUT/mnemo-$name.log" 2>&1 &
        SERVER_PID=$!
        for _ in $(seq 120); do curl -sf "$URL/readyz" >/dev/null && break; sleep 0.5; done
        line=$("$LG" load --url "$URL" --pid "$SERVER_PID" --duration "$DUR" --warmup 2 --scenario ingest \
            --subject ing --subjects 100 --concurrency 16 --seed 11 --label ingest-max)
        echo "$line" | jq -c --arg n "$name" --argjson r "$round" '. + {bin: $n, round: $r}' >> "$RES"
        log "round $round $name: ingest $(echo "$line" | jq '.items_per_s | floor') episodes/s"
        for k in $(seq "$COMPILES"); do
            line=$("$LG" seed --url "$URL" --pid "$SERVER_PID" --subject "c50-$round-$k" --episodes 50 --compile \
                --label compile-50 2>/dev/null)
            echo "$line" | jq -c --arg n "$name" --argjson r "$round" '. + {bin: $n, round: $r}' >> "$RES"
        done
        log "round $round $name: compile 50 episodes (ms) $(jq -r --arg n "$name" --argjson r "$round" \
            'select(.label == "compile-50" and .bin == $n and .round == $r) | .compile_s * 1000 | floor' "$RES" | tr '\n' ' ')"
        kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""
    done
done

python3 - "$RES" <<'PY' | tee "$OUT/summary.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
floor = {r["round"]: r["tps"] for r in rows if r["cmd"] == "pgbench"}
names = list(dict.fromkeys(r["bin"] for r in rows if "bin" in r))
print(f"pgbench single-row INSERT, 16 clients (tps, per round): {', '.join(f'{floor[k]:.0f}' for k in sorted(floor))}")
print()
print("| binary | ingest 16 conn. (episodes/s, median) | ÷ floor (median of rounds) | rounds | compile 50 episodes (ms, median) | runs |")
print("|---|---|---|---|---|---|")
for n in names:
    ing = [r for r in rows if r.get("bin") == n and r["label"] == "ingest-max"]
    comp = [r["compile_s"] * 1000 for r in rows if r.get("bin") == n and r["label"] == "compile-50"]
    ratios = [r["items_per_s"] / floor[r["round"]] for r in ing]
    print(f"| {n} | {statistics.median(r['items_per_s'] for r in ing):.0f} | {statistics.median(ratios):.0%} | "
          f"{', '.join(f'{r:.0%}' for r in ratios)} | {statistics.median(comp):.1f} | {', '.join(f'{c:.0f}' for c in comp)} |")
PY
