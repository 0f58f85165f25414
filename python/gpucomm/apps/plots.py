"""PNG plots of the application suite: time per step against size, one line per model (compare), and
the power trace and energy per step by component of an energy measurement (energy). Needs
matplotlib (the `plots` extra; scripts/setup.sh installs it); callers check have_matplotlib()."""
from __future__ import annotations

from pathlib import Path

from gpucomm.apps.catalog import size_text
from gpucomm.apps.energy import Trace, power_series
from gpucomm.trace.plots import have_matplotlib

__all__ = ["have_matplotlib", "time_plot", "energy_plot"]


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def time_plot(report: dict, path: Path) -> str:
    """Median time per step against size for every model of one application's report."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4))
    models = list(dict.fromkeys(r["model"] for r in report["results"]))
    sizes = sorted({r["size"] for r in report["results"]})
    for m in models:
        pts = sorted((r["size"], r["median_us"]) for r in report["results"] if r["model"] == m)
        wrong = any(not r["verified"] for r in report["results"] if r["model"] == m)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=m + (" (WRONG)" if wrong else ""))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sizes, [size_text(s) for s in sizes])
    ax.minorticks_off()
    ax.set_xlabel(f"size ({report.get('size_unit', 'the application’s unit')})")
    ax.set_ylabel("median time per step [us] (slowest PE)")
    shared = " (PEs share GPUs: time-sliced)" if report.get("time_sliced") else ""
    ax.set_title(f"{report['app']}: {report['pes']} {report['pe_kind']} PE(s){shared}", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)


def energy_plot(doc: dict, trace: Trace, path: Path) -> str:
    """Left: every GPU's power over the measurement, the runs' windows shaded. Right: GPU energy per
    step above idle, the idle share, and the CPU's modelled energy, medians of the repeats."""
    plt = _pyplot()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4), gridspec_kw={"width_ratios": [2, 1]})
    t0 = trace.t_ns[0]
    for g, name in enumerate(doc["gpus"]):
        xs, ys = power_series(trace, g, 0.1)
        ax.plot(xs, ys, lw=0.8, label=f"GPU {g} ({name})")
    for k, r in enumerate(doc["repeats"]):
        ax.axvspan((r["window"]["start_unix_ns"] - t0) / 1e9, (r["window"]["end_unix_ns"] - t0) / 1e9,
                   color="tab:orange", alpha=0.15, label="runs" if k == 0 else None)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("GPU power [W] (NVML energy counter, 100 ms bins)")
    ax.set_title(f"{doc['app']} {doc['model']} {size_text(doc['size'])}: power", fontsize=10)
    ax.legend(fontsize=8)
    med = doc["summary"]["median"]
    idle_share = med["gpu_j_with_idle"] - med["gpu_j"]
    parts = [("GPU above idle", med["gpu_j"] * 1e6, "tab:green"), ("GPU idle share", idle_share * 1e6, "tab:gray"),
             ("CPU (model)", med["cpu_j_model"] * 1e6, "tab:blue")]
    bx.bar([p[0] for p in parts], [p[1] for p in parts], color=[p[2] for p in parts])
    bx.set_ylabel("energy per step [uJ] (median of repeats)")
    bx.set_title(f"per step: {med['time_us']:.1f} us, {med['cpu_core_s'] * 1e6:.1f} core-us", fontsize=10)
    bx.tick_params(axis="x", labelsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)
