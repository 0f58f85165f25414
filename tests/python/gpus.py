"""How many GPUs the Python tests may use: gpucomm's own count (CUDA_VISIBLE_DEVICES honoured) when
the build tree's package imports, else nvidia-smi's; 0 when neither answers."""
from __future__ import annotations

import subprocess


def gpu_count() -> int:
    try:
        from gpucomm.launch.gpus import visible_gpu_count
        return visible_gpu_count()
    except Exception:  # noqa: BLE001 - no package on the path: ask the driver's tool
        pass
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return 0
    return len([l for l in out.stdout.splitlines() if l.startswith("GPU ")]) if out.returncode == 0 else 0
