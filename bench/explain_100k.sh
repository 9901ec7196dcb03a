#!/usr/bin/env bash
# Prints the query plans (auto_explain: actual rows, times, buffers) of real context calls on a
# 100k-memory subject: the in-process bench builds a 10k subject with the chosen embedder, clones
# it 10 times in SQL (bench/sql/clone_subject.sql) and runs two calls as mnemo_app under
# row-level security. The database is kept (mnemo_explain_<embedder>), so a second run only explains.
# Usage: bench/explain_100k.sh [hash|minilm]
set -euo pipefail
cd "$(dirname "$0")/.."
EMBEDDER=${1:-hash}
cargo build --release --example bench
target/release/examples/bench context --embedder "$EMBEDDER" --sizes 10000 --grow 10 --explain \
  --db "mnemo_explain_$EMBEDDER"
