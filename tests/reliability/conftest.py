"""The reliability suite's fixtures: the build tree's gpucomm package and tools."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("GPUCOMM_BUILD_DIR", ROOT / "build" / "ci"))
if (BUILD / "python" / "gpucomm").is_dir():
    sys.path.insert(0, str(BUILD / "python"))


@pytest.fixture(scope="session")
def cases():
    """gpucomm.bench._fault_cases, with its tools built."""
    if not (BUILD / "python" / "gpucomm" / "_bin" / "gpucomm-fault-pe").exists():
        pytest.skip(f"gpucomm-fault-pe not built in {BUILD}")
    from gpucomm.bench import _fault_cases
    return _fault_cases


@pytest.fixture
def gpucomm_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCOMM_")}
    env["PYTHONPATH"] = str(BUILD / "python") + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.fixture
def core_built():
    if not list((BUILD / "python" / "gpucomm").glob("_core*.so")):
        pytest.skip("gpucomm._core not built")
    pytest.importorskip("numpy")
