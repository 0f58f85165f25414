"""``gpucomm apps energy``: the method (counter interpolation, idle subtraction, per-step medians,
the repeats' spread) on synthetic NVML traces whose energy is known, so it is tested without a GPU;
the command's refusals; and, where a GPU exists, a short real measurement of Global Sum."""
from __future__ import annotations

import json
import random

import pytest

from gpus import gpu_count
from gpucomm.apps import energy


def synthetic(power_w, t_end_s: float, step_s: float = 0.1, poll_s: float = 0.01, t0_ns: int = 10**18,
              seed: int = 1) -> energy.Trace:
    """A trace of one GPU whose power is power_w(t) W: the counter (mJ) steps every `step_s` (as
    NVML's does), polled every `poll_s` with a little jitter."""
    rng = random.Random(seed)
    tr, t, acc, last_step = energy.Trace(), 0.0, 0.0, 0.0
    shown = 0
    while t <= t_end_s:
        while last_step + step_s <= t:  # the counter advances in steps
            a = last_step
            last_step += step_s
            n = 20
            acc += sum(power_w(a + (k + 0.5) * step_s / n) for k in range(n)) * step_s / n * 1000.0
            shown = int(acc)
        tr.add(t0_ns + int(t * 1e9), [shown])
        t += poll_s * (0.8 + 0.4 * rng.random())
    return tr


def test_constant_power_window_and_idle():
    tr = synthetic(lambda t: 300.0, 30.0)
    t0 = tr.t_ns[0]
    j = energy.window_joules(tr, 0, t0 + int(5e9), t0 + int(15e9))
    assert j == pytest.approx(3000.0, rel=0.01)  # 300 W for 10 s, within the counter's 100 ms steps
    span_s = (tr.t_ns[-1] - t0) / 1e9
    assert energy.window_joules(tr, 0, t0, tr.t_ns[-1]) / span_s == pytest.approx(300.0, rel=0.01)
    xs, ys = energy.power_series(tr, 0, 0.5)
    assert len(xs) >= 50 and all(abs(y - 300.0) < 300.0 * 0.25 for y in ys[1:-1])


def test_busy_window_above_idle_is_recovered():
    """Idle 70 W; a run at 250 W from 12 to 22 s: its energy above idle is 1800 J within 2%."""
    tr = synthetic(lambda t: 250.0 if 12.0 <= t < 22.0 else 70.0, 40.0)
    t0 = tr.t_ns[0]
    idle = energy.window_joules(tr, 0, t0 + int(1e9), t0 + int(11e9)) / 10.0
    assert idle == pytest.approx(70.0, rel=0.02)
    gross = energy.window_joules(tr, 0, t0 + int(11e9), t0 + int(23e9))
    rep = energy.Repeat(steps=1000, median_step_us=10000.0, window_s=12.0, gpu_j=[gross], idle_w=[idle],
                        cpu_core_s=12.0)
    assert rep.net_gpu_j == pytest.approx(1800.0, rel=0.02)
    row = rep.per_step(cpu_watts_per_core=10.0)
    assert row["gpu_j"] == pytest.approx(1.8, rel=0.02) and row["cpu_core_s"] == pytest.approx(0.012)
    assert row["cpu_j_model"] == pytest.approx(0.12) and row["avg_gpu_w"] == pytest.approx(gross / 12.0)
    assert row["edp_js"] == pytest.approx((row["gpu_j"] + 0.12) * 0.01)


def test_spread_check_can_fail():
    def rep(j):
        return energy.Repeat(steps=100, median_step_us=1.0, window_s=10.0, gpu_j=[j], idle_w=[0.0], cpu_core_s=1.0)
    ok = energy.summarize([rep(100.0), rep(102.0), rep(101.0)], 10.0)
    assert ok["repeats_within_limit"] and ok["median"]["gpu_j"] == pytest.approx(1.01)
    bad = energy.summarize([rep(100.0), rep(110.0), rep(101.0)], 10.0)
    assert not bad["repeats_within_limit"] and bad["spread"] == pytest.approx(10.0 / 101.0)


def test_outside_the_sampled_span_is_an_error():
    tr = synthetic(lambda t: 100.0, 2.0)
    with pytest.raises(ValueError, match="outside the sampled span"):
        energy.counter_at(tr, 0, tr.t_ns[-1] + 1)


@pytest.mark.parametrize("args, words", [
    (["--model", "nosuch"], "unknown model 'nosuch'"),
    (["--model", "loadstore", "--size", "1,2"], "one size"),
    (["--model", "loadstore", "--cpu-watts-per-core", "-1"], "watts"),
])
def test_bad_arguments_are_usage_errors(run_apps, apps_tool, args, words):
    r = run_apps("energy", "global_sum", *args)
    assert r.returncode == 2 and words in r.stderr, r.stderr


@pytest.mark.skipif(gpu_count() > 0, reason="this machine has a GPU: the refusal without one is not reachable")
def test_without_a_gpu_energy_refuses(run_apps, apps_tool):
    r = run_apps("energy", "global_sum", "--model", "loadstore")
    assert r.returncode == 1 and "no GPU found" in r.stderr, r.stderr


@pytest.mark.skipif(gpu_count() == 0, reason="no GPU on this machine: GPU energy needs one")
def test_energy_gpu_short_measurement(run_apps, apps_tool, tmp_path):
    out, png = tmp_path / "e.json", tmp_path / "e.png"
    r = run_apps("energy", "global_sum", "--model", "loadstore", "--size", "1M", "-n", "1", "--seconds", "1",
                 "--repeats", "2", "--idle-seconds", "1", "--cooldown", "0", "--json", str(out), "--plot", str(png),
                 timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert len(doc["repeats"]) == 2 and all(rep["verified"] for rep in doc["repeats"])
    assert all(w > 0 for w in doc["idle_w"]) and doc["summary"]["median"]["time_us"] > 0
    assert "method check" in r.stdout
