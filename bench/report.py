#!/usr/bin/env python3
"""Turns a bench/run.sh output directory (results.jsonl, meta.json) into markdown tables."""
import json
import statistics
import sys
from pathlib import Path

out = Path(sys.argv[1])
meta = json.loads((out / "meta.json").read_text())
rows = [json.loads(l) for l in (out / "results.jsonl").read_text().splitlines() if l.strip()]


def get(label):
    return [r for r in rows if r.get("label") == label]


def one(label):
    r = get(label)
    return r[-1] if r else None


def f(x, nd=1):
    if x is None:
        return "–"
    if isinstance(x, float) and x != x:
        return "–"
    if isinstance(x, (int, float)) and abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.{nd}f}" if isinstance(x, float) else str(x)


def lat(r, p):
    return r["latency_ms"][p] if r else None


def limit(label, key):
    """Mean of the start and end measurements of a machine limit, and the two values."""
    vals = [r[key] if key in r else r["throughput_rps"] for lab in (label + "-start", label + "-end") for r in get(lab)]
    return (statistics.mean(vals), vals) if vals else (None, [])


pgb_tps, pgb_vals = limit("pgbench-insert", "tps")
pgbe_tps, pgbe_vals = limit("pgbench-episode-sql", "tps")
axum_rps, axum_vals = limit("axum-get", "throughput_rps")
echo_rps, _ = limit("axum-echo", "throughput_rps")
pgb = {"tps": pgb_tps} if pgb_tps else None
pgbe = {"tps": pgbe_tps} if pgbe_tps else None
axum = {"throughput_rps": axum_rps} if axum_rps else None
ingest = one("ingest-max")
ingest_fixed = one("ingest-fixed-1000")
compile_hash = [r["compile_memories_per_s"] for r in get("compile-hash")]
compile_minilm = one("compile-minilm")
compile_50 = [r["compile_s"] * 1000 for r in get("compile-hash-50")]
ctx1k_max = one("context-hash-1k-max")
ctx1k_fixed = one("context-hash-1k-fixed")
ctx1k_c1 = one("context-hash-1k-c1")
ctx100k_fixed = one("context-hash-100k-fixed")
ctx100k_c1 = one("context-hash-100k-c1")
mini_fixed = one("context-minilm-1k-fixed")
mini_cached = one("context-minilm-1k-cached-fixed")
delete = one("delete-10k")
minilm_rss = [r["machine"]["rss_peak_mib"] for r in rows if "minilm" in r.get("label", "") and "machine" in r]
all_rss = [r.get("machine", {}).get("rss_peak_mib", 0) for r in rows if r.get("label", "").startswith(("ingest", "batch", "context", "compile", "seed", "delete", "mnemo"))]


def check(value, target, higher=True):
    if value is None:
        return "not run"
    return "**met**" if (value >= target if higher else value < target) else "missed"


targets = []
if ingest:
    targets.append(("Ingest, 16 clients (episodes/s)", "≥ 3,000", f(ingest["items_per_s"]), check(ingest["items_per_s"], 3000)))
if ingest and pgb:
    ratio = ingest["items_per_s"] / pgb["tps"]
    targets.append(("Ingest, 16 clients ÷ pgbench single-row INSERT tps (same run)", "≥ 50%", f"{ratio:.0%} ({f(ingest['items_per_s'])} ÷ {f(pgb['tps'])})", check(ratio, 0.5)))
if ingest and pgbe:
    targets.append(("(context) Ingest ÷ the same episode INSERT sent as SQL by pgbench", "–", f"{ingest['items_per_s'] / pgbe['tps']:.0%} ({f(ingest['items_per_s'])} ÷ {f(pgbe['tps'])})", "info"))
if ingest_fixed:
    targets.append(("Ingest p99 at a fixed 1,000 req/s (ms)", "< 10", f"{f(lat(ingest_fixed, 'p99'), 2)} (p50 {f(lat(ingest_fixed, 'p50'), 2)}, {f(ingest_fixed['throughput_rps'])} req/s done, {ingest_fixed['errors']} errors)", check(lat(ingest_fixed, "p99"), 10, False)))
if ctx1k_fixed:
    targets.append(("Context hash 1k memories: p50 (ms)", "< 3", f"{f(lat(ctx1k_fixed, 'p50'), 2)} at {f(ctx1k_fixed['rate_target'])} req/s fixed; {f(lat(ctx1k_c1, 'p50'), 2) if ctx1k_c1 else '–'} with 1 client", check(lat(ctx1k_fixed, "p50"), 3, False)))
if ctx1k_max:
    targets.append(("Context hash 1k memories: throughput (req/s)", "≥ 800", f(ctx1k_max["throughput_rps"]), check(ctx1k_max["throughput_rps"], 800)))
targets.append(("Context hash 100k memories: p50 (ms)", "< 10", f"{f(lat(ctx100k_fixed, 'p50'), 1)} at {f(ctx100k_fixed['rate_target'])} req/s fixed; {f(lat(ctx100k_c1, 'p50'), 1) if ctx100k_c1 else '–'} with 1 client" if ctx100k_fixed else "–", check(lat(ctx100k_fixed, "p50") if ctx100k_fixed else None, 10, False)))
if mini_fixed:
    targets.append(("Context minilm 1k: p50, new task each call (ms)", "< 15", f"{f(lat(mini_fixed, 'p50'), 1)} at {f(mini_fixed['rate_target'])} req/s", check(lat(mini_fixed, "p50"), 15, False)))
if mini_cached:
    targets.append(("Context minilm 1k: p50, repeated tasks (cached vector) (ms)", "< 15", f"{f(lat(mini_cached, 'p50'), 1)} at {f(mini_cached['rate_target'])} req/s", check(lat(mini_cached, "p50"), 15, False)))
if compile_minilm:
    targets.append(("Compile minilm (memories/s)", "≥ 150", f(compile_minilm["compile_memories_per_s"]), check(compile_minilm["compile_memories_per_s"], 150)))
if compile_hash:
    m = statistics.median(compile_hash)
    targets.append(("Compile hash (memories/s, median)", "≥ 5,000", f"{f(m)} (runs: {', '.join(f(x) for x in compile_hash)})", check(m, 5000)))
if compile_50:
    m = statistics.median(compile_50)
    targets.append(("Compile hash, 50 episodes (ms, median)", "≤ 20", f"{f(m, 1)} (runs: {', '.join(f(x, 1) for x in compile_50)})", "**met**" if m <= 20 else "missed"))
if delete:
    targets.append(("Delete a subject with 10k episodes (ms, median)", "< 20", f"{f(delete['median_ms'])} (runs: {', '.join(f(x) for x in delete['delete_ms'])})", check(delete["median_ms"], 20, False)))
if minilm_rss:
    targets.append(("mnemo peak RSS under load, model loaded (MiB)", "< 300", f"{f(max(minilm_rss))} (hash embedder: {f(max(all_rss)) if all_rss else '–'})", check(max(minilm_rss), 300, False)))

print(f"Run {meta['date_utc']} ({'quick' if meta['quick'] else 'full'}; {meta['duration_s']} s measured after {meta['warmup_s']} s warm-up per run), "
      f"{meta['os']}, {meta['nproc']} cores ({meta['cpu']}), {meta['mem_gib']} GiB, PostgreSQL {meta['postgres']} "
      f"({meta['durability']}), mnemo {meta['mnemo_commit']}. Load average at start {meta['loadavg_start']}, at end {meta.get('loadavg_end', '?')}.")
print()
print("| target | goal | measured | |")
print("|---|---|---|---|")
for t in targets:
    print("| " + " | ".join(t) + " |")
print()
print("Machine limits measured in the same run:")
print()
def both(vals):
    return " and ".join(f(v) for v in vals)


if pgb:
    print(f"- pgbench, single-row INSERT transactions into a plain table, 16 clients: **{f(pgb['tps'])} tps** (mean of {both(pgb_vals)}, at the start and after the hash phase)")
if pgbe:
    print(f"- pgbench, mnemo's episode INSERT as one SQL statement (counter upsert + `episodes` row with its tsvector and indexes), 16 clients: **{f(pgbe['tps'])} tps** ({both(pgbe_vals)})")
if axum:
    hz = one("mnemo-healthz")
    extra = f"; mnemo's `/healthz` through its middleware: {f(hz['throughput_rps'])} req/s ({hz['throughput_rps'] / axum['throughput_rps']:.0%})" if hz else ""
    print(f"- trivial axum handler, 16 connections: **{f(axum['throughput_rps'])} req/s** ({both(axum_vals)}; JSON echo {f(echo_rps)}){extra}")
tot = one("episodes-total")
if tot:
    print(f"- episodes in the database for the `-bg` runs: {tot['episodes']:,}")
print()
print("All runs (latency in ms, nearest rank; fixed-rate latency counts from each request's intended send time; "
      "CPU in cores: mnemo / all postgres processes / load generator / whole machine including other users):")
print()
print("| run | mode | conc. | target req/s | done req/s | items/s | p50 | p90 | p99 | max | errors | peak RSS MiB | CPU m/pg/lg/all | load |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    if r["cmd"] == "load":
        c = r["machine"]["cpu_cores"]
        L = r["latency_ms"]
        print(f"| {r['label']} | {r['mode'].replace('_', ' ')} | {r['concurrency']} | {f(r['rate_target']) if r['rate_target'] else '–'} | "
              f"{f(r['throughput_rps'])} | {f(r['items_per_s']) if r['items_per_request'] > 1 else ''} | {f(L['p50'], 2)} | {f(L['p90'], 2)} | "
              f"{f(L['p99'], 2)} | {f(L['max'], 1)} | {r['errors']} | {f(r['machine']['rss_peak_mib'])} | "
              f"{c['mnemo']:.2f} / {c['postgres']:.2f} / {c['loadgen']:.2f} / {c['machine_busy']:.2f} | {f(r['machine']['loadavg_end'], 2)} |")
print()
seeds = [r for r in rows if r["cmd"] == "seed"]
if seeds:
    print("Ingest + compile (batch ingest of 100 episodes per request, 2 in flight; sync compile loop):")
    print()
    print("| run | subject | episodes | ingest ep/s | memories | compile s | memories/s | episodes/s | peak RSS MiB | CPU m/pg |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in seeds:
        c = r["machine"]["cpu_cores"]
        print(f"| {r['label']} | {r['subject']} | {r['episodes']} | {f(r['ingest_episodes_per_s'])} | {r['memories']} | {f(r['compile_s'], 2)} | "
              f"{f(r['compile_memories_per_s'])} | {f(r['compile_episodes_per_s'])} | {f(r['machine']['rss_peak_mib'])} | {c['mnemo']:.2f} / {c['postgres']:.2f} |")
    print()
dels = [r for r in rows if r["cmd"] == "delete"]
if dels:
    print("Delete: " + "; ".join(f"{r['label']}: median {f(r['median_ms'])} ms" + (f" (runs {', '.join(f(x) for x in r['delete_ms'])})" if "delete_ms" in r else "") for r in dels))
