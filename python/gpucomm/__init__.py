"""gpucomm: GPU-centric communication.

The host API comes from the compiled extension ``gpucomm._core``; the command-line front
(``gpucomm``) and the launcher are pure Python and work without it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

from .errors import AbortError, Error, InvalidArgumentError, PeerFailureError, TimeoutError  # noqa: A004,F401
# The C++ package inside an installed wheel: CMAKE_PREFIX_PATH=gpucomm.cmake_prefix_path makes
# find_package(gpucomm) work (also `python -m gpucomm --cmake-prefix-path` / `--cmake-dir`).
from gpucomm._sdk import cmake_prefix_path, get_cmake_dir, get_include  # noqa: E402,F401


if TYPE_CHECKING:  # the names __getattr__ hands out, for type checkers (python/gpucomm/_core.pyi)
    from gpucomm._core import (Cmp, Runtime, SignalOp, Team, cuda_device_count, env_variables,  # noqa: F401
                               topology_json, topology_text)


def _load_core():
    """Imports the compiled extension with a clear message when it is missing."""
    import importlib
    try:
        core = importlib.import_module("gpucomm._core")
    except ImportError as exc:  # pragma: no cover - depends on the build
        raise ImportError(
            "gpucomm's compiled extension (gpucomm._core) is not available: build with "
            "`pip install .` or `cmake --preset ci && cmake --build --preset ci` and put "
            "build/<preset>/python on PYTHONPATH") from exc
    return core


def _shape(shape) -> list[int]:
    return [int(shape)] if isinstance(shape, int) else [int(s) for s in shape]


def empty(shape, dtype="float32"):
    """Collective: a symmetric array of the current Runtime (DLPack: ``numpy.from_dlpack``,
    ``torch.from_dlpack``, ``cupy.from_dlpack``); device memory on GPU PEs."""
    return _load_core().Runtime.current().empty(_shape(shape), dtype)


def zeros(shape, dtype="float32"):
    """Collective: like :func:`empty`, filled with zeros."""
    return _load_core().Runtime.current().zeros(_shape(shape), dtype)


def __getattr__(name: str):
    # Lazy access to the extension's API: gpucomm.Runtime, gpucomm.topology(), ...
    if name.startswith("__") or name == "_core":
        raise AttributeError(name)
    core = _load_core()
    try:
        return getattr(core, name)
    except AttributeError:
        raise AttributeError(f"module 'gpucomm' has no attribute '{name}'") from None
