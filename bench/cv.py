#!/usr/bin/env python3
"""Leave-one-conversation-out cross-validation over `bench locomo` runs.

Reads the `RESULT {...}` lines that `cargo run --release --example bench -- locomo --set ...`
prints (one per setting, from any number of files or stdin), and for each conversation picks
the setting with the most hits on the *other* conversations (summed over the budgets given),
then scores that setting on the held-out conversation. Prints the held-out recall per budget
(the figure to report) beside the best in-sample one, and which setting each fold chose.

    python3 bench/cv.py --budgets 2000,4000 runs/*.txt
"""
import argparse
import json
import sys
from collections import defaultdict


def load(paths):
    runs = []
    for path in paths or ["-"]:
        f = sys.stdin if path == "-" else open(path, encoding="utf-8")
        for line in f:
            if line.startswith("RESULT "):
                runs.append(json.loads(line[len("RESULT "):]))
    return runs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--budgets", default="2000", help="budgets whose hits choose a setting, e.g. 2000,4000")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    choose_by = args.budgets.split(",")
    runs = load(args.files)
    if not runs:
        sys.exit("cv: no RESULT lines")
    # hits[run][(budget, conv)] = (hits, questions)
    table = []
    for r in runs:
        cells = {}
        for key, (h, n) in r["per_conversation"].items():
            b, c = key.split("/", 1)
            cells[(b, c)] = (h, n)
        table.append((r["variant"], cells))
    budgets = sorted({b for _, cells in table for b, _ in cells}, key=int)
    convs = sorted({c for _, cells in table for _, c in cells})
    held = defaultdict(lambda: [0, 0])
    for k in convs:
        def train(cells):
            return sum(cells.get((b, c), (0, 0))[0] for b in choose_by for c in convs if c != k)
        name, cells = max(table, key=lambda t: train(t[1]))
        print(f"fold {k}: chose {name}")
        for b in budgets:
            h, n = cells.get((b, k), (0, 0))
            held[b][0] += h
            held[b][1] += n
    print("\n| budget | held-out recall | best single setting (in-sample) |")
    print("|---|---|---|")
    for b in budgets:
        best = max(table, key=lambda t: sum(t[1].get((b, c), (0, 0))[0] for c in convs))
        bh = sum(best[1].get((b, c), (0, 0))[0] for c in convs)
        bn = sum(best[1].get((b, c), (0, 0))[1] for c in convs)
        h, n = held[b]
        print(f"| {b} | {h / max(n, 1):.3f} ({h}/{n}) | {bh / max(bn, 1):.3f} ({best[0]}) |")


if __name__ == "__main__":
    main()
