"""Two GPU PEs share GPU 0; rank 1 is killed while rank 0's kernel waits for a signal only rank 1
would send. Passes when rank 0's kernel left within 1 s of the kill with a device record naming
PE 1 (gpucomm-fault-pe gpu-kill-wait checks both); prints SKIPPED where no GPU exists."""
from __future__ import annotations

import os
import subprocess
import sys

from gpucomm._tools import find_tool


def main() -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCOMM_") or k == "GPUCOMM_UNDER_SANITIZER"}
    # Only GPU 0 visible: both PEs get it (gpucomm run assigns the visible GPUs round robin).
    env.update({"GPUCOMM_DEVICE": "gpu", "GPUCOMM_TIMEOUT": "60", "GPUCOMM_HEAP_SIZE": "16M",
                "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]})
    cmd = [sys.executable, "-m", "gpucomm", "run", "-n", "2", "--tag-output", "--",
           str(find_tool("gpucomm-fault-pe")), "gpu-kill-wait", "1"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=100)
    out = r.stdout + r.stderr
    print(out)
    if "[  SKIPPED ]" in out:
        return 0
    ok = "[0] PE OK rank 0" in out and "kernel_left_after_s=" in out
    print("gpu-kill-wait:", "passed" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
