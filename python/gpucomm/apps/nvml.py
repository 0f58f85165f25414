"""GPU energy and power from NVML, through the driver's own library (libnvidia-ml.so.1) with ctypes:
no Python package needed, so it works on any machine with an NVIDIA driver."""
from __future__ import annotations

import ctypes
import ctypes.util


class NvmlError(RuntimeError):
    """NVML is missing or a call failed; the message names the call."""


class Nvml:
    """The GPUs NVML sees, their total-energy counters (mJ since the driver loaded) and power (mW)."""

    def __init__(self) -> None:
        name = ctypes.util.find_library("nvidia-ml") or "libnvidia-ml.so.1"
        try:
            self._lib = ctypes.CDLL(name)
        except OSError as exc:
            raise NvmlError(f"no NVML ({name} not found: {exc}); GPU energy needs an NVIDIA driver") from exc
        self._lib.nvmlErrorString.restype = ctypes.c_char_p
        self._call("nvmlInit_v2")
        count = ctypes.c_uint(0)
        self._call("nvmlDeviceGetCount_v2", ctypes.byref(count))
        self.handles = []
        for i in range(count.value):
            h = ctypes.c_void_p()
            self._call("nvmlDeviceGetHandleByIndex_v2", ctypes.c_uint(i), ctypes.byref(h))
            self.handles.append(h)

    def _call(self, fn: str, *args) -> None:
        rc = getattr(self._lib, fn)(*args)
        if rc != 0:
            raise NvmlError(f"{fn} failed: {self._lib.nvmlErrorString(rc).decode(errors='replace')} (NVML {rc})")

    def name(self, i: int) -> str:
        buf = ctypes.create_string_buffer(96)
        self._call("nvmlDeviceGetName", self.handles[i], buf, ctypes.c_uint(len(buf)))
        return buf.value.decode(errors="replace")

    def energy_mj(self, i: int) -> int:
        """GPU i's total energy counter, mJ (Volta and later; it steps every few to ~100 ms)."""
        v = ctypes.c_ulonglong(0)
        self._call("nvmlDeviceGetTotalEnergyConsumption", self.handles[i], ctypes.byref(v))
        return v.value

    def power_mw(self, i: int) -> int:
        v = ctypes.c_uint(0)
        self._call("nvmlDeviceGetPowerUsage", self.handles[i], ctypes.byref(v))
        return v.value

    def close(self) -> None:
        self._lib.nvmlShutdown()
