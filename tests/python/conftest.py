"""Shared fixtures: where the build tree is, and how to run gpucomm's command from it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def build_dir() -> Path:
    return Path(os.environ.get("GPUCOMM_BUILD_DIR", ROOT / "build" / "ci"))


# Tests that import gpucomm in this process use the build tree's package.
if (build_dir() / "python" / "gpucomm").is_dir():
    sys.path.insert(0, str(build_dir() / "python"))


@pytest.fixture(scope="session")
def build() -> Path:
    d = build_dir()
    if not (d / "python" / "gpucomm").is_dir():
        pytest.skip(f"no gpucomm build tree at {d} (set GPUCOMM_BUILD_DIR)")
    return d


@pytest.fixture
def gpucomm_env(build):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(build / "python") + os.pathsep + env.get("PYTHONPATH", "")
    # A PE that crashes prints its Python stack, and what it printed before is not lost in a buffer.
    env["PYTHONFAULTHANDLER"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    for k in list(env):
        if k.startswith("GPUCOMM_") and k != "GPUCOMM_TEST_SEED":  # the PEs warn of unknown GPUCOMM_ names
            del env[k]
    return env


@pytest.fixture
def run_gpucomm(gpucomm_env):
    def run(*args, env=None, timeout=120):
        e = dict(gpucomm_env)
        e.update(env or {})
        return subprocess.run([sys.executable, "-m", "gpucomm", *args], env=e, capture_output=True, text=True,
                              timeout=timeout)
    return run


@pytest.fixture
def pe_program(build) -> str:
    p = build / "tests" / "runtime" / "gpucomm_test_pe"
    if not p.exists():
        pytest.skip(f"{p} not built")
    return str(p)


@pytest.fixture
def apps_tool(build) -> Path:
    """The application suite's program (tests/python/test_apps*.py)."""
    tool = build / "python" / "gpucomm" / "_bin" / "gpucomm-apps"
    if not tool.exists():
        pytest.skip(f"{tool} not built (target gpucomm-apps)")
    return tool


@pytest.fixture
def run_apps(run_gpucomm):
    """`gpucomm apps ARGS...` with a 30 s library timeout."""
    def run(*args, timeout=180):
        return run_gpucomm("apps", *args, env={"GPUCOMM_TIMEOUT": "30"}, timeout=timeout)
    return run
