"""Energy of an application run (docs/APPS.md, "Energy"): GPU joules from NVML's total-energy
counters sampled in a thread while the run goes on, the run's window (wall clock and CPU time of
every PE) from its report, an idle baseline subtracted, repeats with a cool-down between them.

The functions here are pure (samples in, numbers out) so that the method is tested without a GPU;
`measure` drives them with the real counters."""
from __future__ import annotations

import bisect
import statistics
import threading
import time
from dataclasses import dataclass, field


@dataclass
class Trace:
    """Samples of every GPU's energy counter: times (ns, the Unix clock the PEs' windows use) and,
    per sample, one counter value (mJ) per GPU."""
    t_ns: list[int] = field(default_factory=list)
    mj: list[list[int]] = field(default_factory=list)

    def add(self, t_ns: int, values: list[int]) -> None:
        self.t_ns.append(t_ns)
        self.mj.append(values)

    def steps(self, gpu: int) -> tuple[list[int], list[int]]:
        """The counter of `gpu` where it changed (the first sample of each new value) and the first
        and last samples: NVML's counter steps every few to ~100 ms, and the first sample that shows a
        step is the closest time to it."""
        ts, vs = [], []
        for i, (t, row) in enumerate(zip(self.t_ns, self.mj)):
            v = row[gpu]
            if not vs or v != vs[-1] or i == len(self.t_ns) - 1:
                ts.append(t)
                vs.append(v)
        return ts, vs


def changes_only(trace: Trace) -> Trace:
    """The samples where some GPU's counter changed, and the first and last: what the method uses
    (Trace.steps), a tenth of the samples or less, for the JSON."""
    out = Trace()
    for i, (t, row) in enumerate(zip(trace.t_ns, trace.mj)):
        if not out.mj or row != out.mj[-1] or i == len(trace.t_ns) - 1:
            out.add(t, row)
    return out


def _interpolate(ts: list[int], vs: list[int], t_ns: int, gpu: int) -> float:
    """The counter at t_ns, linear between the surrounding steps (ts, vs: Trace.steps)."""
    if not ts or t_ns < ts[0] or t_ns > ts[-1]:
        raise ValueError(f"time {t_ns} outside the sampled span of GPU {gpu}")
    k = max(1, bisect.bisect_left(ts, t_ns))
    if k == len(ts):
        return float(vs[-1])
    span = ts[k] - ts[k - 1]
    frac = (t_ns - ts[k - 1]) / span if span else 1.0
    return vs[k - 1] + frac * (vs[k] - vs[k - 1])


def counter_at(trace: Trace, gpu: int, t_ns: int) -> float:
    """GPU `gpu`'s counter (mJ) at time t_ns, linear between the surrounding steps; raises ValueError
    outside the sampled span."""
    ts, vs = trace.steps(gpu)
    return _interpolate(ts, vs, t_ns, gpu)


def window_joules(trace: Trace, gpu: int, t0_ns: int, t1_ns: int) -> float:
    ts, vs = trace.steps(gpu)
    return (_interpolate(ts, vs, t1_ns, gpu) - _interpolate(ts, vs, t0_ns, gpu)) / 1000.0


def power_series(trace: Trace, gpu: int, bin_s: float = 0.1) -> tuple[list[float], list[float]]:
    """Power (W) of `gpu` in bins of `bin_s` seconds, from counter differences: (times since the
    first sample in s, watts)."""
    if not trace.t_ns:
        return [], []
    ts, vs = trace.steps(gpu)  # once, not per bin
    t0, xs, ys = trace.t_ns[0], [], []
    edge = t0
    end = trace.t_ns[-1]
    step = int(bin_s * 1e9)
    while edge + step <= end:
        j = (_interpolate(ts, vs, edge + step, gpu) - _interpolate(ts, vs, edge, gpu)) / 1000.0
        xs.append((edge + step / 2 - t0) / 1e9)
        ys.append(j / bin_s)
        edge += step
    return xs, ys


@dataclass
class Repeat:
    """One timed run inside the sampled span."""
    steps: int             # steps the run made (warm-up and timed)
    median_step_us: float  # the report's median time per step (the slowest PE's)
    window_s: float        # the run's whole window: set-up, steps, check
    gpu_j: list[float]     # energy of each GPU over the window
    idle_w: list[float]    # each GPU's idle power
    cpu_core_s: float      # CPU time of every PE over the window (user + system, all threads)

    @property
    def net_gpu_j(self) -> float:
        """GPU energy above idle: the window's energy less idle power times the window."""
        return sum(j - w * self.window_s for j, w in zip(self.gpu_j, self.idle_w))

    def per_step(self, cpu_watts_per_core: float) -> dict:
        s_per_step = self.median_step_us * 1e-6
        gpu = self.net_gpu_j / self.steps
        cpu_core_s = self.cpu_core_s / self.steps
        cpu_j = cpu_core_s * cpu_watts_per_core
        return {
            "time_us": self.median_step_us,
            "gpu_j": gpu,
            "gpu_j_with_idle": sum(self.gpu_j) / self.steps,
            "cpu_core_s": cpu_core_s,
            "cpu_j_model": cpu_j,
            "avg_gpu_w": sum(self.gpu_j) / self.window_s,
            "avg_gpu_w_net": self.net_gpu_j / self.window_s,
            "edp_js": (gpu + cpu_j) * s_per_step,
        }


def summarize(repeats: list[Repeat], cpu_watts_per_core: float, spread_limit: float = 0.05) -> dict:
    """Medians over the repeats of every per-step quantity, and the method's check: the repeats' GPU
    joules per step within `spread_limit` of their median."""
    rows = [r.per_step(cpu_watts_per_core) for r in repeats]
    med = {k: statistics.median(row[k] for row in rows) for k in rows[0]}
    js = [row["gpu_j"] for row in rows]
    spread = (max(js) - min(js)) / med["gpu_j"] if med["gpu_j"] > 0 else float("inf")
    return {"median": med, "per_repeat": rows, "spread": spread, "spread_limit": spread_limit,
            "repeats_within_limit": spread <= spread_limit, "cpu_watts_per_core_model": cpu_watts_per_core}


class Sampler:
    """Samples every GPU's energy counter every `period_s` in a thread, into a Trace."""

    def __init__(self, nvml, period_s: float = 0.01) -> None:
        self.nvml, self.period_s, self.trace = nvml, period_s, Trace()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="gpucomm-energy", daemon=True)
        self.error: Exception | None = None

    def _read(self) -> None:
        self.trace.add(time.time_ns(), [self.nvml.energy_mj(i) for i in range(len(self.nvml.handles))])

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                self._read()
                self._stop.wait(self.period_s)
            self._read()
        except Exception as exc:  # reported by stop()
            self.error = exc

    def __enter__(self) -> Sampler:
        self._read()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        if self.error is not None:
            raise self.error
