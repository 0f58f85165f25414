"""The exceptions gpucomm raises, one hierarchy under :class:`gpucomm.Error`.

Every failure of the C++ library (``gpucomm::Error``) reaches Python as one of these classes,
from every layer, chosen by its code::

    gpucomm.Error (RuntimeError)          every gpucomm failure; ``code`` says which kind
        gpucomm.TimeoutError              a blocking wait ran past GPUCOMM_TIMEOUT (also a builtins.TimeoutError)
        gpucomm.PeerFailureError          the job failed elsewhere: another PE died or aborted, the store or the
                                          launcher vanished; the message names the PE that failed first
        gpucomm.AbortError                this PE's runtime was aborted (Runtime.abort, an interrupted wait)
        gpucomm.InvalidArgumentError      a bad argument, named in the message (also a ValueError)

Protocol, system, CUDA, unsupported, out-of-memory and internal errors raise :class:`Error`
itself. Every instance carries ``code`` (e.g. ``"timeout"``), ``call`` (the operation),
``detail`` (what went wrong) and ``rank`` (the PE that raised it, -1 before it knew).
"""
from __future__ import annotations

import builtins

__all__ = ["Error", "TimeoutError", "PeerFailureError", "AbortError", "InvalidArgumentError", "class_for"]


class Error(RuntimeError):
    """A gpucomm failure. ``code``, ``call``, ``detail`` and ``rank`` describe it."""

    code = "internal"

    def __init__(self, message: str = "", *, code: str | None = None, call: str = "", detail: str = "",
                 rank: int = -1):
        super().__init__(message)
        if code is not None:
            self.code = code
        self.call = call
        self.detail = detail or message
        self.rank = rank


class TimeoutError(Error, builtins.TimeoutError):  # noqa: A001 - gpucomm.TimeoutError on purpose
    """A blocking wait ran past its limit (GPUCOMM_TIMEOUT); the message says who waited for what."""

    code = "timeout"


class PeerFailureError(Error):
    """The job failed elsewhere (a PE died or aborted, the store or the launcher vanished)."""

    code = "peer_failure"


class AbortError(Error):
    """This PE's runtime was aborted (Runtime.abort, or a signal interrupted a wait)."""

    code = "aborted"


class InvalidArgumentError(Error, ValueError):
    """A bad argument; the message names it."""

    code = "invalid_argument"


_BY_CODE = {c.code: c for c in (TimeoutError, PeerFailureError, AbortError, InvalidArgumentError)}


def class_for(code: str) -> type[Error]:
    """The exception class for a C++ error code name (``Error`` for codes without a class of their own)."""
    return _BY_CODE.get(code, Error)
