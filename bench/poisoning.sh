#!/usr/bin/env bash
# Memory poisoning benchmark (issue 49): AgentDojo's public injection set against a running mnemo.
#
#   bench/poisoning.sh [--cases N] [--out FILE]
#
# Downloads the agentdojo wheel from PyPI (data only: nothing of it runs but its YAML and the
# literal strings of its attack and task files, read by bench/poisoning.py), starts mnemo
# (target/release/mnemo if built, else target/debug/mnemo) on a private data dir with the
# MiniLM embedder, runs the cases and prints the figures (see bench/README.md, "Poisoning").
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
WORK=target/bench/poisoning
mkdir -p "$WORK"
if [ ! -d "$WORK/agentdojo/agentdojo" ]; then
  python3 -m pip download --no-deps -q agentdojo==0.1.35 -d "$WORK/wheel"
  python3 -m zipfile -e "$WORK"/wheel/agentdojo-0.1.35-py3-none-any.whl "$WORK/agentdojo"
fi
MNEMO=target/release/mnemo
[ -x "$MNEMO" ] || MNEMO=target/debug/mnemo
[ -x "$MNEMO" ] || { echo "build mnemo first (cargo build --release)" >&2; exit 1; }
PORT=${PORT:-18177}
DATA=$(mktemp -d /tmp/mnemo-poison.XXXXXX)
chmod 755 "$DATA"
cleanup() {
  [ -n "${PID:-}" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  "$MNEMO" pg stop --data-dir "$DATA/postgres" >/dev/null 2>&1 || true
  rm -rf "$DATA"
}
trap cleanup EXIT
MNEMO_ADDR=127.0.0.1:$PORT MNEMO_DATA_DIR=$DATA MNEMO_LOG=warn \
  MNEMO_MODEL_DIR=${MNEMO_MODEL_DIR:-$ROOT/.mnemo/models/all-MiniLM-L6-v2} \
  "$MNEMO" serve > "$WORK/server.log" 2>&1 &
PID=$!
for _ in $(seq 1 120); do
  curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
  sleep 1
done
python3 bench/poisoning.py "$WORK/agentdojo" --base "http://127.0.0.1:$PORT" "$@"
