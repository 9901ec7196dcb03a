#!/usr/bin/env bash
# Runs `bench locomo` in-process once per setting (one `--set` value per line on stdin), keeps
# each run's output in DIR, then cross-validates the settings across conversations (bench/cv.py).
#   printf '%s\n' "" "sem=0.6,lex=0.4" "sem=0.4,lex=0.6" | bench/locomo_grid.sh DIR [--budgets 2000,4000]
# The first run ingests the dev set into the kept database `locomo`; later runs reuse it.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: locomo_grid.sh DIR [bench flags]}
shift
mkdir -p "$dir"
B=target/release/examples/bench
i=0
while IFS= read -r set; do
  i=$((i + 1))
  out="$dir/run-$i.txt"
  if [ -n "$set" ]; then
    "$B" locomo --db locomo "$@" --set "$set" > "$out"
  else
    "$B" locomo --db locomo "$@" > "$out"
  fi
  grep '^RESULT' "$out" | cut -c1-200
done
python3 bench/cv.py --budgets 2000 "$dir"/run-*.txt
