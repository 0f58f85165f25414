#!/usr/bin/env python3
"""Files a gpu-check summary under bench/results/MACHINE/ and rewrites bench/RESULTS.md.

usage: scripts/record_results.py SUMMARY.json MACHINE [--command "..."]
       scripts/record_results.py --regenerate     (only rewrites bench/RESULTS.md)
MACHINE names the folder (h200x2, h100x1, ...). RESULTS.md is regenerated from every summary
under bench/results: one table per benchmark, newest run per machine.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def pingpong_rows(machine, summary):
    """Latency rows. Two PEs sharing one GPU time-slice it: their round trip measures the time
    slice, not a latency, so those pairs are listed apart (shared_gpu_pairs) and not as rows."""
    pp = summary.get("benchmarks", {}).get("pingpong.json")
    if not pp:
        return []
    return [f"| {machine} | {pp['pe_kind']} | {r['a']}->{r['b']} | {r['bytes']} | {r['one_way_us']:.3f} |"
            for r in pp["results"] if not r.get("shared_gpu")]


def shared_gpu_pairs(machine, summary):
    pp = summary.get("benchmarks", {}).get("pingpong.json")
    if not pp:
        return []
    return [f"{machine} {r['a']}->{r['b']}" for r in pp["results"] if r.get("shared_gpu")]


# Older summaries name the source papers by their file numbers; the repository cites them by name.
LEGACY_NAMES = {"seed 001's 4.5x": "GPUrdma's 4.5x", "seed 003": "ComP-Net"}


def cite(text):
    for a, b in LEGACY_NAMES.items():
        text = text.replace(a, b)
    return text


def match_tables(machine, summary):
    m = summary.get("benchmarks", {}).get("match.json")
    if not m or m.get("gpu_skipped"):
        return []
    rows = m["matching"]
    lengths = sorted({r["length"] for r in rows})
    engines = ["cpu_list", "mpi", "no_unexpected", "partitioned", "hash"]
    out = [f"### Matching rate on {machine} ({m.get('device', '?')}), average order, matches/s", "",
           "| length | mult | " + " | ".join(engines) + " | mpi / cpu_list |",
           "|---|---|" + "---|" * (len(engines) + 1)]
    for length in lengths:
        for mult in sorted({r["multiplicity"] for r in rows}):
            val = {}
            for e in engines:
                v = [r["matches_per_s"] for r in rows if r["engine"] == e and r["length"] == length
                     and r["multiplicity"] == mult and r["order"] == "average" and not r.get("skipped")]
                val[e] = v[0] if v else None
            cells = [f"{val[e]:.3g}" if val[e] else "n/a" for e in engines]
            ratio = f"{val['mpi'] / val['cpu_list']:.0f}x" if val["mpi"] and val["cpu_list"] else "n/a"
            out.append(f"| {length} | {mult:g} | " + " | ".join(cells) + f" | {ratio} |")
    out += ["", f"### Warp-parallel queue on {machine}", "", "| warps | queues | enqueue elems/s | dequeue elems/s |",
            "|---|---|---|---|"]
    for q in m.get("queue", []):
        out.append(f"| {q['warps']} | {q['queues']} | {q['enqueue_elems_per_s']:.3g} | {q['dequeue_elems_per_s']:.3g} |")
    if m.get("replay"):
        out += ["", f"### Replay of trace queue snapshots on {machine}", "", "| engine | snapshot | matches/s |", "|---|---|---|"]
        for i, r in enumerate(m["replay"]):
            out.append(f"| {r['engine']} | {r.get('order', i)} | {r['matches_per_s']:.3g} |")
    return out


def extra_tables(summary):
    """Benchmarks that carry their own markdown table (`markdown` key) are copied as they are."""
    out = []
    for name, data in sorted(summary.get("benchmarks", {}).items()):
        if isinstance(data, dict) and data.get("markdown"):
            out.append((name, data["markdown"]))
    return out


def rma_table(machine, summary):
    """gpucomm beside NVSHMEM for every point both measured, with the ratio (> 1: gpucomm better)."""
    b = summary.get("benchmarks", {})
    ours, nv = b.get("rma.json"), b.get("nvshmem.json")
    if not ours or not nv:
        return []
    key = lambda r: (r["name"], r["level"], r["bytes"], r["ctas"])
    mine = {key(r): r for r in ours["results"]}
    out = [f"### One-sided layer beside NVSHMEM on {machine} (medians; ratio > 1: gpucomm better)", "",
           "| benchmark | level | bytes | CTAs | gpucomm | NVSHMEM | unit | ratio |", "|---|---|---|---|---|---|---|---|"]
    for r in nv["results"]:
        m = mine.get(key(r))
        if not m:
            continue
        lower_better = r["unit"] == "us"
        ratio = (r["median"] / m["median"]) if lower_better else (m["median"] / r["median"])
        out.append(f"| {r['name']} | {r['level']} | {r['bytes']} | {r['ctas']} | {m['median']:.3f} | {r['median']:.3f} | "
                   f"{r['unit']} | {ratio:.2f} |")
    half = ours.get("half_peak_bytes", {})
    if half:
        out += ["", "Message size at half of peak bandwidth: " + ", ".join(f"{k} {v} B" for k, v in sorted(half.items()))]
    return out


def sanitizer_rows(machine, summary):
    """Per tool: what ran clean, what had findings, what the call's budget cut or left out, what was skipped."""
    rows = []
    for tool, d in sorted(summary.get("sanitizer", {}).items()):
        res = d.get("results", {})
        count = lambda p: sum(1 for v in res.values() if v.split(":")[0] == p)
        budget = sum(1 for v in res.values() if v.startswith("not run") and "budget" in v)
        rows.append(f"| {machine} | {tool} | {'yes' if d.get('clean') else 'NO'} | {count('clean')} | "
                    f"{count('errors') + count('timeout')} | {count('cut')} | {budget} | {count('skipped')} |")
    return rows


def rewrite_results_md():
    # For each machine and each benchmark (and the test counts), the newest summary that has it.
    newest = {}
    for f in sorted(RESULTS.glob("*/gpu-check-*.json")):  # names sort by date
        s = json.loads(f.read_text())
        per = newest.setdefault(f.parent.name, {})
        for name in s.get("benchmarks", {}):
            per[name] = (f, s)
        if s.get("ctest"):
            per["ctest"] = (f, s)
        if s.get("sanitizer"):
            per["sanitizer"] = (f, s)
    lines = ["# Benchmark results", "",
             "Generated by `scripts/record_results.py` from the newest `gpu-check` summary of each machine and",
             "benchmark under `bench/results/<machine>/` (raw numbers, date, commit and command are in those files).", ""]
    pp, extras, match, rma, shared, sanitizer = [], [], [], [], [], []
    for machine, per in sorted(newest.items()):
        for name, (f, s) in sorted(per.items()):
            what = {"ctest": "tests " + json.dumps(s.get("ctest")), "sanitizer": "compute-sanitizer"}.get(name, name)
            lines.append(f"- **{machine}** {what}: {f.name}, commit `{s.get('commit', '?')[:12]}`, {s.get('date', '?')}, "
                         f"GPUs: {', '.join(s.get('machine', [])) or '?'}")
        if "pingpong.json" in per:
            pp += pingpong_rows(machine, per["pingpong.json"][1])
            shared += shared_gpu_pairs(machine, per["pingpong.json"][1])
        if "match.json" in per:
            match += match_tables(machine, per["match.json"][1])
        if "rma.json" in per:
            rma += rma_table(machine, per["rma.json"][1])
        if "sanitizer" in per:
            sanitizer += sanitizer_rows(machine, per["sanitizer"][1])
        seen = set()
        for name, (f, s) in sorted(per.items()):
            if name in ("ctest", "sanitizer") or f in seen:
                continue
            seen.add(f)
            extras += [(machine, n, t) for n, t in extra_tables(s) if per.get(n, (None,))[0] == f]
    lines += ["", "## Ping-pong (one-way latency, median of samples)", "",
              "| machine | PEs | pair | bytes | one-way us |", "|---|---|---|---|---|"] + pp
    if shared:
        lines += ["", "Not listed: pairs of PEs that share one GPU (" + ", ".join(sorted(set(shared))) + "). Their kernels "
                  "time-slice the GPU, so a round trip measures the scheduler's time slice (milliseconds), not a latency; "
                  "they are functional checks only."]
    if match:
        lines += ["", "## Message matching (`gpucomm bench match --quick`)", ""] + match
    if rma:
        lines += ["", "## One-sided layer (`gpucomm bench rma --quick --compare-nvshmem`)", ""] + rma
    if sanitizer:
        lines += ["", "## compute-sanitizer (`scripts/run_under_sanitizer.py`, each tool on its subset)", "",
                  "| machine | tool | clean | tests run clean | with findings | cut by the budget | not run (budget) | skipped (reason in the JSON) |",
                  "|---|---|---|---|---|---|---|---|"] + sanitizer
    for machine, name, table in extras:
        lines += ["", f"## {name} on {machine}", "", cite(table)]
    (ROOT / "bench" / "RESULTS.md").write_text("\n".join(lines) + "\n")


def machine_paths_removed(text):
    """Paths of the machine that ran the check become relative to the repository root ($TMPDIR for the
    temporary folders): results name no machine's folders."""
    text = text.replace(str(ROOT) + "/", "")
    return re.sub(r"/tmp/[\w.-]+/", "$TMPDIR/", text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("summary", nargs="?")
    ap.add_argument("machine", nargs="?")
    ap.add_argument("--regenerate", action="store_true", help="only rewrite bench/RESULTS.md")
    ap.add_argument("--command", default="scripts/gpu-check.sh $OUT")
    a = ap.parse_args()
    if a.regenerate or not a.summary:
        rewrite_results_md()
        return
    if not a.machine:
        ap.error("MACHINE is required with SUMMARY")
    s = json.loads(machine_paths_removed(Path(a.summary).read_text()))
    s["command"] = a.command
    dest = RESULTS / a.machine / f"gpu-check-{s['date'].replace(':', '')}.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(s, indent=1) + "\n")
    rewrite_results_md()
    print(f"wrote {dest.relative_to(ROOT)} and bench/RESULTS.md")


if __name__ == "__main__":
    main()
