"""The proxy layer across real processes: a PE that dies while the others put to it through the
CPU proxy (host copies) or UCX makes them fail fast with its rank, never hang."""
from __future__ import annotations

import time

import pytest


@pytest.fixture
def proxy_pe(build) -> str:
    p = build / "tests" / "proxy" / "gpucomm_test_proxy_pe"
    if not p.exists():
        pytest.skip(f"{p} not built")
    return str(p)


def ucx_built(build) -> bool:
    return any((build / "src").glob("libgpucomm_ucx.so*"))


@pytest.mark.parametrize("transport", ["proxy-cpu", "ucx"])
def test_dead_peer_fails_proxied_puts_fast(run_gpucomm, build, proxy_pe, transport):
    if transport == "ucx" and not ucx_built(build):
        pytest.skip("libgpucomm_ucx was not built (UCX not found)")
    victim = 2
    start = time.monotonic()
    r = run_gpucomm("run", "-n", "3", "--tag-output", "--kill-grace", "60", "--", proxy_pe, "die-in-put", "0", str(victim),
                    env={"GPUCOMM_DEVICE": "host", "GPUCOMM_TRANSPORT": transport, "GPUCOMM_TIMEOUT": "20"})
    elapsed = time.monotonic() - start
    assert r.returncode != 0
    assert elapsed < 40, f"survivors took {elapsed:.1f} s"
    for rank in (0, 1):
        line = next((l for l in r.stderr.splitlines() if l.startswith(f"[{rank}] PE ERROR")), "")
        # In its puts, or still in the barrier before them when the victim (already past it) died.
        assert ("put" in line or "barrier" in line) and (f"rank {victim}" in line or f"PE {victim}" in line), r.stderr


def test_transport_must_agree_on_every_pe(run_gpucomm, proxy_pe):
    # Rank 1 asks for another transport than the others: a clear error naming the variable.
    r = run_gpucomm("run", "-n", "2", "--tag-output", "--", "sh", "-c",
                    f'GPUCOMM_TRANSPORT=$([ "$GPUCOMM_RANK" = 1 ] && echo proxy-cpu || echo direct) exec {proxy_pe} mixed 1',
                    env={"GPUCOMM_DEVICE": "host"})
    assert r.returncode != 0
    assert "GPUCOMM_TRANSPORT" in r.stderr and "same way on every PE" in r.stderr, r.stderr


def test_bad_transport_name_is_refused(run_gpucomm, proxy_pe):
    r = run_gpucomm("run", "-n", "1", "--", proxy_pe, "mixed", "1", env={"GPUCOMM_DEVICE": "host", "GPUCOMM_TRANSPORT": "carrier-pigeon"})
    assert r.returncode != 0
    assert "GPUCOMM_TRANSPORT" in r.stderr and "carrier-pigeon" in r.stderr, r.stderr


def test_proxy_gpu_on_host_pes_is_refused(run_gpucomm, proxy_pe):
    r = run_gpucomm("run", "-n", "2", "--", proxy_pe, "mixed", "1", env={"GPUCOMM_DEVICE": "host", "GPUCOMM_TRANSPORT": "proxy-gpu"})
    assert r.returncode != 0
    assert "host-memory PE" in r.stderr, r.stderr


def _run(name: str, results: list[tuple]) -> dict:
    """A configuration's JSON as gpucomm-bench-proxy writes it: (name, level, bytes, ctas, median)."""
    return {"results": [{"name": n, "level": l, "bytes": b, "ctas": c, "median": m} for n, l, b, c, m in results]}


def test_bench_targets_compare_each_value_with_its_floor(build):
    from gpucomm.bench import proxy as bench

    mb64 = 64 << 20
    runs = {
        "direct": _run("direct", [("put_signal_latency", "thread", 8, 1, 1.7), ("flag_rt_blocks", "device", 8, 2, 1.1),
                                  ("cpu_proxy_floor", "min", 8, 1, 4.0), ("gpu_cpu_flag_rt", "pinned", 8, 1, 2.0),
                                  ("gpu_cpu_flag_one_way", "pinned", 8, 1, 1.0), ("cpu_write_to_gpu", "memcpy", 8, 1, 6.0),
                                  ("cpu_write_call", "memcpy", 8, 1, 4.0)]),
        "proxy-cpu/host-ring": _run("cpu", [("put_signal_latency", "thread", 8, 1, 5.5),
                                            ("p_msg_rate", "thread", 8, 32, 2.5), ("p_msg_rate", "thread", 8, 132, 3.0),
                                            ("proxy_cpu_us_per_op", "cpu_proxy", 8, 32, 0.5),
                                            ("proxy_cpu_us_per_op", "cpu_proxy", 8, 132, 0.4),
                                            ("host_p_rate", "host_api", 8, 0, 0.1),
                                            ("put_bw", "block", mb64, 1, 1350.0), ("copy_engine_bw", "copy_engine", mb64, 0, 1380.0)]),
        "proxy-gpu/device-ring": _run("gpu", [("put_signal_latency", "thread", 8, 1, 3.0),
                                              ("p_msg_rate", "thread", 8, 132, 60.0)]),
        "proxy-cpu/host-ring/traced": _run("t", [("stage_us", s, 8, 1, 1.0) for s in bench.STAGES]),
    }
    text = "\n".join(bench.summary(runs, 1) + bench.targets(runs, 1))
    assert "CPU proxy floor" in text and "where a traced" in text
    lines = {l.split(":")[0].strip(): l for l in text.splitlines() if "->" in l}
    assert lines["GPU agent put_signal round trip <= 2x direct"].endswith("met")
    assert lines["GPU agent <= 0.5x CPU proxy (ComP-Net)"].endswith("MISSED")  # 3.0 > 0.5 x 5.5
    assert "1.5 x 4.00" in lines["CPU proxy put_signal round trip (host ring) <= 1.5x floor"]
    assert lines["CPU proxy put_signal round trip (host ring) <= 1.5x floor"].endswith("met")
    assert lines["GPU-issued 8-byte puts through the CPU proxy >= 2 Mops/s, rising 32 -> 132 CTAs, <= 2 us CPU/op"].endswith("met")
    assert "600x" in lines["GPUrdma's comparison"]
    bw = lines["copy-engine puts through the proxy >= 95% of raw copies at 64 MB (one put per repetition, like the copies)"]
    assert "1350.0 / 1380.0 GB/s = 97.8% -> met" in bw
