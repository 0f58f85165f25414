"""Text rendering of a ``gpucomm-trace`` JSON report (field meanings: docs/TRACES.md)."""
from __future__ import annotations


def _num(v: float) -> str:
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.3g}"


def _mmm(s: dict) -> str:
    return "-" if not s["n"] else f"{_num(s['min'])} / {_num(s['median'])} / {_num(s['max'])}"


def _five(s: dict) -> str:
    return "-" if not s["n"] else f"{_num(s['median'])} [{_num(s['q1'])}-{_num(s['q3'])}] max {_num(s['max'])}"


def _counts(d: dict) -> str:
    return ", ".join(f"{k}:{v}" for k, v in sorted(d.items())) or "-"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    fmt = "  ".join("{:>%d}" % w for w in widths)
    return [fmt.format(*header), fmt.format(*["-" * w for w in widths])] + [fmt.format(*r) for r in rows]


def render(rep: dict) -> str:
    t, run = rep["trace"], rep["run"]
    p2p, coll, tm, q = run["p2p"], run["collectives"], run["time"], run["queues"]
    unit = "bytes" if p2p["send_size_unknown"] == 0 else f"bytes ({p2p['send_size_unknown']} sends of unknown size left out; see elements)"
    out = [
        f"Trace {t['input']}: {t['ranks']} ranks, {t['records']} calls, {t['bytes'] / 1e6:.2f} MB "
        f"(format {t['format_version']}, host {t['hostname'] or '-'}), read in {t['read_seconds']:.3f} s",
        "",
        "Time in MPI (run: sums over ranks)",
        f"  s_MPI {_pct(tm['s_mpi'])}   s_comm {_pct(tm['s_comm'])}   s_admin {_pct(tm['s_admin'])}   "
        f"(rank means {_pct(tm['mean_rank_s_mpi'])} / {_pct(tm['mean_rank_s_comm'])} / {_pct(tm['mean_rank_s_admin'])}); "
        f"run {run['duration_s']:.6f} s",
        "",
        "Point-to-point",
        f"  sends {p2p['sends']}, recvs {p2p['recvs']}, communicating pairs {p2p['pairs']}, "
        f"pair count check: {'ok' if p2p['pair_count_check'] else 'MISMATCH'}, "
        f"pair bytes check: {'ok' if p2p['pair_bytes_check'] else 'MISMATCH'}"
        + (f" ({p2p['sends_outside_run']} sends to ranks outside the trace)" if p2p.get("sends_outside_run") else ""),
        f"  send size min / median / max / total [{unit}]: {_mmm(p2p['send_bytes'])} / {_num(p2p['send_bytes']['total'])}",
        f"  send size [elements]: {_mmm(p2p['send_elements'])}",
        f"  send functions {_counts(p2p['send_functions'])}; recv functions {_counts(p2p['recv_functions'])}",
        f"  non-blocking share sends {_pct(p2p['nonblocking_send_share'])}, recvs {_pct(p2p['nonblocking_recv_share'])}; "
        f"MPI_ANY_SOURCE recvs {p2p['any_source_recvs']} (unresolved {p2p['any_source_unresolved']}); "
        f"MPI_PROC_NULL sends/recvs {p2p['proc_null_sends']}/{p2p['proc_null_recvs']}",
        "",
        f"Collectives: {coll['total']} calls ({_counts(coll['by_function'])}), elements per call {_mmm(coll['elements'])}",
        "",
        "Message rate (run, all ranks together): peak and mean messages per window",
    ]
    for kind in ("p2p", "collective"):
        ws = run["rates"][kind]["windows"]
        cells = ", ".join(f"{w['window_s'] * 1e6:g} us: peak {w['peak']} ({w['peak_per_s']:.3g}/s) mean {w['mean']:.3g}"
                          for w in ws)
        out.append(f"  {kind:10s} {cells}")
    out += ["", "Matching-queue replay (length and search depth: median [q1-q3] max)",
            f"  run: unexpected {q['unexpected']} of {q['unexpected'] + q['expected']} messages ({_pct(q['unexpected_share'])}); "
            f"UMQ length {_five(q['umq_length'])}, depth {_five(q['umq_depth'])}; "
            f"PRQ length {_five(q['prq_length'])}, depth {_five(q['prq_depth'])}", ""]
    rows = []
    for r in rep["ranks"]:
        rp, rq, rt = r["p2p"], r["queues"], r["time"]
        rows.append([str(r["rank"]), str(rp["sends"]), str(rp["recvs"]), str(rp["distinct_peers"]),
                     _mmm(rp["send_bytes"]), _mmm(rp["recv_bytes"]), _counts(r["collectives"]["by_function"]),
                     str(rp["max_outstanding_recv_requests"]), _pct(rt["s_mpi"]), _pct(rt["s_comm"]),
                     _pct(rq["unexpected_share"]), _five(rq["umq_length"]), _five(rq["prq_length"]),
                     _five(rq["umq_depth"]), _five(rq["prq_depth"])])
    out += _table(["rank", "sends", "recvs", "peers", "send B min/med/max", "recv B min/med/max", "collectives",
                   "max out recv", "s_MPI", "s_comm", "unexp", "UMQ len", "PRQ len", "UMQ depth", "PRQ depth"], rows)
    if rep["snapshots"]:
        out += ["", "Queue snapshots (largest UMQ+PRQ per rank): " +
                ", ".join(f"rank {s['rank']} at {s['time_s']:.6f} s: UMQ {s['umq']} PRQ {s['prq']}" for s in rep["snapshots"])]
    for w in rep["warnings"]:
        out.append(f"warning: {w}")
    return "\n".join(out) + "\n"
