"""PNG plots of a trace report: message-size histogram, message rate over time, queue-length CDF."""
from __future__ import annotations

import importlib.util
from pathlib import Path


def have_matplotlib() -> bool:
    """Whether the optional plotting dependency (the `plots` extra) is installed."""
    return importlib.util.find_spec("matplotlib") is not None


def _cdf(values: list[list[int]]):
    xs, ys, total, run = [], [], sum(c for _, c in values), 0
    for v, c in values:
        run += c
        xs.append(v)
        ys.append(run / total if total else 0)
    return xs, ys


def write_plots(rep: dict, out_dir: str, name: str) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    run, files = rep["run"], []

    fig, ax = plt.subplots(figsize=(6, 3.5))
    p2p = run["p2p"]
    unit_key = "send_bytes_log2" if p2p["send_size_unknown"] == 0 else "send_elements_log2"
    bins = p2p[unit_key]
    labels = [f"{lo}-{hi - 1}" if hi - lo > 1 else str(lo) for lo, hi, _ in bins]
    ax.bar(range(len(bins)), [c for _, _, c in bins], color="tab:blue")
    ax.set_xticks(range(len(bins)), labels, rotation=45, ha="right", fontsize=8)
    ax.set_xlabel("point-to-point message size [" + ("bytes" if unit_key.startswith("send_bytes") else "elements") + "]")
    ax.set_ylabel("messages")
    ax.set_title(f"{name}: message sizes ({p2p['sends']} sends)")
    fig.tight_layout()
    files.append(str(out / f"{name}-sizes.png"))
    fig.savefig(files[-1], dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for kind, color in (("p2p", "tab:blue"), ("collective", "tab:orange")):
        s = run["series"][kind]
        if not s["counts"]:
            continue
        xs = [s["t0_s"] + (k + 0.5) * s["bin_s"] for k in range(len(s["counts"]))]
        ax.plot(xs, [c / s["bin_s"] for c in s["counts"]], label=f"{kind} (bins of {s['bin_s'] * 1e3:g} ms)", color=color, lw=1)
    ax.set_xlabel("time since first call [s]")
    ax.set_ylabel("messages / s (all ranks)")
    ax.set_title(f"{name}: message rate over time")
    ax.legend(fontsize=8)
    fig.tight_layout()
    files.append(str(out / f"{name}-rate.png"))
    fig.savefig(files[-1], dpi=100)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.5), sharey=True)
    for ax, qname in zip(axes, ("umq", "prq")):
        for what, style in (("length", "-"), ("depth", "--")):
            vals = run["queues"][f"{qname}_{what}_values"]
            if vals:
                xs, ys = _cdf(vals)
                ax.step(xs, ys, style, where="post", label=f"{what}")
        ax.set_title(f"{qname.upper()} (all ranks)")
        ax.set_xlabel("entries")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("fraction of searches")
    fig.suptitle(f"{name}: matching-queue length and search depth (CDF)")
    fig.tight_layout()
    files.append(str(out / f"{name}-queues.png"))
    fig.savefig(files[-1], dpi=100)
    plt.close(fig)
    return files
