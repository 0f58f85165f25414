"""gpucomm's array adapter: how every gpucomm call takes arrays in, hands arrays out, and orders
its GPU work with the caller's framework. The bindings of every layer (one-sided operations,
messaging, collectives, patterns) use it; its C++ half is python/src/py_arrays.hpp.

In: any array that speaks DLPack or the buffer protocol (numpy, torch, cupy, jax, the arrays
``Runtime.empty`` returns), C-contiguous, taken as it is (never copied: a destination is written
where the caller sees it).

Out: arrays come back in the framework of an input (``like``): a torch tensor for a torch tensor,
a numpy array for a numpy array, a cupy array for a cupy array, otherwise a DLPack array that any
of them imports (``numpy.from_dlpack``, ``torch.from_dlpack``, ``cupy.from_dlpack``).

Streams: a stream-ordered call (``*_on_stream``) runs on ``stream`` when given (an integer handle,
a ``torch.cuda.Stream``, a ``cupy.cuda.Stream``, or anything with ``cuda_stream`` or ``ptr``);
otherwise on torch's current stream of the tensors' device when an argument is a torch tensor
(so it is ordered after the torch work queued before it and before the torch work queued after
it), on cupy's current stream when an argument is a cupy array, and on the runtime's own stream
otherwise. A framework stream whose handle is 0 (torch's and cupy's default stream: the legacy
default stream) becomes ``cudaStreamLegacy`` (handle 1), because the integer 0 given to gpucomm means
the runtime's own stream, which is not ordered with the legacy default stream. Blocking calls given
torch tensors on the GPU (cupy arrays) first wait for torch's (cupy's) current stream, so that they
read the data the queued kernels produce.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

__all__ = ["framework", "like", "stream_for", "stream_handle", "wait_for_producers"]


def framework(obj: Any) -> str:
    """'torch', 'cupy', 'numpy' or 'dlpack' (anything else with __dlpack__ or a buffer)."""
    module = type(obj).__module__ or ""
    for name in ("torch", "cupy", "numpy"):
        if module == name or module.startswith(name + "."):
            return name
    return "dlpack"


def like(raw: Any, template: Any) -> Any:
    """`raw` (a DLPack array gpucomm made) in the framework of `template`."""
    fw = framework(template) if template is not None else "dlpack"
    if fw == "dlpack" or fw not in sys.modules:
        return raw
    return sys.modules[fw].from_dlpack(raw)


# cudaStreamLegacy: the legacy default stream, named explicitly (the integer 0 is the runtime's stream).
LEGACY_DEFAULT_STREAM = 1


def _framework_handle(value: int) -> int:
    return LEGACY_DEFAULT_STREAM if value == 0 else value


def stream_handle(stream: Any) -> int:
    """The CUDA stream handle (cudaStream_t as an integer) of `stream`; a framework stream object for
    the default stream gives cudaStreamLegacy."""
    if isinstance(stream, bool):
        raise TypeError("gpucomm: stream must be a CUDA stream or its handle, got a bool")
    if isinstance(stream, int):
        if stream < 0:
            raise ValueError(f"gpucomm: stream handle {stream} is negative")
        return stream
    for attr in ("cuda_stream", "ptr"):
        value = getattr(stream, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return _framework_handle(value)
    raise TypeError(f"gpucomm: stream must be an integer handle, a torch.cuda.Stream or a cupy.cuda.Stream, "
                    f"got {type(stream).__qualname__}")


def _torch_device(arrays: Iterable[Any]):
    for a in arrays:
        if framework(a) == "torch" and getattr(a, "is_cuda", False):
            return a.device
    return None


def stream_for(arrays: Iterable[Any], stream: Any = None, fallback: int = 0) -> int:
    """The stream a stream-ordered call on `arrays` runs on (see the module's description)."""
    if stream is not None:
        return stream_handle(stream)
    arrays = list(arrays)
    device = _torch_device(arrays)
    if device is not None:
        import torch
        return _framework_handle(int(torch.cuda.current_stream(device).cuda_stream))
    if any(framework(a) == "cupy" for a in arrays):
        import cupy
        return _framework_handle(int(cupy.cuda.get_current_stream().ptr))
    return fallback


def wait_for_producers(arrays: Iterable[Any]) -> None:
    """Waits until the work torch (cupy) queued on its current stream for `arrays` is done."""
    arrays = list(arrays)
    device = _torch_device(arrays)
    if device is not None:
        import torch
        torch.cuda.current_stream(device).synchronize()
    if any(framework(a) == "cupy" for a in arrays):
        import cupy
        cupy.cuda.get_current_stream().synchronize()
