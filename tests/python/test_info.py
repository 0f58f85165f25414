"""``gpucomm info`` run as a user would: ``python -m gpucomm info [--json]`` on the build tree
(GPUCOMM_BUILD_DIR, default build/ci; see conftest.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import build_dir

ROOT = Path(__file__).resolve().parents[2]


def build_python_dir() -> Path:
    return build_dir() / "python"


def run_gpucomm(*args: str, **env_extra: str) -> subprocess.CompletedProcess:
    pydir = build_python_dir()
    if not list((pydir / "gpucomm").glob("_core*.so")):
        pytest.skip(f"no built extension under {pydir} (build first or set GPUCOMM_BUILD_DIR)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCOMM_")}
    env["PYTHONPATH"] = str(pydir)
    env.update(env_extra)
    return subprocess.run([sys.executable, "-m", "gpucomm", *args], env=env, capture_output=True,
                          text=True, timeout=120, cwd=ROOT)


def info_json(**env_extra: str) -> dict:
    r = run_gpucomm("info", "--json", **env_extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_json_has_the_documented_keys():
    info = info_json()
    assert set(info) == {"version", "pe_mode", "topology", "env", "unknown_env"}
    assert info["version"] == "0.1.0"
    topo = info["topology"]
    for key in ("host", "cuda", "nvml", "gpus", "links"):
        assert key in topo
    n = len(topo["gpus"])
    assert len(topo["links"]) == n * (n - 1)
    assert info["env"] == {} and info["unknown_env"] == {}


def test_pe_mode_follows_the_gpus_found():
    info = info_json()
    n = len(info["topology"]["gpus"])
    if n == 0:
        assert info["pe_mode"] == "host-memory PEs: no GPU found"
        assert info["topology"]["cuda"]["status"] != "ok"
    else:
        assert info["pe_mode"].startswith(f"GPU PEs: {n} GPU")


def test_device_host_forces_host_memory_pes():
    info = info_json(GPUCOMM_DEVICE="host", GPUCOMM_LOG_LEVEL="warn")
    assert info["pe_mode"] == "host-memory PEs: GPUCOMM_DEVICE=host forces host-memory PEs"
    assert info["env"] == {"GPUCOMM_DEVICE": "host", "GPUCOMM_LOG_LEVEL": "warn"}


def test_text_report():
    r = run_gpucomm("info", GPUCOMM_TIMEOUT="5")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("gpucomm 0.1.0\n")
    assert "PE mode: " in out
    assert "Host: " in out
    assert "GPUs: " in out
    assert "  GPUCOMM_TIMEOUT=5" in out


def test_help_describes_json_flag():
    r = run_gpucomm("info", "--help")
    assert r.returncode == 0
    assert "--json" in r.stdout and "pe_mode" in r.stdout


def test_pe_mode_rules():
    sys.path.insert(0, str(ROOT / "python"))
    try:
        from gpucomm.cli.info import pe_mode
    finally:
        sys.path.pop(0)
    assert pe_mode(2, None) == "GPU PEs: 2 GPUs"
    assert pe_mode(1, "auto") == "GPU PEs: 1 GPU"
    assert pe_mode(0, "") == "host-memory PEs: no GPU found"
    assert pe_mode(2, "host") == "host-memory PEs: GPUCOMM_DEVICE=host forces host-memory PEs"
    assert pe_mode(2, "gpu") == "GPU PEs: 2 GPUs"
    assert pe_mode(0, "gpu").startswith("none: GPUCOMM_DEVICE=gpu requires a GPU")
    assert "not one of auto, gpu, host" in pe_mode(1, "cpu")
