"""Every one-sided call of the Python API on host-memory PEs; run by test_python_api.py under
``gpucomm run -n 4``. Each rank prints ``PY OK rank R`` at the end; a failed check raises with
what it expected and saw."""
from __future__ import annotations

import sys
import threading

import numpy as np

import gpucomm
from gpucomm import Cmp, SignalOp


def expect_error(kind, text, fn, *args):
    try:
        fn(*args)
    except kind as exc:
        assert text in str(exc), f"{fn.__name__}: expected '{text}' in '{exc}'"
        return
    except Exception as exc:  # noqa: BLE001 - the message says which
        raise AssertionError(f"{fn.__name__}: expected {kind.__name__} with '{text}', got {type(exc).__name__}: {exc}")
    raise AssertionError(f"{fn.__name__}: expected {kind.__name__} with '{text}', nothing was raised")


def ring_exchange(rt, rounds: int) -> None:
    """The ring of docs/PYTHON.md: put_signal to the right, wait for the left's signal."""
    me, n = rt.rank, rt.size
    right, left = (me + 1) % n, (me - 1) % n
    inbox = np.from_dlpack(rt.zeros((rounds, 8), "int64"))
    sig = np.from_dlpack(rt.zeros(1, "uint64"))
    rt.barrier_all()
    for r in range(rounds):
        data = np.full(8, 100 * me + r, dtype=np.int64)
        rt.put_signal(inbox[r], data, sig, 1, SignalOp.add, right)
        seen = rt.signal_wait_until(sig, Cmp.ge, r + 1)
        assert seen >= r + 1, seen
        assert (inbox[r] == 100 * left + r).all(), (r, inbox[r])
    rt.barrier_all()


def signals_and_waits(rt) -> None:
    me, n = rt.rank, rt.size
    right, left = (me + 1) % n, (me - 1) % n
    words = np.from_dlpack(rt.zeros(4, "uint64"))
    ints = np.from_dlpack(rt.zeros(2, "int32"))
    rt.barrier_all()
    rt.signal(words[0:1], 5, "set", right)
    assert rt.wait_until(words[0:1], ">=", 5) == 5
    assert rt.signal_fetch(words[0:1]) == 5
    assert rt.test(words[0:1], Cmp.eq, 5) and not rt.test(words[0:1], "gt", 5)
    rt.signal(words[1:2], 2, SignalOp.add, right)
    rt.signal(words[1:2], 3, "add", right)
    assert rt.signal_wait_until(words[1:2], "eq", 5) == 5
    # p, g and fence on int32 words; a negative value where the word is signed.
    rt.p(ints[0:1], -7 - me, right)
    rt.fence()
    rt.p(ints[1:2], 1, right)
    rt.wait_until(ints[1:2], Cmp.eq, 1)
    assert ints[0] == -7 - left, ints
    assert rt.g(ints[0:1], right) == -7 - me
    floats = np.from_dlpack(rt.zeros(1, "float64"))
    rt.barrier_all()
    rt.p(floats, 0.5 + me, right)
    rt.barrier_all()
    assert floats[0] == 0.5 + left and rt.g(floats, left) == 0.5 + (left - 1) % n
    rt.barrier_all()


def atomics(rt) -> None:
    me, n = rt.rank, rt.size
    for dtype in ("int32", "uint32", "int64", "uint64"):
        w = np.from_dlpack(rt.zeros(2, dtype))
        rt.barrier_all()
        rt.atomic_add(w[0:1], 2, 0)
        rt.atomic_inc(w[0:1], 0)
        old = rt.atomic_fetch_add(w[0:1], 1, 0)
        assert 0 <= old < 5 * n, (dtype, old)
        rt.atomic_fetch_inc(w[0:1], 0)
        rt.barrier_all()
        assert rt.atomic_fetch(w[0:1], 0) == 5 * n, (dtype, rt.atomic_fetch(w[0:1], 0))
        rt.barrier_all()
        if me == 0:
            rt.atomic_set(w[1:2], 12, n - 1)
            assert rt.atomic_swap(w[1:2], 10, n - 1) == 12
            assert rt.atomic_compare_swap(w[1:2], 3, 99, n - 1) == 10  # no swap
            assert rt.atomic_compare_swap(w[1:2], 10, 6, n - 1) == 10  # swap
            assert rt.atomic_fetch_and(w[1:2], 0b0100, n - 1) == 6
            assert rt.atomic_fetch_or(w[1:2], 0b0011, n - 1) == 4
            assert rt.atomic_fetch_xor(w[1:2], 0b0001, n - 1) == 7
            assert rt.atomic_fetch(w[1:2], n - 1) == 6
        rt.barrier_all()
    big = np.from_dlpack(rt.zeros(1, "uint64"))
    rt.barrier_all()
    if me == 0:
        assert rt.atomic_fetch_add(big, 2**64 - 1, 1) == 0
        assert rt.atomic_fetch(big, 1) == 2**64 - 1
    rt.barrier_all()


def teams(rt) -> None:
    me, n = rt.rank, rt.size
    w = rt.world
    assert w and w.size == n and w.rank == me and w.members == list(range(n)) and len(w) == n
    assert rt.node.size == n  # every PE of this job is on this host
    evens = rt.split(w, me % 2, key=-me)  # ordered by key: the highest rank first
    mine = [r for r in range(n) if r % 2 == me % 2]
    assert evens.members == sorted(mine, reverse=True), evens.members
    assert evens.world_rank(evens.rank) == me and evens.team_rank(me) == evens.rank
    assert evens.team_rank((me + 1) % n) == -1
    rt.barrier(evens)
    none = rt.split(w, -1 if me == 0 else 0, 0)
    if me == 0:
        assert not none and not none.valid and "invalid" in repr(none)
        expect_error(ValueError, "not valid", rt.barrier, none)
    else:
        assert none.size == n - 1
        rt.barrier(none)
    del evens, none
    rt.barrier(w)


def peer_views(rt) -> None:
    me, n = rt.rank, rt.size
    right = (me + 1) % n
    a = np.from_dlpack(rt.zeros((3, 4), "float32"))
    view = rt.peer_view(a, right)
    assert isinstance(view, np.ndarray) and view.shape == (3, 4) and view.dtype == np.float32, type(view)
    rt.barrier_all()
    view[1, :] = me + 0.25  # a direct store into the right neighbour's copy
    rt.barrier_all()
    assert (a[1] == (me - 1) % n + 0.25).all() and not a[0].any(), a
    raw = rt.peer_view(rt.zeros(2, "int16"), right)  # a DLPack array: any framework imports it
    assert np.from_dlpack(raw).shape == (2,)
    rt.barrier_all()


def errors(rt) -> None:
    me, n = rt.rank, rt.size
    sig = np.from_dlpack(rt.zeros(2, "uint64"))
    i32 = np.from_dlpack(rt.zeros(1, "int32"))
    f32 = np.from_dlpack(rt.zeros(1, "float32"))
    rt.barrier_all()
    expect_error(ValueError, "must be one element", rt.signal, sig, 1, "set", me)
    expect_error(TypeError, "sig must be uint64", rt.signal, i32, 1, "set", me)
    expect_error(ValueError, "not a symmetric array", rt.signal, np.zeros(1, np.uint64), 1, "set", me)
    expect_error(TypeError, "must be an array", rt.signal, 3, 1, "set", me)
    expect_error(ValueError, "'mul' is not 'set' or 'add'", rt.signal, sig[0:1], 1, "mul", me)
    expect_error(ValueError, "'~' is not one of", rt.wait_until, sig[0:1], "~", 1)
    expect_error(OverflowError, "does not fit the word's type uint64", rt.signal, sig[0:1], -1, "set", me)
    expect_error(OverflowError, "does not fit the word's type int32", rt.atomic_add, i32, 2**31, me)
    expect_error(TypeError, "must be an integer", rt.atomic_add, i32, 1.5, me)
    expect_error(TypeError, "must be an int32, uint32, int64 or uint64 element, got float32", rt.atomic_add, f32, 1, me)
    expect_error(ValueError, "not contiguous", rt.peer_view, np.from_dlpack(rt.zeros((2, 2), "int32"))[:, 0], me)
    # A non-contiguous destination is refused, never filled through a copy the caller cannot see.
    expect_error(ValueError, "get: dst is not contiguous", rt.get, np.zeros((2, 2), np.int32)[:, 0], i32[0:1], me)
    expect_error(ValueError, "differ in size", rt.put, sig, np.zeros(3, np.uint64), me)
    expect_error(Exception, "GPU PEs only", rt.put_on_stream, sig[0:1], np.zeros(1, np.uint64), me)
    expect_error(Exception, "GPU PEs only", rt.signal_on_stream, sig[0:1], 1, "set", me)
    expect_error(Exception, "GPU PEs only", rt.barrier_on_stream)
    expect_error(Exception, "stream", getattr, rt, "stream")
    rt.check_device()  # nothing recorded on host PEs
    expect_error(Exception, "pe", rt.signal, sig[0:1], 1, "set", n)  # a PE outside the job
    rt.barrier_all()


def gil_released_while_waiting(rt) -> None:
    """A thread runs Python while the main thread waits in wait_until."""
    me, n = rt.rank, rt.size
    sig = np.from_dlpack(rt.zeros(1, "uint64"))
    rt.barrier_all()
    ticks = []
    done = threading.Event()

    def count():
        while not done.is_set():
            ticks.append(1)
            done.wait(0.001)

    t = threading.Thread(target=count)
    t.start()
    if me == 0:
        done.wait(0.2)
        for pe in range(n):
            rt.signal(sig, 1, "set", pe)
    rt.wait_until(sig, "ge", 1)
    done.set()
    t.join()
    if me != 0:
        assert len(ticks) > 10, f"the waiting call held the GIL ({len(ticks)} ticks)"
    rt.barrier_all()


def main() -> None:
    with gpucomm.Runtime() as rt:
        assert rt.pe_kind == "host", rt.pe_kind
        ring_exchange(rt, 20)
        signals_and_waits(rt)
        atomics(rt)
        teams(rt)
        peer_views(rt)
        errors(rt)
        gil_released_while_waiting(rt)
        print(f"PY OK rank {rt.rank}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
