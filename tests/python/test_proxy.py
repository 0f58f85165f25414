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
        assert "put" in line and (f"rank {victim}" in line or f"PE {victim}" in line), r.stderr


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
