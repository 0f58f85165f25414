"""Collectives on numpy, torch and cupy arrays (docs/COLLECTIVES.md).

    import gpucomm
    from gpucomm.collectives import Collectives

    with gpucomm.Runtime() as rt, Collectives(rt) as coll:
        coll.allreduce(x)                 # in place; torch/cupy CUDA arrays: on their current stream
        y = coll.allgather(x)             # a new array of the same kind, size * len(x) elements

Device arrays (torch, cupy, symmetric arrays of GPU PEs) go to the stream-ordered host API on the
framework's current stream (``stream=`` overrides it: an int, or an object with ``cuda_stream`` or
``ptr``), so the call is ordered after the framework's earlier work on that stream and returns
before it completes, like NCCL. Host arrays (numpy) on host-memory PEs run at once; on GPU PEs
they are copied to the device and back, and the call waits.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from .arrays import stream_for

# "world", "node" or a gpucomm.Team (Runtime.split).
TeamLike = Union[str, Any]


def _core():
    from . import _load_core
    return _load_core()


def _module_of(x: Any) -> str:
    return type(x).__module__.split(".")[0]


def _stream_of(x: Any, stream: Any) -> int:
    """The CUDA stream (as an int) the call goes on: the given one, else the framework's current one
    (gpucomm.arrays.stream_for: a framework's default stream is named as cudaStreamLegacy)."""
    return stream_for([x], stream, 0)


def _empty(x: Any, n: int) -> Any:
    """A new 1-D array of `n` elements of x's dtype, on x's device, from x's framework."""
    mod = _module_of(x)
    if mod == "torch":
        import torch
        return torch.empty(n, dtype=x.dtype, device=x.device)
    if mod == "cupy":
        import cupy
        return cupy.empty(n, dtype=x.dtype)
    import numpy as np
    return np.empty(n, dtype=x.dtype)


def _invalid(call: str, arg: str, why: str) -> Exception:
    """The InvalidArgumentError gpucomm raises for a bad argument, naming the call and the argument."""
    from .errors import InvalidArgumentError
    return InvalidArgumentError(f"gpucomm: Collectives.{call}: argument '{arg}': {why}")


def _is_floating(x: Any) -> bool:
    if _module_of(x) == "torch":
        return bool(x.is_floating_point())
    kind = getattr(getattr(x, "dtype", None), "kind", "")
    return kind == "f" or "float" in str(getattr(x, "dtype", ""))


def _size(x: Any) -> int:
    n = getattr(x, "size", None)
    if callable(n):  # torch
        return int(x.numel())
    return int(n)


class Collectives:
    """The collectives of a Runtime (collective over the world: every PE creates it, and closes it
    before the Runtime). ``team`` is ``"world"``, ``"node"`` or a ``gpucomm.Team`` this PE belongs to
    (``Runtime.split``; every member of a team calls with it); ``algorithm`` an algorithm name
    (``"auto"``, ``"oneshot"``, ``"oneshot_ll"``, ``"twoshot"``, ``"ring"``, ``"multiring"``,
    ``"hierarchical"``); ``max_ctas`` bounds the CTAs of a call on GPU PEs (0: the default)."""

    def __init__(self, runtime: Any):
        self.runtime = runtime
        self._c = _core().Collectives(runtime)

    def close(self) -> None:
        """Collective: frees the team workspaces."""
        self._c.close()

    def __enter__(self) -> "Collectives":
        return self

    def __exit__(self, *exc) -> None:
        # An exception leaving the block fails the job at once (closing is collective and would wait
        # for PEs that may be waiting for this one); otherwise a collective close.
        self._c.__exit__(*exc)

    def barrier(self, team: TeamLike = "world", stream: Any = None) -> None:
        """Every member of the team arrived (earlier puts complete); on GPU PEs ordered on `stream`."""
        self._c.barrier(team, _stream_of(None, stream))

    def allreduce(self, send, recv=None, op: str = "sum", *, team: TeamLike = "world", stream: Any = None,
                  algorithm: str = "auto", max_ctas: int = 0):
        """Reduces `send` over the team into `recv` (default: in place). Returns `recv`. ``op="avg"``
        (floating types only): the sum divided by the team size, the division by the array's own
        framework on its current stream (so no explicit `stream` with device arrays)."""
        recv = send if recv is None else recv
        if op in ("avg", "average"):
            if not _is_floating(send):
                raise _invalid("allreduce", "op", f"average needs a floating type, got {getattr(send, 'dtype', '?')}")
            if stream is not None and _module_of(recv) in ("torch", "cupy"):
                raise _invalid("allreduce", "stream", "average divides on the framework's current stream: leave "
                               "stream unset (or make the stream current)")
            self._c.allreduce(send, recv, "sum", team, _stream_of(send, stream), algorithm, max_ctas)
            recv /= self._team_rank_size(team)[1]
            return recv
        self._c.allreduce(send, recv, op, team, _stream_of(send, stream), algorithm, max_ctas)
        return recv

    def reduce(self, send, recv=None, op: str = "sum", root: int = 0, *, team: TeamLike = "world", stream: Any = None,
               algorithm: str = "auto", max_ctas: int = 0):
        """Reduces `send` into `recv` on team rank `root` (default: in place). Returns `recv`."""
        recv = send if recv is None else recv
        self._c.reduce(send, recv, op, root, team, _stream_of(send, stream), algorithm, max_ctas)
        return recv

    def broadcast(self, x, root: int = 0, *, recv=None, team: TeamLike = "world", stream: Any = None,
                  algorithm: str = "auto", max_ctas: int = 0):
        """The root's `x` into every PE's `recv` (default: `x`, in place). Returns `recv`."""
        recv = x if recv is None else recv
        self._c.broadcast(x, recv, root, team, _stream_of(x, stream), algorithm, max_ctas)
        return recv

    def allgather(self, send, recv=None, *, team: TeamLike = "world", stream: Any = None, algorithm: str = "auto",
                  max_ctas: int = 0):
        """Every PE's `send`, in team-rank order. Returns `recv` (default: a new 1-D array)."""
        if recv is None:
            recv = _empty(send, _size(send) * self._team_size(team))
        self._c.allgather(send, recv, team, _stream_of(send, stream), algorithm, max_ctas)
        return recv

    def reduce_scatter(self, send, recv=None, op: str = "sum", *, team: TeamLike = "world", stream: Any = None,
                       algorithm: str = "auto", max_ctas: int = 0):
        """Block `rank` of the reduction of `send`. Returns `recv` (default: a new 1-D array)."""
        if recv is None:
            n = self._team_size(team)
            if _size(send) % n:
                raise ValueError("gpucomm: reduce_scatter: send's size is not a multiple of the team size")
            recv = _empty(send, _size(send) // n)
        self._c.reduce_scatter(send, recv, op, team, _stream_of(send, stream), algorithm, max_ctas)
        return recv

    def alltoall(self, send, recv=None, *, team: TeamLike = "world", stream: Any = None, max_ctas: int = 0):
        """Block j of `send` to team rank j. Returns `recv` (default: a new 1-D array)."""
        if recv is None:
            recv = _empty(send, _size(send))
        self._c.alltoall(send, recv, team, _stream_of(send, stream), max_ctas)
        return recv

    def alltoallv(self, send, send_counts: Sequence[int], send_displs: Sequence[int], recv,
                  recv_counts: Sequence[int], recv_displs: Sequence[int], *, team: TeamLike = "world",
                  stream: Any = None):
        """Counts and displacements in elements, one per team rank. Returns `recv`."""
        self._c.alltoallv(send, list(send_counts), list(send_displs), recv, list(recv_counts), list(recv_displs),
                          team, _stream_of(send, stream))
        return recv

    # ---- built on alltoallv (its natural form: one exchange, counts per pair) ----

    def gather(self, send, recv=None, root: int = 0, *, team: TeamLike = "world", stream: Any = None):
        """Every member's `send` (the same size on every member) into `recv` on team rank `root`, in
        team-rank order. Returns `recv` on the root (default: a new 1-D array), None elsewhere."""
        rank, n = self._team_rank_size(team)
        self._check_root(root, n, "gather")
        c = _size(send)
        if rank == root and recv is None:
            recv = _empty(send, c * n)
        out = recv if rank == root else _empty(send, 0)
        counts = [0] * n
        counts[root] = c
        self.alltoallv(send, counts, [0] * n, out, [c if rank == root else 0] * n,
                       [j * c for j in range(n)] if rank == root else [0] * n, team=team, stream=stream)
        return recv if rank == root else None

    def scatter(self, send, recv, root: int = 0, *, team: TeamLike = "world", stream: Any = None):
        """Block j of the root's `send` (team size x recv's size elements) into team rank j's `recv`;
        `send` is read on the root only (None elsewhere). Returns `recv`."""
        rank, n = self._team_rank_size(team)
        self._check_root(root, n, "scatter")
        c = _size(recv)
        if rank == root:
            if send is None or _size(send) != c * n:
                raise _invalid("scatter", "send", f"on the root it must hold {n} x {c} elements (team size x recv's "
                               f"size), got {None if send is None else _size(send)}")
        src = send if rank == root else _empty(recv, 0)
        counts = [c if rank == root else 0] * n
        recv_counts = [0] * n
        recv_counts[root] = c
        self.alltoallv(src, counts, [j * c for j in range(n)] if rank == root else [0] * n, recv, recv_counts,
                       [0] * n, team=team, stream=stream)
        return recv

    def allgatherv(self, send, counts: Sequence[int], recv=None, *, team: TeamLike = "world", stream: Any = None):
        """Every member's `send` (team rank j contributes counts[j] elements; the same list on every
        member) into `recv`, in team-rank order. Returns `recv` (default: a new 1-D array)."""
        rank, n = self._team_rank_size(team)
        counts = [int(c) for c in counts]
        if len(counts) != n:
            raise _invalid("allgatherv", "counts", f"needs one entry per team rank ({n}), got {len(counts)}")
        if counts[rank] != _size(send):
            raise _invalid("allgatherv", "counts", f"entry {rank} (this PE) is {counts[rank]}, send holds "
                           f"{_size(send)} elements")
        displs = [sum(counts[:j]) for j in range(n)]
        if recv is None:
            recv = _empty(send, sum(counts))
        self.alltoallv(send, [_size(send)] * n, [0] * n, recv, counts, displs, team=team, stream=stream)
        return recv

    def _team_rank_size(self, team: TeamLike) -> tuple[int, int]:
        if isinstance(team, str):
            if team == "node":
                return self.runtime.local_rank, self.runtime.local_size
            if team == "world":
                return self.runtime.rank, self.runtime.size
            raise _invalid("Collectives", "team", f"must be 'world', 'node' or a gpucomm.Team, not {team!r}")
        return team.rank, len(team)

    @staticmethod
    def _check_root(root: int, n: int, call: str) -> None:
        if isinstance(root, bool) or not isinstance(root, int) or not 0 <= root < n:
            raise _invalid(call, "root", f"must be a team rank from 0 to {n - 1}, got {root!r}")

    def plan(self, op: str, dtype: str, nbytes: int, team: TeamLike = "world", max_ctas: int = 0) -> dict:
        """What a call would run: {"algorithm", "channels", "why"}."""
        return self._c.plan(op, dtype, nbytes, team, max_ctas)

    def check_device(self) -> None:
        """GPU PEs: raises the failure a collective's kernel left (after a synchronization failed)."""
        self._c.check_device()

    def _team_size(self, team: TeamLike) -> int:
        if isinstance(team, str):
            return self.runtime.size if team == "world" else self.runtime.local_size
        return len(team)


def collectives(runtime: Optional[Any] = None) -> Collectives:
    """Collectives of `runtime` (default: the current Runtime)."""
    return Collectives(runtime if runtime is not None else _core().Runtime.current())
