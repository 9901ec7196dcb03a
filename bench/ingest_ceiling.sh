#!/usr/bin/env bash
# What Postgres alone can ingest with mnemo's grouped statement, beside the floor, in one run (see
# bench/README.md, "Ingest: the ceiling of the grouped statement without mnemo").
#
#   bench/ingest_ceiling.sh [--rounds N] [--dur S] [--rows "8 16"] [--clients "1 2 3"] BINARY
#
# BINARY (a mnemo build) starts the bench cluster and migrates a fresh database. Each round
# measures the floor (pgbench's single-row INSERT, 16 clients, as bench/run.sh does), then
# pgbench running the statement a writer of `services::group_commit` sends for a group of R
# single episodes of R distinct subjects (`db::episodes::insert_batch` without idempotency keys:
# the counter upsert and the episodes insert in one statement, the episode of
# bench/sql/pgbench_episode.sql in every row), from C clients, for every R and C given. For each
# run it reports episodes/s and the machine's busy cores from /proc/stat over the run (pgbench's
# own CPU included, a few percent), so the CPU a stored episode costs Postgres can be read off.
# Keep the statement in step with `db::episodes::insert_batch` when that changes.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=2; DUR=8; ROWS="8 16"; CLIENTS="1 2 3"; OUT=""
BIN=""
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS=$2; shift ;;
        --dur) DUR=$2; shift ;;
        --rows) ROWS=$2; shift ;;
        --clients) CLIENTS=$2; shift ;;
        --out) OUT=$2; shift ;;
        -*) echo "unknown argument $1" >&2; exit 2 ;;
        *) BIN=$1 ;;
    esac
    shift
done
[ -n "$BIN" ] || { echo "usage: $0 [--rounds N] [--dur S] [--rows \"8 16\"] [--clients \"1 2 3\"] BINARY" >&2; exit 2; }
OUT=${OUT:-target/bench/ceiling-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
RES="$OUT/results.jsonl"
: > "$RES"
PGBENCH=$(command -v pgbench || echo /usr/lib/postgresql/15/bin/pgbench)
DATA=target/bench

"$BIN" pg start --data-dir "$DATA" >/dev/null
SOCK=$(cd "$DATA/postgres/sock" && pwd)
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -h "$SOCK" -U postgres)
log() { echo "[$(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)] $*" | tee -a "$OUT/run.log" >&2; }
fresh_db() { "${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1" 2>/dev/null; }
# Busy and idle jiffies of the whole machine.
jiffies() { awk '/^cpu /{print $2+$3+$4+$7+$8, $5+$6}' /proc/stat; }

# The grouped statement for R rows, as pgbench script files (literal arrays; with -M prepared
# they are planned once, as mnemo's prepared statement is).
PAYLOAD=$(sed -n "s/.*'\({\"messages\"[^']*}\)'.*/\1/p" bench/sql/pgbench_episode.sql)
for r in $ROWS; do
    python3 - "$r" "$PAYLOAD" > "$OUT/group-$r.sql" <<'PY'
import sys
n, payload = int(sys.argv[1]), sys.argv[2]
arr = lambda v, t: "ARRAY[" + ",".join([v] * n) + f"]::{t}[]"
subjects = "ARRAY[" + ",".join(f"'pgbg-' || ((:s + {i}) % 100)" for i in range(n)) + "]::text[]"
print("\\set s random(0, 99)")
ones = arr("1", "int8")
# R distinct subjects in byte order (what SeqPlaces sends), each with one row at place 1.
print(
    "WITH mnemo_tenant AS MATERIALIZED (SELECT set_config('mnemo.tenant', 'default', true) AS tenant), "
    "c AS (INSERT INTO subject_counters AS sc (tenant_id, subject_id, last_seq) "
    f"SELECT 'default', s.subject_id, s.n FROM UNNEST({subjects}, {ones}) WITH ORDINALITY AS s(subject_id, n, o), "
    "mnemo_tenant ORDER BY s.subject_id "
    "ON CONFLICT (tenant_id, subject_id) DO UPDATE SET last_seq = sc.last_seq + EXCLUDED.last_seq "
    "RETURNING sc.subject_id, sc.last_seq) "
    "INSERT INTO episodes (tenant_id, subject_id, id, session_id, source, type, payload, metadata, provenance, occurred_at, seq, "
    "search_tsv) "
    "SELECT 'default', u.subject_id, u.id, u.session_id, u.source, u.kind, u.payload, u.metadata, u.provenance, "
    "COALESCE(u.occurred_at, now()), c.last_seq - u.n + u.place, mnemo_episode_lexemes(u.payload) "
    f"FROM UNNEST({arr('gen_random_uuid()', 'uuid')}, {subjects}, {arr(chr(39) + 's00001' + chr(39), 'text')}, "
    f"{arr(chr(39) + 'chat' + chr(39), 'text')}, {arr(chr(39) + 'message' + chr(39), 'text')}, "
    f"{arr(chr(39) + payload + chr(39), 'jsonb')}, {arr(chr(39) + '{}' + chr(39), 'jsonb')}, "
    f"{arr(chr(39) + '{}' + chr(39), 'jsonb')}, {arr('NULL', 'timestamptz')}, {ones}, {ones}) WITH ORDINALITY "
    "AS u(id, subject_id, session_id, source, kind, payload, metadata, provenance, occurred_at, n, place, ord) "
    "JOIN c ON c.subject_id = u.subject_id ORDER BY u.ord "
    "RETURNING id, occurred_at, created_at;"
)
PY
done

# One pgbench run; appends its JSON line. Args: label rows clients script database.
run() {
    local label=$1 rows=$2 clients=$3 script=$4 db=$5 b1 i1 b2 i2 out tps
    read -r b1 i1 < <(jiffies)
    out=$("$PGBENCH" -h "$SOCK" -U postgres -n -M prepared -c "$clients" -j "$clients" -T "$DUR" -f "$script" "$db" 2>&1)
    read -r b2 i2 < <(jiffies)
    tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p')
    [ -n "$tps" ] || { echo "$out" >&2; exit 1; }
    python3 -c 'import json,sys; l,r,c,t,b,i=sys.argv[1:7]; r,c,t,b,i=int(r),int(c),float(t),float(b),float(i); cores=2*b/(b+i) if b+i else 0; eps=t*r; print(json.dumps({"label":l,"round":int(sys.argv[7]),"rows":r,"clients":c,"tps":t,"episodes_s":eps,"busy_cores":cores,"cpu_us_per_episode":cores/eps*1e6}))' \
        "$label" "$rows" "$clients" "$tps" "$((b2 - b1))" "$((i2 - i1))" "$round" >> "$RES"
    log "round $round: $label rows=$rows clients=$clients: $(tail -1 "$RES" | jq -r '"\(.episodes_s|floor) episodes/s, \(.busy_cores*100|floor/100) busy cores"')"
}

for round in $(seq "$ROUNDS"); do
    fresh_db mnemo_floor
    "${PSQL[@]}" -d mnemo_floor -f bench/sql/pgbench_setup.sql >/dev/null 2>&1
    run floor 1 16 bench/sql/pgbench_insert.sql mnemo_floor
    fresh_db mnemo_ceiling
    "$BIN" migrate --database-url "postgres://postgres@localhost/mnemo_ceiling?host=$SOCK" >/dev/null 2>&1
    for r in $ROWS; do
        for c in $CLIENTS; do
            run grouped "$r" "$c" "$OUT/group-$r.sql" mnemo_ceiling
        done
    done
done

python3 - "$RES" <<'PY' | tee "$OUT/summary.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
floor = {r["round"]: r["episodes_s"] for r in rows if r["label"] == "floor"}
med = statistics.median
print(f"pgbench single-row INSERT, 16 clients (tps, per round): {', '.join(f'{floor[k]:.0f}' for k in sorted(floor))}")
print()
print("| rows a statement | clients | episodes/s (median) | ÷ floor (median of rounds) | busy cores | machine CPU µs / episode |")
print("|---|---|---|---|---|---|")
keys = sorted({(r["rows"], r["clients"]) for r in rows if r["label"] == "grouped"})
for k in keys:
    g = [r for r in rows if r["label"] == "grouped" and (r["rows"], r["clients"]) == k]
    print(f"| {k[0]} | {k[1]} | {med(r['episodes_s'] for r in g):,.0f} | {med(r['episodes_s'] / floor[r['round']] for r in g):.0%} | "
          f"{med(r['busy_cores'] for r in g):.2f} | {med(r['cpu_us_per_episode'] for r in g):.0f} |")
f = [r for r in rows if r["label"] == "floor"]
print(f"| floor (1 row, own table) | 16 | {med(r['episodes_s'] for r in f):,.0f} | 100% | {med(r['busy_cores'] for r in f):.2f} | {med(r['cpu_us_per_episode'] for r in f):.0f} |")
PY
