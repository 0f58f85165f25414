"""Counting the GPUs that PEs can be assigned to, without needing a GPU to be present."""
from __future__ import annotations

import os
import shutil
import subprocess


def visible_gpu_count() -> int:
    """Number of CUDA devices this machine exposes to its processes (0 when none)."""
    try:
        from gpucomm import _core  # type: ignore[attr-defined]
        return int(_core.cuda_device_count())
    except Exception:  # the extension may be absent (pure-Python use of the launcher)
        pass
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis is not None:
        return len([v for v in vis.split(",") if v.strip() and v.strip() != "-1"])
    smi = shutil.which("nvidia-smi")
    if not smi:
        return 0
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def no_gpu_reason() -> str:
    """Why CUDA reports no device here, as the topology probe words it ("" when unknown)."""
    try:
        import json

        from gpucomm import _core  # type: ignore[attr-defined]
        return str(json.loads(_core.topology_json()).get("cuda", {}).get("status", ""))
    except Exception:  # the extension may be absent
        return ""


def require_gpus(what: str) -> int:
    """The number of visible GPUs; raises RuntimeError naming `what` and the cause when there is none."""
    n = visible_gpu_count()
    if n == 0:
        reason = no_gpu_reason()
        raise RuntimeError(f"{what} runs on GPU PEs and this machine has no usable GPU"
                           + (f" (CUDA: {reason})" if reason else ""))
    return n
