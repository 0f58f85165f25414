"""A Python PE for tests/reliability/test_python_api.py: `py_pe.py MODE`. Prints one line per
finding ("PY ...") and exits 0 when the mode's expectations held."""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

import numpy as np

import gpucomm

mode = sys.argv[1]
rank = int(os.environ.get("GPUCOMM_RANK", "0"))


def say(text: str) -> None:
    print(f"PY {text}", flush=True)


def wait_failed(rt, seconds: float = 10.0) -> float:
    start = time.monotonic()
    while not rt.failed and time.monotonic() - start < seconds:
        time.sleep(0.001)
    return time.monotonic() - start


def barrier_fails(rt) -> None:
    """A barrier the failed PE never joins: exits 0 once it raised PeerFailureError, saying when."""
    start = time.monotonic()
    try:
        rt.barrier_all()
    except gpucomm.PeerFailureError as e:
        say(f"rank {rank} PeerFailureError after {time.monotonic() - start:.3f} s: {e}")
        sys.exit(0)
    sys.exit(3)


if mode == "exception-in-with":
    # Rank 1 raises inside the block: the block aborts, the others' barrier raises at once. A slow
    # PE may still be in the first barrier when rank 1 leaves it and aborts: that one fails then.
    try:
        with gpucomm.Runtime() as rt:
            start = time.monotonic()
            rt.barrier_all()
            if rank == 1:
                raise ValueError("injected on rank 1")
            start = time.monotonic()
            rt.barrier_all()
        sys.exit(3)
    except ValueError:
        sys.exit(1)
    except gpucomm.PeerFailureError as e:
        say(f"rank {rank} PeerFailureError after {time.monotonic() - start:.3f} s: {e}")
        sys.exit(0)

if mode == "interrupt":
    # Rank 0 blocks in barrier_all (rank 1 never comes); a SIGINT must raise KeyboardInterrupt within
    # a second while another Python thread keeps running (the lock is released).
    # Python leaves SIGINT ignored when it was ignored at start (a job started in the background
    # of a non-interactive shell): install the default handler, which raises KeyboardInterrupt.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with gpucomm.Runtime() as rt:
        rt.barrier_all()
        if rank == 1:
            say(f"rank 1 failed after {wait_failed(rt, 30):.3f} s: {rt.failed}")
            sys.exit(0)
        ticks = [0]
        stop = threading.Event()

        def tick():
            while not stop.is_set():
                ticks[0] += 1
                time.sleep(0.001)

        t = threading.Thread(target=tick, daemon=True)
        t.start()
        threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        start = time.monotonic()
        try:
            rt.barrier_all()
        except KeyboardInterrupt:
            took = time.monotonic() - start
            stop.set()
            say(f"rank 0 KeyboardInterrupt after {took:.3f} s, other thread ticked {ticks[0]} times")
            sys.exit(0 if took < 2.5 and ticks[0] > 100 else 3)
    sys.exit(3)

if mode == "caught-timeout-resync":
    # Rank 0's own wait times out (0.5 s) and the program catches it; then every PE passes a
    # barrier: the job is in step again, so closing the runtime finalizes instead of aborting.
    if rank == 0:
        os.environ["GPUCOMM_TIMEOUT"] = "0.5"
    with gpucomm.Runtime() as rt:
        w = rt.zeros((1,), "uint64")
        rt.barrier_all()
        if rank == 0:
            try:
                rt.wait_until(w, "eq", 1)  # nobody signals it
                sys.exit(3)
            except gpucomm.TimeoutError as e:
                say(f"rank 0 caught TimeoutError: {e}")
        rt.barrier_all()
        say(f"rank {rank} in step again, failed={rt.failed}")
    sys.exit(0)

if mode == "arrays":
    rt = gpucomm.Runtime()
    a = rt.zeros((4, 8), "int64")
    view = np.from_dlpack(a)
    view[:] = rank + 1
    rt.barrier_all()
    errors = []
    for args, cls in ((((1 << 40, 1 << 40), "float64"), gpucomm.InvalidArgumentError),
                      (((-3,), "float32"), gpucomm.InvalidArgumentError),
                      (((4,), "complex512"), gpucomm.InvalidArgumentError)):
        try:
            rt.empty(*args)
            errors.append(f"empty{args} accepted")
        except cls:
            pass
    for pe in (2**31 - 1, -1, rt.size):
        try:
            rt.put(a, np.zeros((4, 8), dtype=np.int64), pe)
            errors.append(f"put to pe {pe} accepted")
        except gpucomm.InvalidArgumentError as e:
            assert isinstance(e, ValueError) and e.code == "invalid_argument" and "pe" in str(e)
    # A view of the next PE's copy (host PEs share memory): it too must outlive close().
    size = rt.size
    peer = np.from_dlpack(rt.peer_view(a, (rank + 1) % size))
    try:
        rt.peer_view(a, rt.size)
        errors.append("peer_view of pe == size accepted")
    except gpucomm.InvalidArgumentError as e:
        assert isinstance(e, ValueError) and "pe" in str(e)
    rt.barrier_all()
    rt.close()
    # After close the arrays keep their memory: reading and writing them must not crash.
    total = int(view.sum()) + int(np.from_dlpack(a).sum())
    view[0, 0] = 7
    peer_total = int(peer[1:].sum())  # rows 1..3 (the peer writes [0, 0] after its close)
    if peer_total != 24 * ((rank + 1) % size + 1):
        errors.append(f"peer view after close sums to {peer_total}")
    try:
        rt.barrier_all()
        errors.append("barrier_all after close accepted")
    except gpucomm.Error:
        pass
    say(f"rank {rank} arrays ok sum {total} errors {errors}")
    sys.exit(0 if not errors and total == 2 * 32 * (rank + 1) else 3)

if mode == "timeout-class":
    # GPUCOMM_TIMEOUT=1: rank 0 waits for rank 1, which sleeps; rank 0 gets gpucomm.TimeoutError.
    with gpucomm.Runtime() as rt:
        rt.barrier_all()
        if rank == 1:
            say(f"rank 1 learned of the failure after {wait_failed(rt, 20):.3f} s")
            sys.exit(0)
        try:
            rt.barrier_all()
        except gpucomm.TimeoutError as e:
            ok = isinstance(e, TimeoutError) and e.code == "timeout" and e.rank == 0
            say(f"rank 0 TimeoutError ({ok}): {e}")
            sys.exit(0 if ok else 3)
    sys.exit(3)

if mode == "abort":
    with gpucomm.Runtime() as rt:
        if rank == 0:
            rt.barrier_all()
            rt.abort("stopping on purpose")
            try:
                rt.barrier_all()
            except gpucomm.AbortError as e:
                say(f"rank 0 AbortError after abort: {e}")
                sys.exit(0)
            sys.exit(3)
        # Rank 0 may pass the first barrier and abort before this PE has seen the last round
        # of it: the failure can then surface in either barrier.
        try:
            rt.barrier_all()
            rt.barrier_all()
        except gpucomm.PeerFailureError as e:
            ok = "rank 0 aborted: stopping on purpose" in str(e)
            say(f"rank {rank} PeerFailureError ({ok}): {e}")
            sys.exit(0 if ok else 3)
    sys.exit(3)

if mode == "uncaught":
    # No `with`: rank 1 dies of an uncaught exception; at exit its runtime aborts the job.
    rt = gpucomm.Runtime()
    rt.barrier_all()
    if rank == 1:
        raise RuntimeError("uncaught on rank 1")
    barrier_fails(rt)

print(f"unknown mode {mode}", file=sys.stderr)
sys.exit(2)
