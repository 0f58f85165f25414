"""Collectives on numpy, torch and cupy arrays (docs/COLLECTIVES.md).

    import gpucomm
    from gpucomm.collectives import Collectives

    with gpucomm.Runtime() as rt, Collectives(rt) as coll:
        coll.allreduce(x)                 # in place; torch/cupy CUDA arrays: on their current stream
        y = coll.allgather(x)             # a new array of the same kind, size * len(x) elements
        s = coll.scan(x)                  # prefix reductions over team ranks (exscan, reduce_scatterv)
        req = coll.iallreduce(x)          # nonblocking, host arrays: req.wait(), req.test()

Device arrays (torch, cupy, symmetric arrays of GPU PEs) go to the stream-ordered host API on the
framework's current stream (``stream=`` overrides it: an int, or an object with ``cuda_stream`` or
``ptr``), so the call is ordered after the framework's earlier work on that stream and returns
before it completes, like NCCL. Host arrays (numpy) on host-memory PEs run at once; on GPU PEs
they are copied to the device and back, and the call waits.
"""
from __future__ import annotations

import functools
import operator
from typing import Any, Callable, Optional, Sequence, Union

from . import _coll_dtypes as _dt
from ._coll_requests import Request, RequestQueue
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


def _size(x: Any, call: str = "", arg: str = "") -> int:
    """Elements of array `x`; anything else is an InvalidArgumentError naming the call's argument."""
    n = getattr(x, "size", None)
    if callable(n) and callable(getattr(x, "numel", None)):  # torch
        return int(x.numel())
    if n is not None and not isinstance(n, bool) and not callable(n):
        try:
            return operator.index(n)
        except TypeError:
            pass
    raise _invalid(call or "call", arg or "array", "must be an array (numpy, torch, cupy, or an object with "
                   f"__dlpack__), got {type(x).__name__}")


def _on_device(x: Any) -> bool:
    """A CUDA array (torch, cupy, gpucomm's device arrays), by its DLPack device (1: the CPU)."""
    where = getattr(x, "__dlpack_device__", None)
    return where is not None and int(where()[0]) != 1


def _argument_error(method: Callable, args: tuple, kwargs: dict, error: TypeError) -> Exception:
    """The InvalidArgumentError for a call the extension refused by its argument types (nanobind's
    "incompatible function arguments"): the first argument whose value does not have the type the
    method's signature names (int or str), with what was given."""
    import inspect
    sig = inspect.signature(method)
    bound = sig.bind(*args, **kwargs)
    for name, p in sig.parameters.items():
        if name not in bound.arguments:
            continue
        value, want = bound.arguments[name], str(p.annotation)
        if want == "int":
            try:
                if not isinstance(value, bool):
                    operator.index(value)
                    continue
            except TypeError:
                pass
            return _invalid(method.__name__, name, f"must be an int, got {type(value).__name__} {value!r}")
        if want == "str" and not isinstance(value, str):
            return _invalid(method.__name__, name, f"must be a str, got {type(value).__name__} {value!r}")
    return _invalid(method.__name__, "arguments", str(error).splitlines()[0])


def _settled(method: Callable) -> Callable:
    """A blocking call first waits for the nonblocking requests made before it (one collective per
    team at a time, in call order). An argument of the wrong type raises InvalidArgumentError
    naming it (checked only when the extension refused the call: nothing on the way of a good one)."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        self._requests.drain()
        try:
            return method(self, *args, **kwargs)
        except TypeError as e:
            if "incompatible function arguments" not in str(e):
                raise
            raise _argument_error(method, (self, *args), kwargs, e) from None
    return call


def _nonblocking(name: str) -> Callable:
    """Collectives.i<name>: <name> as a Request, run after the requests made before it."""
    def start(self, *args, **kwargs) -> Request:
        self._check_host_only("i" + name, args, kwargs)
        return self._requests.submit("i" + name, functools.partial(getattr(self, name), *args, **kwargs))
    start.__name__ = start.__qualname__ = "i" + name
    start.__doc__ = (f"Nonblocking {name}: the same arguments (host arrays only), returns a Request at once; "
                     f"``wait()`` returns what {name} returns or raises its error, ``test()`` says whether it "
                     "has finished. Requests run one at a time in call order.")
    return start


class Collectives:
    """The collectives of a Runtime (collective over the world: every PE creates it, and closes it
    before the Runtime). ``team`` is ``"world"``, ``"node"`` or a ``gpucomm.Team`` this PE belongs to
    (``Runtime.split``; every member of a team calls with it); ``algorithm`` an algorithm name
    (``"auto"``, ``"oneshot"``, ``"oneshot_ll"``, ``"twoshot"``, ``"ring"``, ``"multiring"``,
    ``"hierarchical"``); ``max_ctas`` bounds the CTAs of a call on GPU PEs (0: the default).

    Element types: the reductions take float8, float16, bfloat16, float32, float64, int8, uint8,
    int16, uint16, int32, int64, uint32, uint64, bool, complex64 and complex128; the movement
    operations any type of 1, 2, 4, 8 or 16-byte elements (gpucomm._coll_dtypes says how the types
    the C++ side lacks are carried). bool: sum is or, prod is and (numpy's add and multiply on bool).
    Integers and bool refuse 'avg'; complex refuses min, max and the bitwise operations; each
    refusal names the operation and the type. Types carried through a copy (1-byte elements, and
    the reductions of small integers, bool and complex products) do that copy on the framework's
    current stream: with device arrays, leave ``stream`` unset."""

    def __init__(self, runtime: Any):
        self.runtime = runtime
        self._c = _core().Collectives(runtime)
        self._requests = RequestQueue()

    def close(self) -> None:
        """Collective: waits for the outstanding requests, then frees the team workspaces."""
        self._requests.stop(wait=True)
        self._c.close()

    def __enter__(self) -> "Collectives":
        return self

    def __exit__(self, *exc) -> None:
        # An exception leaving the block fails the job at once (closing is collective and would wait
        # for PEs that may be waiting for this one); otherwise a collective close.
        self._requests.stop(wait=exc[0] is None)
        self._c.__exit__(*exc)

    @_settled
    def barrier(self, team: TeamLike = "world", stream: Any = None) -> None:
        """Every member of the team arrived (earlier puts complete); on GPU PEs ordered on `stream`."""
        self._c.barrier(team, _stream_of(None, stream))

    @_settled
    def allreduce(self, send, recv=None, op: str = "sum", *, team: TeamLike = "world", stream: Any = None,
                  algorithm: str = "auto", max_ctas: int = 0):
        """Reduces `send` over the team into `recv` (default: in place). Returns `recv`. ``op="avg"``
        (floating and complex types only): the sum divided by the team size, the division by the
        array's own framework on its current stream (so no explicit `stream` with device arrays).
        complex ``prod``: an allgather of every member's `send`, multiplied in team-rank order."""
        recv = send if recv is None else recv
        op = _dt.canonical_op(op)
        if _dt.is_native(send) and op != "avg":
            self._c.allreduce(send, recv, op, team, _stream_of(send, stream), algorithm, max_ctas)
            return recv
        if self._complex_product("allreduce", send, recv, op, stream):
            _dt.copy_into(recv, self._fold_all(send, op, team, stream))
            return recv
        return self._reduction("allreduce", send, recv, op, team, stream, True, lambda s, r, o: self._c.allreduce(
            s, r, o, team, _stream_of(s, stream), algorithm, max_ctas))

    @_settled
    def reduce(self, send, recv=None, op: str = "sum", root: int = 0, *, team: TeamLike = "world", stream: Any = None,
               algorithm: str = "auto", max_ctas: int = 0):
        """Reduces `send` into `recv` on team rank `root` (default: in place); the result is defined
        on the root only (the types the C++ side lacks leave other members' `recv` as it is).
        Returns `recv`. ``avg`` and the types of the class docstring as in
        allreduce (complex ``prod``: a gather to the root, multiplied there in team-rank order)."""
        recv = send if recv is None else recv
        op = _dt.canonical_op(op)
        if _dt.is_native(send) and op != "avg":
            self._c.reduce(send, recv, op, root, team, _stream_of(send, stream), algorithm, max_ctas)
            return recv
        rank, n = self._team_rank_size(team)
        self._check_root(root, n, "reduce")
        if self._complex_product("reduce", send, recv, op, stream):
            everything = self.gather(_dt.flat(send), root=root, team=team, stream=stream)
            if rank == root:
                _dt.copy_into(recv, _fold_blocks(everything, _size(send, "reduce", "send"), n, op))
            return recv
        return self._reduction("reduce", send, recv, op, team, stream, rank == root, lambda s, r, o: self._c.reduce(
            s, r, o, root, team, _stream_of(s, stream), algorithm, max_ctas))

    @_settled
    def broadcast(self, x, root: int = 0, *, recv=None, team: TeamLike = "world", stream: Any = None,
                  algorithm: str = "auto", max_ctas: int = 0):
        """The root's `x` into every PE's `recv` (default: `x`, in place). Returns `recv`."""
        recv = x if recv is None else recv
        w = self._wires("broadcast", stream, x, recv)
        self._c.broadcast(w.of(x), w.of(recv), root, team, _stream_of(x, stream), algorithm, max_ctas)
        w.write_back(recv)
        return recv

    @_settled
    def allgather(self, send, recv=None, *, team: TeamLike = "world", stream: Any = None, algorithm: str = "auto",
                  max_ctas: int = 0):
        """Every PE's `send`, in team-rank order. Returns `recv` (default: a new 1-D array)."""
        if recv is None:
            recv = _empty(send, _size(send, "allgather", "send") * self._team_size(team))
        w = self._wires("allgather", stream, send, recv)
        self._c.allgather(w.of(send), w.of(recv), team, _stream_of(send, stream), algorithm, max_ctas)
        w.write_back(recv)
        return recv

    @_settled
    def reduce_scatter(self, send, recv=None, op: str = "sum", *, team: TeamLike = "world", stream: Any = None,
                       algorithm: str = "auto", max_ctas: int = 0):
        """Block `rank` of the reduction of `send`. Returns `recv` (default: a new 1-D array). ``avg``
        and the types of the class docstring as in allreduce (complex ``prod``: an allgather, the
        product in team-rank order, this member's block of it)."""
        if recv is None:
            n = self._team_size(team)
            if _size(send, "reduce_scatter", "send") % n:
                raise ValueError("gpucomm: reduce_scatter: send's size is not a multiple of the team size")
            recv = _empty(send, _size(send) // n)
        op = _dt.canonical_op(op)
        if _dt.is_native(send) and op != "avg":
            self._c.reduce_scatter(send, recv, op, team, _stream_of(send, stream), algorithm, max_ctas)
            return recv
        if self._complex_product("reduce_scatter", send, recv, op, stream):
            rank, c = self._team_rank_size(team)[0], _size(recv, "reduce_scatter", "recv")
            _dt.copy_into(recv, self._fold_all(send, op, team, stream)[rank * c:(rank + 1) * c])
            return recv
        return self._reduction("reduce_scatter", send, recv, op, team, stream, True,
                               lambda s, r, o: self._c.reduce_scatter(s, r, o, team, _stream_of(s, stream), algorithm,
                                                                      max_ctas))

    @_settled
    def alltoall(self, send, recv=None, *, team: TeamLike = "world", stream: Any = None, max_ctas: int = 0):
        """Block j of `send` to team rank j. Returns `recv` (default: a new 1-D array)."""
        if recv is None:
            recv = _empty(send, _size(send, "alltoall", "send"))
        w = self._wires("alltoall", stream, send, recv)
        self._c.alltoall(w.of(send), w.of(recv), team, _stream_of(send, stream), max_ctas)
        w.write_back(recv)
        return recv

    @_settled
    def alltoallv(self, send, send_counts: Sequence[int], send_displs: Sequence[int], recv,
                  recv_counts: Sequence[int], recv_displs: Sequence[int], *, team: TeamLike = "world",
                  stream: Any = None):
        """Counts and displacements in elements, one per team rank. Returns `recv`."""
        w = self._wires("alltoallv", stream, send, recv)
        ws, wr = w.of(send), w.of(recv)
        k = w.factor  # carrier elements per element

        def scaled(v: Sequence[int]) -> list:
            return [int(c) * k for c in v]
        self._c.alltoallv(ws, scaled(send_counts), scaled(send_displs), wr, scaled(recv_counts), scaled(recv_displs),
                          team, _stream_of(send, stream))
        w.write_back(recv)
        return recv

    # ---- built on alltoallv (its natural form: one exchange, counts per pair) ----

    @_settled
    def gather(self, send, recv=None, root: int = 0, *, team: TeamLike = "world", stream: Any = None):
        """Every member's `send` (the same size on every member) into `recv` on team rank `root`, in
        team-rank order. Returns `recv` on the root (default: a new 1-D array), None elsewhere."""
        rank, n = self._team_rank_size(team)
        self._check_root(root, n, "gather")
        c = _size(send, "gather", "send")
        if rank == root and recv is None:
            recv = _empty(send, c * n)
        out = recv if rank == root else _empty(send, 0)
        counts = [0] * n
        counts[root] = c
        self.alltoallv(send, counts, [0] * n, out, [c if rank == root else 0] * n,
                       [j * c for j in range(n)] if rank == root else [0] * n, team=team, stream=stream)
        return recv if rank == root else None

    @_settled
    def scatter(self, send, recv, root: int = 0, *, team: TeamLike = "world", stream: Any = None):
        """Block j of the root's `send` (team size x recv's size elements) into team rank j's `recv`;
        `send` is read on the root only (None elsewhere). Returns `recv`."""
        rank, n = self._team_rank_size(team)
        self._check_root(root, n, "scatter")
        c = _size(recv, "scatter", "recv")
        if rank == root:
            if send is None or _size(send, "scatter", "send") != c * n:
                raise _invalid("scatter", "send", f"on the root it must hold {n} x {c} elements (team size x recv's "
                               f"size), got {None if send is None else _size(send)}")
        src = send if rank == root else _empty(recv, 0)
        counts = [c if rank == root else 0] * n
        recv_counts = [0] * n
        recv_counts[root] = c
        self.alltoallv(src, counts, [j * c for j in range(n)] if rank == root else [0] * n, recv, recv_counts,
                       [0] * n, team=team, stream=stream)
        return recv

    @_settled
    def allgatherv(self, send, counts: Sequence[int], recv=None, *, team: TeamLike = "world", stream: Any = None):
        """Every member's `send` (team rank j contributes counts[j] elements; the same list on every
        member) into `recv`, in team-rank order. Returns `recv` (default: a new 1-D array)."""
        rank, n = self._team_rank_size(team)
        counts = [int(c) for c in counts]
        if len(counts) != n:
            raise _invalid("allgatherv", "counts", f"needs one entry per team rank ({n}), got {len(counts)}")
        if counts[rank] != _size(send, "allgatherv", "send"):
            raise _invalid("allgatherv", "counts", f"entry {rank} (this PE) is {counts[rank]}, send holds "
                           f"{_size(send)} elements")
        displs = [sum(counts[:j]) for j in range(n)]
        if recv is None:
            recv = _empty(send, sum(counts))
        self.alltoallv(send, [_size(send)] * n, [0] * n, recv, counts, displs, team=team, stream=stream)
        return recv

    # ---- prefix reductions and reduce_scatterv (an exchange, then a local fold in team-rank order) ----

    @_settled
    def scan(self, send, recv=None, op: str = "sum", *, team: TeamLike = "world", stream: Any = None):
        """Inclusive prefix reduction (MPI_Scan): team rank r gets send_0 op send_1 op ... op send_r,
        combined left to right in team-rank order by the array's own framework (so exactly what
        numpy computes in that order, for every type; integers wrap). `recv` defaults to `send` (in
        place). Returns `recv`. ``op``: sum, prod, min, max, band, bor, bxor ('avg' is refused).
        Cost: an allgather of every member's whole `send` (team size x len(send) elements
        received and held per member), then r local combinations of len(send) elements."""
        return self._prefix("scan", send, recv, op, team, stream, inclusive=True)

    @_settled
    def exscan(self, send, recv=None, op: str = "sum", *, team: TeamLike = "world", stream: Any = None):
        """Exclusive prefix reduction (MPI_Exscan): team rank r > 0 gets send_0 op ... op send_(r-1);
        on team rank 0 `recv` is left unchanged (MPI leaves it undefined; with the default in-place
        `recv` it keeps rank 0's `send`). Otherwise as scan, including its cost."""
        return self._prefix("exscan", send, recv, op, team, stream, inclusive=False)

    @_settled
    def reduce_scatterv(self, send, counts: Sequence[int], recv=None, op: str = "sum", *, team: TeamLike = "world",
                        stream: Any = None):
        """Team rank r gets the reduction of block r of `send` (counts[r] elements; the blocks lie one
        after the other, so `send` holds sum(counts) elements; the same `counts` on every member).
        Returns `recv` (default: a new 1-D array of counts[r] elements). Every type and operation of
        the class docstring, 'avg' included (floating and complex), combined in team-rank order by
        the array's own framework, so exactly what numpy computes in that order. Cost: one
        alltoallv (each member sends sum(counts) elements and receives team size x counts[r]),
        then team size - 1 local combinations of counts[r] elements."""
        rank, n = self._team_rank_size(team)
        counts = self._check_counts("reduce_scatterv", counts, n, _size(send, "reduce_scatterv", "send"))
        op = _dt.canonical_op(op)
        _dt.check_reduction("reduce_scatterv", op, send, _invalid)
        self._check_local_stream("reduce_scatterv", send, stream)
        mine = counts[rank]
        if recv is None:
            recv = _empty(send, mine)
        elif _size(recv, "reduce_scatterv", "recv") != mine:
            raise _invalid("reduce_scatterv", "recv", f"has {_size(recv)} elements, counts[{rank}] is {mine}")
        _dt.same_dtype("reduce_scatterv", send, recv)
        blocks = _empty(send, mine * n)
        self.alltoallv(_dt.flat(send), counts, [sum(counts[:j]) for j in range(n)], blocks, [mine] * n,
                       [j * mine for j in range(n)], team=team, stream=stream)
        _dt.copy_into(recv, _fold_blocks(blocks, mine, n, op))
        return recv

    # ---- nonblocking forms: Request objects, run one at a time in call order (gpucomm._coll_requests) ----

    ibarrier = _nonblocking("barrier")
    iallreduce = _nonblocking("allreduce")
    ireduce = _nonblocking("reduce")
    ibroadcast = _nonblocking("broadcast")
    iallgather = _nonblocking("allgather")
    ireduce_scatter = _nonblocking("reduce_scatter")
    ialltoall = _nonblocking("alltoall")
    ialltoallv = _nonblocking("alltoallv")
    igather = _nonblocking("gather")
    iscatter = _nonblocking("scatter")
    iallgatherv = _nonblocking("allgatherv")
    iscan = _nonblocking("scan")
    iexscan = _nonblocking("exscan")
    ireduce_scatterv = _nonblocking("reduce_scatterv")

    # ---- helpers ----

    def _reduction(self, call: str, send, recv, op: str, team: TeamLike, stream: Any, defined: bool,
                   native: Callable[[Any, Any, str], None]):
        """A reduction the C++ side does not take as it is: avg, small integers and bool (widened),
        complex sums (as float pairs). `native(send, recv, op)` runs the C++ call; `defined`: this
        member's `recv` receives the result (False off the root of a reduce). Checked by
        _complex_product first."""
        if op == "avg" and stream is not None and _module_of(recv) in ("torch", "cupy"):
            raise _invalid(call, "stream", "average divides on the framework's current stream: leave stream unset "
                           "(or make the stream current)")
        name = _dt.dtype_name(send)
        if name in _dt.SMALL_INTS or name == "bool":
            self._check_local_stream(call, send, stream)
            wide, wide_op = _dt.widening(send, op)
            ws = _dt.widen(send, wide)
            wr = ws if recv is send else _dt.empty_as(send, _size(recv, call, "recv"), wide)
            native(ws, wr, wide_op)
            if defined:
                _dt.narrow_into(recv, wr)
            return recv
        if name in _dt.COMPLEX_PARTS:
            native(_dt.complex_parts(send), _dt.complex_parts(recv), "sum")
        else:
            native(send, recv, "sum" if op == "avg" else op)
        if op == "avg" and defined:
            recv /= self._team_rank_size(team)[1]
        return recv

    def _complex_product(self, call: str, send, recv, op: str, stream: Any) -> bool:
        """Checks a reduction the C++ side does not take as it is; True for a complex product (which
        the caller computes from an allgather or a gather, in team-rank order)."""
        _dt.check_reduction(call, op, send, _invalid)
        _dt.same_dtype(call, send, recv)
        if _dt.dtype_name(send) in _dt.COMPLEX_PARTS and op == "prod":
            self._check_local_stream(call, send, stream)
            return True
        return False

    def _fold_all(self, send, op: str, team: TeamLike, stream: Any):
        """Every member's `send` (allgather), combined in team-rank order: a new 1-D array."""
        n = self._team_size(team)
        return _fold_blocks(self.allgather(_dt.flat(send), team=team, stream=stream), _size(send), n, op)

    def _prefix(self, call: str, send, recv, op: str, team: TeamLike, stream: Any, inclusive: bool):
        recv = send if recv is None else recv
        op = _dt.canonical_op(op)
        if op == "avg":
            raise _invalid(call, "op", f"'avg' is not a prefix reduction (sum, prod, min, max, band, bor, bxor), "
                           f"type {_dt.dtype_name(send)}")
        _dt.check_reduction(call, op, send, _invalid)
        if _size(recv, call, "recv") != _size(send, call, "send"):
            raise _invalid(call, "recv", f"has {_size(recv)} elements, send has {_size(send)}")
        _dt.same_dtype(call, send, recv)
        self._check_local_stream(call, send, stream)
        rank = self._team_rank_size(team)[0]
        everything = self.allgather(_dt.flat(send), team=team, stream=stream)
        upto = rank + 1 if inclusive else rank
        if upto > 0:
            _dt.copy_into(recv, _fold_blocks(everything, _size(send), upto, op))
        return recv

    def _wires(self, call: str, stream: Any, send, recv) -> "_dt.Wires":
        """The carriers of a movement operation (gpucomm._coll_dtypes.Wires)."""
        if not (_dt.is_native(send) and _dt.is_native(recv)):
            _dt.same_dtype(call, send, recv)
            if _dt.itemsize(send) == 1:
                self._check_local_stream(call, send, stream)
        return _dt.Wires(call)

    @staticmethod
    def _check_local_stream(call: str, x: Any, stream: Any) -> None:
        """Calls that also compute or copy locally do so on the framework's current stream."""
        if stream is not None and _on_device(x):
            raise _invalid(call, "stream", f"this call computes or copies on the framework's current stream (dtype "
                           f"{_dt.dtype_name(x)}): leave stream unset (or make the stream current)")

    @staticmethod
    def _check_host_only(call: str, args: tuple, kwargs: dict) -> None:
        """Nonblocking calls take host arrays (device arrays already return before they complete)."""
        if kwargs.get("stream") is not None:
            raise _invalid(call, "stream", "nonblocking calls take host arrays only, with no stream")
        for i, a in enumerate(list(args) + list(kwargs.values())):
            if _on_device(a):
                raise _invalid(call, f"argument {i}", "is a device array: the stream-ordered call already returns "
                               "before it completes; nonblocking calls take host arrays")

    @staticmethod
    def _check_counts(call: str, counts: Sequence[int], n: int, total: int) -> list:
        try:
            counts = [c for c in counts]
        except TypeError:
            raise _invalid(call, "counts", f"must be a sequence of {n} element counts, got {counts!r}") from None
        if len(counts) != n:
            raise _invalid(call, "counts", f"needs one entry per team rank ({n}), got {len(counts)}")
        for j, c in enumerate(counts):
            try:
                counts[j] = operator.index(c)
            except TypeError:
                counts[j] = -1
            if isinstance(c, bool) or counts[j] < 0:
                raise _invalid(call, "counts", f"entry {j} must be a count of elements (an int >= 0), got {c!r}")
        if sum(counts) != total:
            raise _invalid(call, "counts", f"adds up to {sum(counts)}, send holds {total} elements")
        return counts

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


def _fold_blocks(everything, c: int, upto: int, op: str):
    """The first `upto` blocks of `c` elements of `everything`, combined left to right (avg: the sum
    divided by `upto`)."""
    return _dt.fold([everything[j * c:(j + 1) * c] for j in range(upto)], op, upto)


def collectives(runtime: Optional[Any] = None) -> Collectives:
    """Collectives of `runtime` (default: the current Runtime)."""
    return Collectives(runtime if runtime is not None else _core().Runtime.current())
